"""vLLM V2's decode loop (CONTRACT.md §17, §18.2, §18.3) as a state machine for
``test_serving.py``, on :class:`simacc.properties.serving.ServingLoop`'s rules.

A program starts an engine with knobs drawn once (:func:`simacc.strategies.serving.v2_engines`:
which requests sample, ``K``, the synthetic acceptance length, capacity, seed), then runs
scheduler iterations. A request that joins gets a seed of its own, drawn once (from the whole
int64 range, as V2 draws one for a request without a user seed), and a first position (its
prompt's length); each step it drafts up to ``K`` tokens (some placeholders), verified by
logits at its positions ``p .. p + n``, and after the step its position advances by the
tokens it emitted, as V2's model runner advances ``num_computed_tokens``
(``vllm/v1/worker/gpu/input_batch.py``). So a request seeded once draws from new
``(seed, position)`` pairs at every step, and an implementation must give it fresh uniforms
there (§17.3: a function of the seed and the position alone; §18.2: independent across
steps).

Each step is held to the single-call rules of the tokens (:data:`simacc.properties.vllm.RULES`);
every result is held as a caller holds it (:func:`simacc.properties.support.held`), its defined
entries (``sampled`` up to ``num_sampled``, §17.2) still intact after every later step, and no
new result shares storage with a held one. A quiet engine's ``burst`` runs :data:`BURST` steps
with the batch unchanged, each request drafting the same ``K`` real tokens, verified by the
same logits, at every step; a request's accepted counts at steps ``2j`` and ``2j + 1`` are then
equal with probability ``s = sum_c q_c^2`` (``q`` the law of §18.1) when the draws are
independent, and always when its stream is stuck (a port that keys the uniforms on the
draft's index within its request instead of its position repeats them at every step). The
share of equal pairs is tested against ``s`` by
:func:`~simacc.harness.judging.statistics.cdf_test`. A quiet engine's length ``f + 3/2`` makes
``s = 1/2``: the 32 pairs of one request, all equal, are ``32 ln 2 = 22`` nats, about the
budget of 19 to 23 nats of the profiles' false-alarm shares (half a burst's), those of two
requests twice that. Where a sampling request's counts are equal, its last tokens are two
samples of one law (the same logit, at two positions), equal with probability the sum of its
squares; the number of equal ones is held to
:func:`~simacc.harness.judging.statistics.count_limit` at the other half. A port that keys a
token's noise on the logit's index within its request instead of its position repeats the
token whenever the count repeats: in the fixed program's burst about 32 equal pairs of two
sampling requests over 16 tokens, where independent samples allow about 19.
"""

import zlib

import torch

from simacc import strategies as sx
from simacc.contract import vllm as ref
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check
from simacc.harness.model.programs import Program
from simacc.harness.model.repro_files import ReproError
from simacc.properties import serving, support, vllm
from simacc.strategies import serving as sv
from simacc.strategies import vllm as vl

BURST = 64  # steps of a burst: its pairs of steps judge independence (the module), 32 a request


class V2Loop(serving.ServingLoop):
    """V2's synthetic sampler in an engine's decode loop (see the module). ``requests`` maps
    a running request's slot to ``[seed, position, greedy, temperature]``; ``repeated`` a
    request's drafts and logits, the same at every step of a burst."""

    burst_steps = BURST

    engines = staticmethod(sv.v2_engines)
    knobs_checked = {"mode": list(vl.GREEDY), "width": (2, sv.MAX_V2_WIDTH), "length": float,
                     "capacity": (1, sv.MAX_V2_CAPACITY), "quiet": [True, False], "vocab": (2, 64),
                     "seed": (0, 2**32 - 1)}
    quiet_knobs = {"mode": "mixed", "width": 4, "length": 2.5, "capacity": 4, "quiet": True, "vocab": 16, "seed": 0}

    def check_knobs(self, knobs):
        if not 1 <= knobs["length"] <= knobs["width"]:
            raise ReproError(f"knob 'length' = {knobs['length']!r} is outside [1, K + 1 = {knobs['width']}]")

    def fixed_programs(self):
        """Four requests join, then a burst, at ``K = 3`` and a length of 2.5 (rates 1, 1/2, 0)."""
        return [Program(type(self).__name__, dict(self.quiet_knobs), (("join", {"count": 4}), ("burst", {})))]

    def allocate(self):
        k = self.knobs
        self.unconditional = ref.resolve_synthetic_rates(num_speculative_tokens=k["width"] - 1,
                                                         synthetic_acceptance_length=k["length"])
        self.rates = ref.conditional_rates(unconditional_rates=self.unconditional).tolist()
        self.requests, self.repeated = {}, {}

    def started(self, slots):
        greedy = {"greedy": lambda slot: True, "random": lambda slot: False, "mixed": lambda slot: slot % 2 == 0}
        for slot in slots:
            gen = torch.Generator().manual_seed(zlib.crc32(f"{self.knobs['seed']}:{self.count}:{slot}".encode()))
            seed = int(torch.randint(-(2**63), 2**63 - 1, (), generator=gen))
            position = int(torch.randint(0, 1 << 20, (), generator=gen))
            temperature = float(vl.TEMPERATURES[int(torch.randint(0, len(vl.TEMPERATURES), (), generator=gen))])
            self.requests[slot] = [seed, position, greedy[self.knobs["mode"]](slot), temperature]

    def finished(self, slots):
        for slot in slots:
            self.requests.pop(slot, None)

    def run_step(self):
        """One step of the running requests (none: the engine does not sample); what each
        accepted and the token it emitted last, by slot. In a burst each request drafts the
        same tokens, verified by the same logits, at every step (from its own seed)."""
        if not self.running:
            return {}
        k, seed = self.knobs, self.next_seed()
        drafts_max, vocab, gen = k["width"] - 1, k["vocab"], torch.Generator().manual_seed(seed)
        batch, self.repeated = [], {}
        for slot in self.running:
            request_seed, position, greedy, temperature = self.requests[slot]
            own = torch.Generator().manual_seed(request_seed % 2**32) if self.in_burst else gen
            full = self.in_burst or bool(torch.randint(0, 2, (), generator=gen))
            n = drafts_max if full else int(torch.randint(0, drafts_max + 1, (), generator=gen))
            drafts = torch.randint(0, vocab, (n,), generator=own)
            if not self.in_burst and n and int(torch.randint(0, 8, (), generator=gen)) == 0:
                drafts[int(torch.randint(0, n, (), generator=gen)):] = -1  # a proposer that could not go on
            logits = torch.randn((n + 1, vocab), generator=own)
            self.repeated[slot] = drafts.tolist(), logits
            batch.append(vllm.Drafted(tuple(drafts.tolist()), logits, greedy, request_seed, position, temperature))
        case = vllm.sampler_case(sx.VLLM_V2, batch, self.rates, seed=seed)
        live = {name: self.made(v) if isinstance(v, torch.Tensor) else v for name, v in case.args("cpu").items()}
        step = serving.Step(case, live, self.where())
        outcome = self.call(step)
        for rule in vllm.RULES:
            rule(step, outcome)
        self.check_fresh(outcome, step)
        self.check_held(step)
        emitted, tokens = vllm.counts(step, outcome), vllm.emitted(step, outcome)
        for slot, count in zip(self.running, emitted):
            self.requests[slot][1] += count
        sampled, num_sampled = outcome.returned
        defined = torch.arange(sampled.shape[1]) < torch.tensor(emitted)[:, None]
        self.hold(f"the sampled step {self.count} returned", sampled, defined)
        self.hold(f"the num_sampled step {self.count} returned", num_sampled)
        return {slot: (count - 1, row[-1]) for slot, count, row in zip(self.running, emitted, tokens)}

    def hold(self, what, tensor, defined=None):
        """Keep what a caller keeps of a result, and which of its entries are defined."""
        self.held.append((what, *support.held(tensor), defined))

    def check_held(self, step):
        """Every result still held keeps the values of its defined entries."""
        __tracebackhide__ = True
        for what, *result, defined in self.held:
            support.check_intact(what, result, step, defined)

    def check_fresh(self, outcome, step):
        """No result shares storage with a held one (§17.2: new tensors)."""
        __tracebackhide__ = True
        for name, got in zip(("sampled", "num_sampled"), outcome.returned):
            for what, alias, *_ in self.held:
                shared = got.numel() and alias.numel() and support.shares_storage(got, alias)
                check(not shared, f"{name} shares storage with", f"{what}, still held", "nothing", step)

    def judge_burst(self, steps):
        """Each request's accepted counts at steps ``2j`` and ``2j + 1`` of the burst are equal
        as often as independent draws are, and a sampling request's last tokens, where its counts
        are equal, no more often than independent samples are (see the module)."""
        __tracebackhide__ = True
        p = [1.0, *self.unconditional, 0.0]
        same = sum((p[c] - p[c + 1]) ** 2 for c in range(len(p) - 1))  # P(two counts agree)
        pairs, agree = [], []
        for slot in self.running:
            seen = [step[slot] for step in steps]
            pairs += [1 + (a[0] != b[0]) for a, b in zip(seen[0::2], seen[1::2])]  # 1: equal, 2: unequal
            if not self.requests[slot][2]:
                agree += [(a[1] == b[1], self.token_agreement(slot, a[0])) for a, b in zip(seen[0::2], seen[1::2])
                          if a[0] == b[0]]
        k = self.knobs
        said = f"{len(self.running)} requests seeded once, K={k['width'] - 1}, length={k['length']}"
        support.check_distribution(
            pairs, [same, 1 - same],
            f"[equal, unequal] pairs of a request's accepted counts at steps 2j and 2j + 1 of a burst ({len(pairs)} "
            f"pairs, {said})", false_alarm=self.burst_false_alarm() / 2, value="outcome")
        limit = statistics.count_limit([q for _, q in agree], self.burst_false_alarm() / 2)
        equal = sum(e for e, _ in agree)
        check(equal <= limit, f"{self.where()}: the sampling requests' pairs of equal counts at steps 2j and 2j + 1 "
              f"of a burst whose last tokens are equal too ({len(agree)} pairs, the same drafts and logits at every step, {said})",
              equal, f"at most {limit}: each a fresh sample at a new position (§17.3, §18.2)", None)

    def token_agreement(self, slot, accepted):
        """``P(two samples agree)`` for the request's token after ``accepted`` drafts of a burst:
        the sum of the squares of its law (the logit there without the rejected draft)."""
        drafts, logits = self.repeated[slot]
        row = logits[accepted].clone()
        if accepted < len(drafts):
            row[drafts[accepted]] = -torch.inf
        return float((row.softmax(0) ** 2).sum())
