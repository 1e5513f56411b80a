"""The serving loop (CONTRACT.md §11): one engine's decode loop as a Hypothesis
``RuleBasedStateMachine``, one machine per layout, for ``test_serving.py``.

A program starts an engine with knobs drawn once (:mod:`simacc.strategies.serving`: mode,
method, length, widths, capacity, buffers, seed), then runs scheduler iterations: each rule
is one decode step, after requests ``join`` (taking the lowest free slots: a finished
request's slot is reused), ``leave``, or are ``replace``-d by as many new ones, or with the
batch unchanged (``step``). So ``bs`` and
the roots change from step to step. The engine's buffers outlive a step: ``predict`` is one
flat buffer of ``capacity * D`` slots (request ``s`` owns ``s * D`` onwards, which the step's
verification rewrites before the call), and with ``graphs`` every input is a static buffer
of the capacity, sliced to the batch (the same view whenever a batch size comes back) and
rewritten in place before each step, as a captured CUDA graph's inputs are; a graph's replay
(or a Triton kernel) writes with no autograd op, so with ``graphs`` every rewrite, of
``predict`` too, leaves the version counter where it was (a port that skips a write while the
counter stands still is caught). Everything is made, and rewritten, in the runner's grad mode.

Each step is held to the single-call claims, through the same oracles: at the exact level
its outputs are the reference's from the same generator state (seeded for each step) and it
consumes the documented draws; at the semantic level the ``L`` its outputs show is one value
in the documented support. Every result is held (an overlap scheduler reads step ``t``'s
index while ``t + 1`` runs) as a caller that dropped it holds it, an alias of its storage
and a copy of its values (:func:`simacc.properties.support.held`), never the result object:
each new result shares storage with none of them, and every held one is still intact after
each later step. Static buffers are written only inside the batch's view. At the semantic
level, a ``quiet`` engine's ``burst`` runs :data:`BURST` steps with the same batch from the
CPU generator seeded once at the burst's start and never again, as a server seeded once
draws, and checks their lengths against the documented distribution
(:func:`~simacc.harness.judging.statistics.cdf_test`) and against each other, each call its own
draw (:func:`~simacc.harness.judging.statistics.repeat_test`: no lag at which they repeat more
than independent draws could), each at half of ``1e-6 / (examples + fixed programs)`` a burst:
a program bursts once, so at most 1e-6 a property run (docs/serving.md states the repeat test's
measured power). A quiet engine's ``x`` is
``k + 1/2`` (:mod:`simacc.strategies.serving`), where no length has probability over 1/2: a
port that draws without advancing the generator (inside ``torch.random.fork_rng``) gives one
``L`` for the whole burst, 128 lengths on one side of the CDF's middle point where the law
puts half on each side, which the test sees at any false-alarm rate above ``2^-128``. At the
exact level every step's draw and the generator state after it are checked already (a port
that does not advance the generator fails the first step).

Beside the drawn programs, a machine's fixed programs (:meth:`ServingLoop.fixed_programs`) run
first in every run: at the semantic level a burst at ``x = 2.5`` on a width of 4, for each
method, so the check of a generator seeded once never depends on the knobs drawn.

The machine records its program (:class:`~simacc.harness.model.programs.Program`); after each run
it leaves it as the runner's ``last``, so a failure's repro file holds the shrunk program,
and :meth:`ServingLoop.replay` runs a program from a file, every check included.

An implementation's own state outlives a program. Every tensor an engine makes is kept until
the runner's test ends, so no two buffers of a run share an address: state a port keys by
its input buffer (``data_ptr``, as a CUDA-graph port keys its graphs) belongs to one program,
and a failing program fails again from a clean start.
"""

import functools
import math
import weakref
import zlib
from dataclasses import dataclass

import torch
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

import simacc as sa
from simacc import strategies as sx
from simacc.contract.sampling import sample_simulated_acc_len
from simacc.harness.config import grad_modes
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.model.cases import TensorArg
from simacc.harness.model.programs import Program
from simacc.harness.model.repro_files import ReproError
from simacc.properties import support
from simacc.strategies import DflashCase, EagleCase, FunctionalCase, KernelCase
from simacc.strategies import functional as fn
from simacc.strategies import scalars as sc
from simacc.strategies import serving as sv
from simacc.strategies import tensors as tn

# steps of a burst: an L stuck on one value of probability 1/2 has 128 ln 2 = 89 nats against a budget
# of ~20, and a stream seeded again every 16 steps repeats at lag 16 in 97 of 112 pairs at least, whatever its phase
BURST = 128
MAX_STEPS = 1000  # steps a program from a file may hold
DTYPES = {"int64": torch.int64, "int32": torch.int32}
REAL = "real-draft-token"
_KEPT = weakref.WeakKeyDictionary()  # runner: every tensor its engines made (see the module)
# each rule's arguments and their bounds, for programs from files
ARGUMENTS = {"join": {"count": (1, sv.MAX_JOIN)}, "leave": {"first": (0, 255), "count": (1, sv.MAX_LEAVE)},
             "replace": {"first": (0, 255), "count": (1, sv.MAX_LEAVE)}, "step": {}, "burst": {}}


@dataclass(frozen=True, eq=False)
class Step:
    """One step's call: the engine's own tensors (``live``: views of its buffers) and the
    step's logical ``case``, whose values the oracles read. It prints as its place in the
    program (``where``) and the case, and answers for the case otherwise."""

    case: object
    live: dict
    where: str

    def args(self, device):
        return dict(self.live)

    def summary(self):
        return f"{self.where}: {self.case.summary()}"

    def __getattr__(self, name):
        if name.startswith("__") or name in ("case", "live", "where"):
            raise AttributeError(name)
        return getattr(self.case, name)


def documented_length(x, method, width, seed):
    """The ``L`` the documented sampler draws from ``seed`` (the kernel's engine draws it)."""
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        return sample_simulated_acc_len(x, method, width)


def probabilities(x, method, width):
    """``P(L = k)``, ``k = 1..width``, for the method (CONTRACT.md §9; §3.5 for an infinite
    ``x``, which the Gaussian's CDF cannot take)."""
    if method == "multinomial" and math.isinf(x):
        return [float(k == (width if x > 0 else 1)) for k in range(1, width + 1)]
    if method == "multinomial":
        return support.gaussian_probabilities(x, width) if width > 1 else [1.0]
    return support.match_expected_probabilities(x, width)


class ServingLoop(RuleBasedStateMachine):
    """An engine's decode loop (see the module). A layout's machine says how to make its
    buffers (:meth:`allocate`) and run one step (:meth:`run_step`, which returns the step's
    ``L``, None when no row shows it); :func:`machine_for` adds the start rule that draws
    its knobs from ``engines``."""

    burst_steps = BURST  # steps of a burst (:meth:`burst`)

    engines = None  # the knobs' strategy, a function of the token modes
    knobs_checked = {}  # knob: (low, high) or the values allowed, for programs from files
    positive_x = True  # the contract wants simulate_acc_len > 0 (DFLASH does not, §7.3)
    quiet_knobs = None  # a quiet engine's knobs but the method: the fixed programs' (fixed_programs)

    def __init__(self, simacc):
        super().__init__()
        self.simacc = simacc
        self.knobs = {}
        self.steps = []
        self.running = []  # the running requests' slots, in batch order
        self.held = []  # (what, alias, copy, version) of every output the engine still reads (support.held)
        self.views = {}  # with graphs: (input, batch size) -> the view of its static buffer (inputs)
        self.count = 0
        self.bursts = 0
        self.in_burst = False

    @classmethod
    def of(cls, simacc):
        """This layout's machine for the runner ``simacc``'s implementation."""
        return machine_for(cls, simacc.impl.modes)(simacc)

    # -- the program -------------------------------------------------------------------

    def setup(self, knobs):
        self.knobs = dict(knobs)
        with grad_modes.entered(self.simacc.context):
            self.allocate()

    @property
    def capacity(self):
        return self.knobs["capacity"]

    @property
    def semantic(self):
        return self.simacc.impl.level == "semantic"

    @precondition(lambda self: len(self.running) < self.capacity)
    @rule(count=sv.joins())
    def join(self, count):
        """Up to ``count`` requests join, in the lowest free slots; then a step."""
        self.steps.append(("join", {"count": count}))
        taken = set(self.running)
        joined = [s for s in range(self.capacity) if s not in taken][:count]
        self.running += joined
        self.started(joined)
        self.run_step()

    @precondition(lambda self: self.running)
    @rule(first=sv.positions(), count=sv.leaves())
    def leave(self, first, count):
        """Up to ``count`` requests finish, from batch position ``first`` on; then a step."""
        self.steps.append(("leave", {"first": first, "count": count}))
        if self.running:
            at = first % len(self.running)
            self.finished(self.running[at:at + count])
            del self.running[at:at + count]
        self.run_step()

    @precondition(lambda self: self.running)
    @rule(first=sv.positions(), count=sv.leaves())
    def replace(self, first, count):
        """Up to ``count`` requests finish from batch position ``first`` on and as many join,
        in the slots just freed but last in the batch (continuous batching: ``bs`` stays, the
        roots move); then a step."""
        self.steps.append(("replace", {"first": first, "count": count}))
        if self.running:
            at = first % len(self.running)
            freed = self.running[at:at + count]
            del self.running[at:at + count]
            self.finished(freed)
            self.running += sorted(freed)
            self.started(sorted(freed))
        self.run_step()

    def started(self, slots):
        """New requests took ``slots`` (a layout with per-request state sets it up here)."""

    def finished(self, slots):
        """The requests in ``slots`` finished."""

    @rule()
    def step(self):
        """A step with the batch unchanged."""
        self.steps.append(("step", {}))
        self.run_step()

    @precondition(lambda self: self.semantic and self.knobs["quiet"] and self.running and not self.bursts)
    @rule()
    def burst(self):
        """:data:`BURST` steps with the batch unchanged (a quiet engine's stretch), at the
        semantic level from the CPU generator seeded once at its start (at the exact level each
        step is seeded, for its documented draw); then :meth:`judge_burst` judges them."""
        self.steps.append(("burst", {}))
        self.bursts += 1
        if self.semantic:
            torch.default_generator.manual_seed(zlib.crc32(f"{self.knobs['seed']}:burst".encode()))
        self.in_burst = True
        try:
            shown = [self.run_step() for _ in range(self.burst_steps)]
        finally:
            self.in_burst = False
        self.judge_burst(shown)

    def judge_burst(self, lengths):
        """The burst's lengths follow the documented distribution, each its own draw: no lag
        at which they repeat each other more than independent draws could (each test at half
        the burst's share)."""
        __tracebackhide__ = True
        if None in lengths:
            return  # an empty batch shows no length (a program from a file)
        x, method, width = self.knobs["x"], self.knobs["method"], self.knobs["width"]
        what = f"{method} L counts over a burst of {len(lengths)} steps seeded once (x={x}, max_len={width})"
        law = probabilities(x, method, width)
        support.check_distribution(lengths, law, what, self.burst_false_alarm() / 2)
        repeats = statistics.repeat_test(lengths, law, self.burst_false_alarm() / 2)
        check(repeats.passed, f"the burst's lengths {lengths}, step i against step i + {repeats.lag} (§9.1: each "
              "call its own draw)", f"{repeats.matches} equal of {repeats.pairs}",
              f"fewer (independent draws match that often with probability {repeats.chance:.1e} at most)", None)

    def burst_false_alarm(self):
        """A burst's share of the property's false-alarm rate: a program bursts once at most,
        and a run holds its fixed programs and at most ``max_examples`` drawn ones."""
        examples = getattr(self.simacc.hypothesis, "max_examples", None) or 1
        return statistics.FALSE_ALARM / (examples + len(self.fixed_programs()))

    def fixed_programs(self):
        """Programs every run makes before the drawn ones (the catalogue runs them first),
        whose knobs are chosen where a check is most sensitive and which drawn programs may
        miss: at the semantic level, for each method, two requests join, then a burst at
        ``x = 2.5`` on a width of 4 (no length more likely than 1/2)."""
        if not self.semantic or self.quiet_knobs is None:
            return []
        return [Program(type(self).__name__, {**self.quiet_knobs, "method": method},
                        (("join", {"count": 2}), ("burst", {}))) for method in sa.METHODS]

    def call(self, step):
        """Run one step: from its own seed, or in a burst at the semantic level from the
        generator as the step before left it."""
        return self.simacc.run(step, reseed=not (self.in_burst and self.semantic))

    def teardown(self):
        self.simacc.last = (self.program(), self.simacc.device)

    def program(self):
        return Program(type(self).__name__, dict(self.knobs), tuple(self.steps))

    def where(self):
        return f"step {self.count} of {type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.knobs.items())})"

    def replay(self, program):
        """Run ``program``'s steps in order, every check included, as Hypothesis ran them;
        :class:`ReproError` for a program this machine cannot run."""
        self.check_program(program)
        self.setup(program.knobs)
        try:
            for name, args in program.steps:
                getattr(self, name)(**args)
        finally:
            self.teardown()

    def check_program(self, program):
        if program.machine != type(self).__name__:
            raise ReproError(f"a {program.machine} program, not one for {type(self).__name__}"[:200])
        if set(program.knobs) != set(self.knobs_checked):
            raise ReproError(f"{program.machine}'s knobs must be {sorted(self.knobs_checked)}")
        for name, allowed in self.knobs_checked.items():
            value = program.knobs[name]
            if isinstance(allowed, list):
                ok = value in allowed and type(value) is type(allowed[0])
            elif allowed is float:
                ok = type(value) in (int, float)
            else:
                ok = type(value) is int and allowed[0] <= value <= allowed[1]
            if not ok:
                raise ReproError(f"knob {name!r} = {value!r} is out of range"[:200])
        self.check_knobs(program.knobs)
        if len(program.steps) > MAX_STEPS:
            raise ReproError(f"a program holds at most {MAX_STEPS} steps")
        for name, args in program.steps:
            bounds = ARGUMENTS.get(name)
            if bounds is None or set(args) != set(bounds) or not all(
                    type(v) is int and bounds[k][0] <= v <= bounds[k][1] for k, v in args.items()):
                raise ReproError(f"step {name}({args}) is not one of {sorted(ARGUMENTS)} with its arguments"[:200])

    def check_knobs(self, knobs):
        """What the knobs' types and ranges leave to check: the length the layout samples with."""
        x = knobs["x"]
        if (self.positive_x and not x > 0) or (x != x and knobs["method"] == "multinomial"):
            raise ReproError(f"knob 'x' = {x!r} is outside the contract for this machine")

    # -- what every step shares ----------------------------------------------------------

    def next_seed(self):
        """The seed of the next step: the step's tensors and its generator state come from it."""
        self.count += 1
        return zlib.crc32(f"{self.knobs['seed']}:{self.count}".encode())

    def made(self, values):
        """``values`` as a new tensor on the runner's device, in its grad mode, kept until
        the runner's test ends."""
        with grad_modes.entered(self.simacc.context):
            tensor = values.to(self.simacc.device, copy=True)
        _KEPT.setdefault(self.simacc, []).append(tensor)
        return tensor

    def static(self, shape, dtype, seed):
        """A static buffer of the capacity, filled with arbitrary values."""
        return self.made(tn.fill(shape, dtype, *(tn.INT32 if dtype == torch.int32 else tn.WIDE), seed))

    def inputs(self, values, statics):
        """The step's tensors (``{name: values}``): with ``graphs``, views of the static buffers
        rewritten in place with no autograd op (:meth:`unseen`), one view a batch size, made at
        its first step and passed again whenever the size comes back, as an engine keeps the
        views its graphs were captured with (a port that remembers its inputs by the object,
        ``id()``, gets the same one back with new values); else new tensors."""
        if not self.knobs.get("graphs"):
            return {name: self.made(v) for name, v in values.items()}
        live = {}
        with grad_modes.entered(self.simacc.context):
            for name, v in values.items():
                view = self.views.setdefault((name, v.shape[0]), statics[name][: v.shape[0]])
                self.unseen(view).copy_(v.to(view.device))
                live[name] = view
        return live

    def unseen(self, tensor):
        """Where a rewrite of ``tensor`` goes: with ``graphs``, its ``.data``, the same memory
        under a version counter of its own, as a graph's replay writes it; else ``tensor``."""
        return tensor.data if self.knobs.get("graphs") else tensor

    def check_statics(self, statics, before, written, step):
        """Each static buffer is unchanged outside the batch's rows (and a buffer the call
        only reads, inside them too)."""
        __tracebackhide__ = True
        for name, buffer in statics.items():
            expected = before[name].clone()
            if name in written:
                expected[: step.bs] = buffer[: step.bs]
            check_equal(f"static {name} buffer outside the batch's view", buffer, expected, step)

    def check_held(self, step):
        """Every output the engine still holds is as it was returned."""
        __tracebackhide__ = True
        for what, *result in self.held:
            support.check_intact(what, result, step)

    def hold(self, what, tensor):
        """Keep what a caller keeps of an output (:func:`~simacc.properties.support.held`)."""
        self.held.append((what, *support.held(tensor)))

    def check_length(self, length, step):
        """At the semantic level the step's ``L`` is one the documented distribution allows."""
        __tracebackhide__ = True
        allowed = [k for k, p in enumerate(probabilities(step.simulate_acc_len, step.simulate_acc_method,
                                                         step.max_len), 1) if p > 0]
        check(length in allowed, "L", length, f"one of {allowed} (x={step.simulate_acc_len})", step)


@functools.lru_cache(maxsize=None)
def machine_for(layout, modes):
    """``layout``'s machine for an implementation with token ``modes``: its start rule draws
    the knobs from ``layout.engines(modes=modes)``; named as the layout, as programs name it."""

    class Loop(layout):
        @initialize(knobs=layout.engines(modes=modes))
        def start(self, knobs):
            self.setup(knobs)

    Loop.__name__ = Loop.__qualname__ = layout.__name__
    return Loop


_COMMON_KNOBS = {"mode": list(sa.TOKEN_MODES), "method": list(sa.METHODS), "width": (1, sc.MAX_SPEC_STEPS + 1),
                 "x": float, "capacity": (1, sv.MAX_CAPACITY), "quiet": [True, False], "seed": (0, 2**32 - 1),
                 "vocab": (1, 2**31 - 1)}


def _check_nodes(k):
    """The node knobs of a flat-predict layout: at least ``width`` nodes a request, and in
    real mode (which reads the token tensors) exactly ``width``."""
    if k["nodes"] < k["width"] or (k["mode"] == REAL and (k["nodes"] != k["width"] or not k["tokens"])):
        raise ReproError("nodes must be >= width, and == width with token tensors in real mode")


class SlotsLoop(ServingLoop):
    """A layout with roots in a flat ``predict`` (EAGLE, legacy, the kernel op): request
    slot ``s`` owns ``predict[s * D : (s + 1) * D]``, and the index of every step is held.
    ``names`` are the layout's names for the index, predict, counts and token tensors."""

    names = None
    knobs_checked = {**_COMMON_KNOBS, "graphs": [True, False], "nodes": (1, sc.MAX_SPEC_STEPS + 1 + sv.MAX_EXTRA_NODES),
                     "tokens": [True, False], "dtype": list(DTYPES)}

    def check_program(self, program):
        super().check_program(program)
        _check_nodes(program.knobs)

    def allocate(self):
        k, n = self.knobs, self.names
        cap, width, nodes = k["capacity"], k["width"], k["nodes"]
        self.predict = self.static((cap * nodes,), torch.int32, k["seed"])
        self.statics = {}
        if k["graphs"]:
            self.statics = {n["index"]: self.static((cap, width), torch.int32, k["seed"] + 1),
                            n["counts"]: self.static((cap,), torch.int32, k["seed"] + 2)}
            if k["tokens"]:
                self.statics[n["candidates"]] = self.static((cap, nodes), DTYPES[k["dtype"]], k["seed"] + 3)
                self.statics[n["target"]] = self.static((cap, nodes), torch.int64, k["seed"] + 4)

    def run_step(self):
        k, n = self.knobs, self.names
        width, nodes, bs = k["width"], k["nodes"], len(self.running)
        seed = self.next_seed()
        roots = torch.tensor(self.running, dtype=torch.int32) * nodes
        index = tn.fill((bs, width), torch.int32, -1, self.predict.shape[0] + 1, seed + 1)
        index[:, 0] = roots
        values = {n["index"]: index, n["counts"]: tn.fill((bs,), torch.int32, *tn.INT32, seed + 2)}
        if k["tokens"]:
            values[n["candidates"]] = tn.fill((bs, nodes), DTYPES[k["dtype"]], 0, k["vocab"], seed + 3)
            values[n["target"]] = tn.fill((bs, nodes), torch.int64, 0, k["vocab"], seed + 4)
        slots = (roots.long()[:, None] + torch.arange(nodes)).reshape(-1)
        with grad_modes.entered(self.simacc.context):  # verification writes the batch's slots
            self.unseen(self.predict)[slots.to(self.predict.device)] = tn.fill(
                (bs * nodes,), torch.int32, *tn.INT32, seed + 5).to(self.predict.device)
        predict_before = self.predict.cpu().clone()
        live = self.inputs(values, self.statics)
        before = {name: buffer.clone() for name, buffer in self.statics.items()}
        live[n["predict"]] = self.predict
        step = self.make_step(values, predict_before, live, seed)
        outcome = self.call(step)
        length = self.check_step(outcome, step)
        self.check_statics(self.statics, before, (n["counts"],), step)
        support.check_fresh_result(outcome, [tensor for _, tensor, *_ in self.held], step)
        self.check_held(step)
        self.hold(f"the index step {self.count} returned", outcome.returned)
        return length

    def check_step(self, outcome, step):
        """The step's outputs; its ``L`` (None for an empty batch at the semantic level)."""
        __tracebackhide__ = True
        n = self.names
        support.check_index_type(outcome, step, n["index"])
        length = self.length(outcome, step)
        device = outcome.returned.device
        check_equal("index", outcome.returned, support.expected_index(step, length).to(device), step)
        counts = outcome.args[n["counts"]]
        check_equal(n["counts"], counts, torch.full((step.bs,), length - 1, dtype=torch.int32, device=device), step)
        predict = self.predict
        if step.token_mode != REAL:
            check_equal(n["predict"], predict, torch.full_like(predict, self.simacc.impl.fixed_token_id), step)
        else:
            positions = support.accepted_positions(step, length)
            candidates, target = getattr(step, n["candidates"]).values, getattr(step, n["target"]).values
            tokens = support.drafts_then_bonus(candidates, target, length)
            support.check_accepted_slots(n["predict"], predict, positions, tokens, step, length)
            support.check_other_slots_unchanged(n["predict"], predict, getattr(step, n["predict"]).values, positions,
                                                step, length)
        for name in (n["index"], n["candidates"], n["target"]):
            if getattr(step, name) is not None:
                check_equal(f"{name} after the call", outcome.args[name].cpu(), getattr(step, name).values, step)
        self.check_draws(outcome, step)
        return None if self.semantic and not step.bs else length


class EagleLoop(SlotsLoop):
    """``generate_simulated_accept_index`` (and the legacy function, fixed mode only) in an
    engine's decode loop."""

    engines = staticmethod(sv.eagle_engines)
    quiet_knobs = {"mode": "fixed", "width": 4, "x": 2.5, "capacity": 2, "graphs": False, "quiet": True, "nodes": 4,
                   "tokens": False, "dtype": "int64", "vocab": 16, "seed": 0}
    names = {"index": "accept_index", "predict": "predict", "counts": "num_correct_drafts",
             "candidates": "candidates", "target": "target_predict"}

    def make_step(self, values, predict_before, live, seed):
        k = self.knobs
        scalars = {"bs": len(self.running), "spec_steps": k["width"] - 1, "simulate_acc_len": k["x"],
                   "simulate_acc_method": k["method"], "simulate_acc_token_mode": k["mode"]}
        tensors = {name: TensorArg(v) for name, v in values.items()}
        case = EagleCase(**{"candidates": None, "target_predict": None, **tensors},
                         predict=TensorArg(predict_before), **scalars, seed=seed)
        live = {"candidates": None, "target_predict": None, **live, **scalars}
        return Step(case, {name: live[name] for name in sx.EAGLE.params}, self.where())

    def length(self, outcome, step):
        length = support.length_of(self.simacc, outcome, step, "num_correct_drafts")
        if self.semantic:
            self.check_length(length, step)
        return length

    def check_draws(self, outcome, step):
        if not self.semantic:
            support.check_documented_draws(outcome, step)


class KernelLoop(SlotsLoop):
    """The kernel op in an engine's decode loop: the engine samples each step's
    ``num_accept_tokens`` with its own method and length, as the eager function does."""

    engines = staticmethod(sv.kernel_engines)
    names = {"index": "accept_indices", "predict": "predict_tokens", "counts": "num_correct_drafts",
             "candidates": "candidate_tokens", "target": "target_tokens"}

    def make_step(self, values, predict_before, live, seed):
        k = self.knobs
        scalars = {"width": k["width"], "num_accept_tokens": documented_length(k["x"], k["method"], k["width"], seed),
                   "real_tokens": k["mode"] == REAL}
        tensors = {name: TensorArg(v) for name, v in values.items()}
        case = KernelCase(**tensors, predict_tokens=TensorArg(predict_before), **scalars, seed=seed)
        return Step(case, {**live, **scalars}, self.where())

    def length(self, outcome, step):
        return step.num_accept_tokens

    def check_draws(self, outcome, step):
        check(not outcome.draws_consumed, "CPU generator state", "advanced", "unchanged (the op draws nothing)", step)


class DflashLoop(ServingLoop):
    """``apply_dflash_simulated_acceptance`` in an engine's decode loop: one row per running
    request; with fresh tensors each step, the engine holds every step's outputs."""

    engines = staticmethod(sv.dflash_engines)
    quiet_knobs = {"mode": "fixed", "width": 4, "x": 2.5, "capacity": 2, "graphs": False, "quiet": True,
                   "target": True, "classes": 4, "dtype": "int64", "vocab": 16, "seed": 0}
    knobs_checked = {**_COMMON_KNOBS, "width": (1, 16), "graphs": [True, False], "target": [True, False],
                     "classes": (1, 64), "dtype": list(DTYPES)}
    positive_x = False
    WRITTEN = ("accept_len", "commit_lens", "bonus", "out_tokens")

    def allocate(self):
        k = self.knobs
        cap, block, seed = k["capacity"], k["width"], k["seed"]
        self.statics = {}
        if k["graphs"]:
            self.statics = {"candidates": self.static((cap, block), DTYPES[k["dtype"]], seed + 1),
                            "accept_len": self.static((cap,), torch.int32, seed + 2),
                            "commit_lens": self.static((cap,), torch.int32, seed + 3),
                            "bonus": self.static((cap,), torch.int64, seed + 4),
                            "out_tokens": self.static((cap, block), torch.int64, seed + 5)}
            if k["target"]:
                self.statics["target_predict"] = self.static((cap, block), torch.int64, seed + 6)
            elif k["mode"] == REAL:  # the verify pass's logits, a static buffer too
                self.statics["next_token_logits"] = self.static((cap * block, k["classes"]), torch.float32, seed + 7)

    def run_step(self):
        k = self.knobs
        block, bs, seed = k["width"], len(self.running), self.next_seed()
        values = {"candidates": tn.fill((bs, block), DTYPES[k["dtype"]], 0, k["vocab"], seed + 1),
                  "accept_len": tn.fill((bs,), torch.int32, *tn.INT32, seed + 2),
                  "commit_lens": tn.fill((bs,), torch.int32, *tn.INT32, seed + 3),
                  "bonus": tn.fill((bs,), torch.int64, *tn.WIDE, seed + 4),
                  "out_tokens": tn.fill((bs, block), torch.int64, *tn.WIDE, seed + 5)}
        logits = None
        if k["target"]:
            values["target_predict"] = tn.fill((bs, block), torch.int64, 0, k["vocab"], seed + 6)
        elif k["mode"] == REAL:  # real mode without target_predict takes the logits' argmax
            gen = torch.Generator().manual_seed(seed + 7)
            scores = torch.randint(0, k["classes"], (bs * block, k["classes"]), generator=gen, dtype=torch.float32)
            logits = scores.scatter_(1, torch.randint(0, k["classes"], (bs * block, 1), generator=gen),
                                     float(k["classes"]))
        given = values if logits is None else {**values, "next_token_logits": logits}
        live = {"target_predict": None, "next_token_logits": None, **self.inputs(given, self.statics)}
        before = {name: buffer.clone() for name, buffer in self.statics.items()}
        case = DflashCase(**{"target_predict": None, **{name: TensorArg(v) for name, v in values.items()}},
                          simulate_acc_len=k["x"], simulate_acc_method=k["method"], simulate_acc_token_mode=k["mode"],
                          next_token_logits=None if logits is None else TensorArg(logits), seed=seed)
        live.update(simulate_acc_len=k["x"], simulate_acc_method=k["method"], simulate_acc_token_mode=k["mode"])
        step = Step(case, live, self.where())
        outcome = self.call(step)
        length = self.check_step(outcome, step)
        self.check_statics(self.statics, before, self.WRITTEN, step)
        self.check_held(step)
        if not k["graphs"]:
            for name in self.WRITTEN:
                self.hold(f"{name} of step {self.count}", outcome.args[name])
        return length

    def check_step(self, outcome, step):
        __tracebackhide__ = True
        length = support.length_of(self.simacc, outcome, step, "commit_lens")
        if self.semantic and step.bs:
            self.check_length(length, step)
        accept_len, commit_lens = outcome.args["accept_len"], outcome.args["commit_lens"]
        check_equal("accept_len", accept_len, torch.full_like(accept_len, length - 1), step)
        check_equal("commit_lens", commit_lens, torch.full_like(commit_lens, length), step)
        bs, block = step.out_tokens.values.shape
        if step.token_mode != REAL:
            for name in ("bonus", "out_tokens"):
                got = outcome.args[name]
                check_equal(name, got, torch.full_like(got, self.simacc.impl.fixed_token_id), step)
        else:
            if step.target_predict is not None:
                target = step.target_predict.values
            else:
                target = step.next_token_logits.values.argmax(dim=1).reshape(bs, block)
            accepted = support.drafts_then_bonus(step.candidates.values, target, length)
            expected = torch.cat([accepted, torch.zeros((bs, block - length), dtype=torch.int64)], dim=1)
            check_equal("out_tokens", outcome.args["out_tokens"].cpu(), expected, step)
            check_equal("bonus", outcome.args["bonus"].cpu(), accepted[:, length - 1], step)
        for name in ("candidates", "target_predict", "next_token_logits"):
            if getattr(step, name) is not None:
                check_equal(f"{name} after the call", outcome.args[name].cpu(), getattr(step, name).values, step)
        if not self.semantic:
            support.check_documented_draws(outcome, step)
        return None if self.semantic and not bs else length


class FunctionalLoop(ServingLoop):
    """A functional port in an engine's decode loop, as a JAX engine runs one: a batch of
    ``capacity`` rows of one shape for the whole run, slot ``s`` in row ``s``, a
    ``valid_mask`` marking the running requests, and ``predict`` threaded from one step's
    result to the next step's input (after verification rewrote the running slots). Every
    result is held. Always semantic (CONTRACT.md §10)."""

    engines = staticmethod(sv.functional_engines)
    quiet_knobs = {"mode": "fixed", "width": 4, "nodes": 4, "x": 2.5, "capacity": 4, "quiet": True, "tokens": False,
                   "vocab": 16, "seed": 0}
    knobs_checked = {**_COMMON_KNOBS, "nodes": (1, sc.MAX_SPEC_STEPS + 1 + sv.MAX_EXTRA_NODES), "tokens": [True, False]}

    def check_program(self, program):
        super().check_program(program)
        _check_nodes(program.knobs)

    def allocate(self):
        k = self.knobs
        self.predict = tn.fill((k["capacity"] * k["nodes"] + fn.SPARE,), torch.int32, *tn.INT32, k["seed"])

    def run_step(self):
        k = self.knobs
        cap, width, nodes, seed = k["capacity"], k["width"], k["nodes"], self.next_seed()
        roots = torch.arange(cap, dtype=torch.int32) * nodes
        running = torch.zeros(cap, dtype=torch.bool)
        running[self.running] = True
        predict = self.predict.clone()
        slots = (roots[running].long()[:, None] + torch.arange(nodes)).reshape(-1)
        predict[slots] = tn.fill((len(slots),), torch.int32, *tn.INT32, seed + 5)  # verification's writes
        index = tn.fill((cap, width), torch.int32, -1, predict.shape[0] + 1, seed + 1)
        index[:, 0] = roots
        values = {"accept_index": index, "predict": predict, "valid_mask": running}
        if k["tokens"]:
            values["candidates"] = tn.fill((cap, nodes), torch.int32, 0, k["vocab"], seed + 3)
            values["target_predict"] = tn.fill((cap, nodes), torch.int32, 0, k["vocab"], seed + 4)
        fixed = self.simacc.impl.fixed_token_id
        case = FunctionalCase(**{"candidates": None, "target_predict": None,
                                 **{name: TensorArg(v) for name, v in values.items()}},
                              spec_steps=width - 1, simulate_acc_len=k["x"], simulate_acc_method=k["method"],
                              simulate_acc_token_mode=k["mode"], fixed_token_id=fixed, seed=seed)
        live = {"candidates": None, "target_predict": None, **{name: self.made(v) for name, v in values.items()}}
        live.update(spec_steps=width - 1, simulate_acc_len=k["x"], simulate_acc_method=k["method"],
                    simulate_acc_token_mode=k["mode"], fixed_token_id=fixed, rng=seed)
        step = Step(case, live, self.where())
        outcome = self.call(step)
        length = self.check_step(outcome, step, running)
        self.check_held(step)
        for name, tensor in zip(("index", "predict", "lens"), outcome.returned):
            self.hold(f"the {name} step {self.count} returned", tensor)
        self.predict = outcome.returned[1].cpu().clone()
        return length

    def check_step(self, outcome, step, running):
        __tracebackhide__ = True
        returned = outcome.returned
        check(isinstance(returned, tuple) and len(returned) == 3, "the result", type(returned).__name__,
              "(index, predict, lens)", step)
        index, predict, lens = (t.cpu() for t in returned)
        shown = sorted(set(lens[running].tolist()))
        check(len(shown) <= 1, "lens of the valid rows", shown, "one length for the whole call", step)
        length = shown[0] if shown else None
        expected_lens = torch.zeros_like(lens)
        expected_index = torch.full_like(index, -1)
        if length is not None:
            self.check_length(length, step)
            check(1 <= length <= step.max_len, "L (lens of the valid rows)", length, f"in [1, {step.max_len}]", step)
            expected_lens[running] = length
            expected_index[running] = support.expected_index(step, length)[running]
        check_equal("lens", lens, expected_lens, step)
        check_equal("index", index, expected_index, step)
        if step.token_mode != REAL:
            check_equal("predict", predict, torch.full_like(predict, step.fixed_token_id), step)
        else:
            rows = running.nonzero().reshape(-1)
            positions = torch.zeros((0, 1), dtype=torch.long)
            if length is not None:
                positions = support.accepted_positions(step, length)[rows]
                tokens = support.drafts_then_bonus(step.candidates.values[rows], step.target_predict.values[rows],
                                                   length)
                support.check_accepted_slots("predict", predict, positions, tokens, step, length)
            support.check_other_slots_unchanged("predict", predict, step.predict.values, positions, step, length or 0)
        for name in ("accept_index", "predict", "candidates", "target_predict", "valid_mask"):
            if getattr(step, name) is not None:
                check_equal(f"{name} after the call", outcome.args[name].cpu(), getattr(step, name).values, step)
        return length

