"""What property modules share: strategies chosen for the implementation under test, the
oracles (expectations computed the plain way from a case, with lists and small loops, never
through the reference) and one helper per check that several properties make.

A strategy here is a function of the :class:`~simacc.harness.call.impl.Implementation` (what
:func:`~simacc.harness.judging.catalogue.claim` accepts): a legacy implementation has only the
fixed token mode, a positional call style can leave out fewer arguments, a port may write
another fixed id.
"""

import dataclasses
import functools
import math

import torch
from hypothesis import strategies as st

from simacc import strategies as sx
from simacc.contract import laws
from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal, describe
from simacc.harness.judging.distributions import Distribution
from simacc.harness.model.cases import TensorArg, seeded
from simacc.strategies import EagleCase

# -- strategies for the implementation under test ------------------------------------------


def eagle_cases_for_impl(**options):
    """``sx.eagle_cases(**options)`` in the token modes of the implementation under test."""
    return _for_impl(sx.eagle_cases, lambda impl: {"modes": impl.modes}, options)


def functional_cases_for_impl(**options):
    """``sx.functional_cases(**options)`` asking for the implementation's fixed token id."""
    return _for_impl(sx.functional_cases, lambda impl: {"fixed_token_id": impl.fixed_token_id}, options)


def _for_impl(strategy, chosen, options):
    """A function of the implementation: ``strategy(**chosen(impl), **options)``, built once
    for each choice (a strategy built inside a draw would cost a construction every time)."""
    frozen = tuple(sorted(options.items()))
    return lambda impl: _built(strategy, tuple(sorted(chosen(impl).items())), frozen)


@functools.lru_cache(maxsize=None)
def _built(strategy, chosen, options):
    return strategy(**dict(chosen), **dict(options))


_DEFAULT_METHODS = st.just(DEFAULT_METHOD)


def defaulted_eagle_cases(impl):
    """Cases that leave out the method, the token mode or both (CONTRACT.md §5.1), as far as
    the implementation's call style can (``Implementation.omissions``), with the left-out
    arguments' values equal to the defaults; ``omitted`` is empty where nothing can be left
    out. Shrinks toward leaving out the method alone."""
    return _defaulted_eagle_cases(impl.omissions, impl.modes)


@functools.lru_cache(maxsize=None)
def _defaulted_eagle_cases(patterns, modes):
    if not patterns:
        return _built(sx.eagle_cases, (("modes", modes),), ())

    @st.composite
    def cases(draw):
        omit = draw(st.sampled_from(patterns), label="omitted")
        chosen = (DEFAULT_TOKEN_MODE,) if "simulate_acc_token_mode" in omit else modes
        options = (("methods", _DEFAULT_METHODS),) if "simulate_acc_method" in omit else ()
        return dataclasses.replace(draw(_built(sx.eagle_cases, (("modes", chosen),), options)), omitted=omit)

    return cases()


def server_batches_for_impl(impl):
    """``sx.server_batches`` in the token modes of the implementation under test."""
    return _built(sx.server_batches, (("modes", impl.modes),), ())


def cases_for_impl(impl):
    """Cases of the implementation's own contract, from the strategy its record holds, given
    what it takes of the implementation (a property every contract shares)."""
    record = impl.record
    return _built(record.strategy, tuple((name, getattr(impl, name)) for name in record.takes), ())


# -- oracles --------------------------------------------------------------------------------


def length_of(simacc, outcome, case, source):
    """The ``L`` a property holds the outputs to.

    At the exact level, the documented draw from the case's seed (or the kernel op's given
    length). At the semantic level (CONTRACT.md §9), for ports that draw ``L`` their own way,
    the one ``L`` that the output ``source`` shows (``num_correct_drafts``, ``index`` or
    ``commit_lens``), after checking that every row shows the same one, in ``[1, W]``: the
    property then checks the other outputs against it.
    """
    __tracebackhide__ = True
    if simacc.impl.level == "exact" or case.length_given or case.bs == 0:
        return case.expected_length()
    shown = _shown_lengths(outcome, source)
    low, high = int(shown.min()), int(shown.max())
    what = f"L as {source} shows it (min, max over the rows)"
    check(low == high and 1 <= low <= case.max_len, what, (low, high), f"one value in [1, {case.max_len}]", case,
          "drawn by the implementation")
    return low


def _shown_lengths(outcome, source):
    got = outcome.returned if source == "index" else outcome.args[source]
    check(isinstance(got, torch.Tensor), f"type({source})", type(got).__name__, "Tensor", None)
    got = got.cpu().long()
    if source == "index":
        return (got != -1).sum(dim=1)
    return got + 1 if source == "num_correct_drafts" else got


def accepted_positions(case, length):
    """``(bs, L)``: the flat ``predict`` positions of each row's accepted slots."""
    return case.root_values.long() + torch.arange(length)


def expected_index(case, length):
    """The index the contract requires (CONTRACT.md §4.2): a -1 buffer whose first ``L``
    columns are the roots plus ``0..L-1`` (written the way upstream writes it, not the way
    the reference does)."""
    expected = torch.full((case.bs, case.max_len), -1, dtype=torch.int32)
    expected[:, :length] = accepted_positions(case, length).int()
    return expected


def drafts_then_bonus(candidates, target_predict, length):
    """``(bs, L)`` rows ``candidates[i, 1:L]`` followed by ``target_predict[i, L-1]``: the
    drafts shifted into place, then the last column replaced by the bonus (CONTRACT.md §4.5)."""
    tokens = candidates.long().roll(-1, dims=1)[:, :length].clone()
    tokens[:, length - 1] = target_predict[:, length - 1]
    return tokens


# -- the role of each output element, for failure messages ------------------------------


def slot_role(case, length, row, j):
    """What row ``row``'s accepted slot ``j`` (of ``L = length``) receives (CONTRACT.md §4.4-§4.5)."""
    if case.token_mode != "real-draft-token":
        return f"row {row}'s slot j={j}, and fixed mode writes the fixed id to every element"
    drafts, target = case.token_fields
    if j < length - 1:
        return f"row {row}'s slot j={j}: draft {j + 1}, {drafts}[{row}, {j + 1}]"
    return f"row {row}'s slot j={j}: the bonus, {target}[{row}, {j}]"


def predict_roles(case, length):
    """``role(index)`` of a flat ``predict`` element: which row's accepted slot ``j`` it is
    and what belongs there, or that no row accepts it (the roots are read, not assumed)."""
    roots = case.root_values[:, 0].tolist()

    def role(index):
        for row, root in enumerate(roots):
            if 0 <= index[0] - root < length:
                return slot_role(case, length, row, index[0] - root)
        if case.token_mode != "real-draft-token":
            return "a slot no row accepts, and fixed mode writes the fixed id to every element"
        return "untouched: no row accepts this slot, so it keeps its value"

    return role


def index_roles(case, length):
    """``role((i, j))`` of an index element: accepted (``root + j``) or padding (-1 from ``L``)."""
    roots = case.root_values[:, 0].tolist()

    def role(index):
        i, j = index
        if j < length:
            return f"row {i}, j={j}: accepted, root {roots[i]} + {j}"
        return f"row {i}, j={j}: padding (j >= L), -1"

    return role


def count_role(index):
    """``role((i,))`` of ``num_correct_drafts``: the drafts accepted, without the bonus (§4.3)."""
    return f"row {index[0]} counts the L - 1 accepted drafts, not the bonus"


def gap_role(layout):
    """``role`` of a storage element outside a tensor's own: the padding of a strided view."""
    return lambda index: f"padding: a gap of the {layout} buffer, outside the tensor's elements"


def observed_lengths(outcome):
    """``L`` as each row reports it, twice: ``num_correct_drafts + 1`` for every row, then
    the number of index entries other than -1 for every row."""
    counts = outcome.args["num_correct_drafts"].long().cpu() + 1
    return torch.cat([counts, (outcome.returned != -1).sum(dim=1).cpu()])


def documented_draws(case):
    """``(L, state, draws)``: the CPU generator seeded from ``case.seed`` as for a call (``seeded``) and the draws CONTRACT.md
    §3 documents made by hand, the ``L`` they give (None where §3.5 raises), the generator's
    state after them and how many there were. Written apart from the reference's sampler (which
    ``case.expected_length()`` runs), so that the exact level's length claim holds any sampler,
    simacc's own included, to §3's words."""
    x, method, max_len = case.simulate_acc_len, case.simulate_acc_method, case.max_len
    with torch.random.fork_rng(devices=[]):
        seeded(torch.default_generator, case.seed)
        if method == "multinomial":
            value = torch.normal(mean=x, std=1.0, size=(1,), device="cpu").item()  # float32, as drawn
            length = round(min(max(value, 1.0), max_len)) if value == value else None  # half to even
            return length, torch.get_rng_state(), 1
        clamped = max(1.0, min(max_len, x))
        lo = math.floor(clamped)
        if lo == max_len:  # hi == lo: no draw
            return lo, torch.get_rng_state(), 0
        frac = clamped - lo
        length = lo + int(torch.multinomial(torch.tensor([1 - frac, frac]), 1))
        return length, torch.get_rng_state(), 1


def match_expected_probabilities(x, max_len):
    """P(L = k), k = 1..max_len, under ``match-expected`` (CONTRACT.md §3.3; one definition, in
    :mod:`simacc.contract.laws`)."""
    return laws.match_expected_law(x, max_len - 1)


def gaussian_probabilities(x, max_len):
    """P(L = k), k = 1..max_len, for round(clamp(N(x, 1), 1, max_len)) (CONTRACT.md §3.2)."""
    return laws.gaussian_law(x, max_len - 1)


def small_case(x, method, seed, spec_steps=3):
    """A one-request fixed-mode case with length ``x``: cheap enough to run thousands of
    times for the statistical properties (valid for the eagle and legacy contracts)."""
    return dataclasses.replace(_small_case(x, method, spec_steps), seed=seed)


@functools.lru_cache(maxsize=64)
def _small_case(x, method, spec_steps):
    width = spec_steps + 1
    index = torch.full((1, width), -1, dtype=torch.int32)
    index[0, 0] = 0
    return EagleCase(
        accept_index=TensorArg(index),
        predict=TensorArg(torch.arange(7, 7 + width, dtype=torch.int32)),
        num_correct_drafts=TensorArg(torch.tensor([-3], dtype=torch.int32)),
        candidates=None,
        target_predict=None,
        bs=1,
        spec_steps=spec_steps,
        simulate_acc_len=x,
        simulate_acc_method=method,
        simulate_acc_token_mode="fixed",
        seed=0,
    )


def sampled_lengths(simacc, x, method, runs, spec_steps=3):
    """The lengths the implementation under test gives (entries of the index other than
    -1) for ``small_case`` with the CPU generator seeded ``0..runs-1`` in turn
    (:meth:`~simacc.harness.call.runner.Runner.sample`), read back from the device once."""
    counts = simacc.sample(small_case(x, method, 0, spec_steps), range(runs), _index_length)
    wrong = next((c for c in counts if isinstance(c, str)), None)
    check(wrong is None, "type(index)", wrong, "Tensor", None)
    return torch.stack(counts).tolist() if counts else []


def _index_length(index):
    """How many entries of the index are not -1 (a tensor, read back with the others), or the
    name of what was returned instead of a tensor."""
    return (index != -1).sum() if isinstance(index, torch.Tensor) else type(index).__name__


@dataclasses.dataclass(frozen=True)
class Design:
    """One statistical check a property makes: the property (``prop``), which of its checks
    (``where``: its parameters), how many draws, against which law (``P(value = k)``,
    ``k = 1..``) and at which share of the property's false-alarm rate. Its power follows
    (:meth:`gaps`; CONTRACT.md §9.4); ``benchmarks/power.py`` runs it on neighbouring laws."""

    prop: str
    where: str
    runs: int
    probabilities: tuple
    false_alarm: float

    def gaps(self, power=0.999):
        """``[(F(k), d)]`` at each point ``k`` where the documented CDF ``F`` lies strictly inside
        (0, 1): the smallest ``d`` such that a law whose CDF there is ``d`` or more away, either
        way, is seen with probability ``power``
        (:func:`~simacc.harness.judging.statistics.detectable_gap`). Where no shift one way is
        seen, that way's room (``1 - F`` up, ``F`` down) stands in: no law is further away."""
        cdf, points = statistics.cdf_points(self.probabilities)

        def seen(f):  # the gap seen upwards from f, or its room
            gap = statistics.detectable_gap(self.runs, f, points, self.false_alarm, power)
            return gap if gap != math.inf else 1 - f

        return [(f, max(seen(f), seen(1 - f))) for f in cdf if 0.0 < f < 1.0]


def check_distribution(lengths, probabilities, what, false_alarm=statistics.FALSE_ALARM, value="L"):
    """``lengths`` follow ``probabilities`` (``P(L = k)``, ``k = 1..len``) by
    :func:`~simacc.harness.judging.statistics.cdf_test` at ``false_alarm``: a property's whole
    budget (1e-6 a run), or its share where it makes several checks. A conforming implementation
    fails with probability at most that, whatever stream it draws from. A failure carries the
    distribution; its message names the values ``value``."""
    __tracebackhide__ = True
    test = statistics.cdf_test(lengths, probabilities, false_alarm)
    if test.passed:
        return
    runs = len(lengths)
    counts = [lengths.count(k) for k in range(1, len(probabilities) + 1)]
    expected = [round(p * runs) for p in probabilities]
    if test.high == 0.0:
        why = f"{value}={test.k} has probability 0"
    else:
        why = f"the CDF at {value}={test.k} is {test.observed:.3f}, outside {test.low:.3f}-{test.high:.3f}"
    check(False, what, counts, f"about {expected} ({why})", None,
          distribution=Distribution.of(lengths, probabilities, what, false_alarm))


# -- checks several properties make ---------------------------------------------------------


def check_rejected_untouched(outcome, case, naming=None):
    """The call raised (a ``ValueError`` whose message names ``naming``, when given), left
    every tensor argument as it was and drew nothing."""
    __tracebackhide__ = True
    error = outcome.error
    none = REJECTED
    check(error is not None, "the call", f"returned {_short(outcome.returned)}", "an exception", case, none)
    if naming is not None:
        named = isinstance(error, ValueError) and (naming in str(error) or repr(naming) in str(error))
        said = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        check(named, "the error", said, f"a ValueError naming {naming!r}", case, none)
    for name, before in outcome.before.items():
        check_equal(f"{name} after the rejected call", outcome.args[name], before, case, none)
    check(not outcome.draws_consumed, "CPU generator state after the rejected call", "advanced", "unchanged", case,
          none)


REJECTED = "not drawn (the call must raise first)"  # the L of a call that must be rejected


def _short(value):
    """A returned value as a message names it: a tensor by its summary."""
    return describe(value) if isinstance(value, torch.Tensor) else repr(value)[:200]


def check_same_outputs(what, got, expected, case):
    """Two outcomes alike in every output: the result, every tensor argument after the call
    and the CPU generator state; ``what`` says how ``got`` was obtained."""
    __tracebackhide__ = True
    if expected.returned is None:
        check(got.returned is None, f"result {what}", got.returned, "None", case)
    else:
        check_equal(f"result {what}", _on(got.returned, expected.returned), expected.returned, case)
    for name, tensor in expected.args.items():
        if isinstance(tensor, torch.Tensor):
            check_equal(f"{name} {what}", _on(got.args[name], tensor), tensor, case)
    same = torch.equal(got.rng_after, expected.rng_after)
    check(same, f"CPU generator state {what}", "different", "the same", case)


def _on(tensor, like):
    """``tensor`` moved to ``like``'s device (parity compares two devices' outputs)."""
    return tensor.to(like.device) if isinstance(tensor, torch.Tensor) and isinstance(like, torch.Tensor) else tensor


def check_parity(simacc, case, baseline="cpu"):
    """The case gives the same bytes on the runner's CUDA device as on the CPU (CONTRACT.md
    §3.1: one ``L`` from the CPU generator, so every device and every rank agrees)."""
    __tracebackhide__ = True
    on_cuda = simacc.run(case)
    check_same_outputs(f"on {simacc.device} (moved to {baseline})", on_cuda, simacc.run(case, baseline), case)


def check_index_rows(index, case, length, device):
    """The returned ``index`` is an int32 tensor on ``device`` whose row ``i`` is
    ``root_i + 0..L-1``, then -1 (CONTRACT.md §4.2, §8.2)."""
    __tracebackhide__ = True
    check_equal("index", index, expected_index(case, length).to(device), case, length, index_roles(case, length))


def check_counts(counts, case, length, device):
    """``num_correct_drafts`` after the call is ``L - 1`` in every element, int32 on ``device``
    (CONTRACT.md §4.3)."""
    __tracebackhide__ = True
    expected = torch.full((case.bs,), length - 1, dtype=torch.int32, device=device)
    check_equal("num_correct_drafts", counts, expected, case, length, count_role)


def check_every_output(simacc, case, index_name, predict_name, next_step):
    """One call of an in-place layout (the EAGLE one or the kernel op's) judged on every
    output, as the properties that each judge one do: the index (its type, then its rows),
    ``num_correct_drafts`` and ``predict_name`` (the fixed id in every element, or the drafts
    then the bonus at the accepted slots and every other element as it was); then the call of
    ``next_step`` (another length), while a caller still holds the index (:func:`held`), which
    keeps its values."""
    __tracebackhide__ = True
    outcome = simacc.run(case)
    check_index_type(outcome, case, index_name)
    length = length_of(simacc, outcome, case, "num_correct_drafts")
    check_index_rows(outcome.returned, case, length, outcome.device)
    check_counts(outcome.args["num_correct_drafts"], case, length, outcome.device)
    predict = outcome.args[predict_name]
    if case.token_mode != "real-draft-token":
        check_equal(predict_name, predict, torch.full_like(predict, simacc.impl.fixed_token_id), case, length,
                    predict_roles(case, length))
    else:
        candidates, target = (getattr(case, name).values for name in case.token_fields)
        positions = accepted_positions(case, length)
        check_accepted_slots(predict_name, predict, positions, drafts_then_bonus(candidates, target, length), case,
                             length)
        check_other_slots_unchanged(predict_name, predict, getattr(case, predict_name).values, positions, case, length)
    result = held(outcome.returned)
    del outcome  # a caller keeps the index it read, not the result object
    simacc.run(next_step)
    check_intact("the index, across the next step's call", result, case)


def check_documented_draws(outcome, case, where=""):
    """The CPU generator advanced by exactly the draws CONTRACT.md §3 documents (``outcome``
    has its state before and after the call; ``where`` says in which process)."""
    __tracebackhide__ = True
    _, state, draws = documented_draws(case)
    got = "unchanged (no draw)" if torch.equal(outcome.rng_before, outcome.rng_after) else "advanced by other draws"
    want = f"advanced by exactly the {draws} documented draw(s)" if draws else "unchanged (no draw)"
    check(torch.equal(outcome.rng_after, state), f"CPU generator state{where}", got, want, case)


def check_accepted_slots(what, predict, positions, tokens, case, length, roles=None):
    """``predict`` (1-D, any device) holds ``tokens`` at ``positions`` (same shape), as
    ``predict``'s dtype; the rest of it is another property's business. ``roles`` names a
    differing element (default: :func:`predict_roles` for ``length``)."""
    __tracebackhide__ = True
    got = predict.cpu()
    expected = got.clone()
    expected[positions.reshape(-1)] = tokens.reshape(-1).to(got.dtype)
    check_equal(what, got, expected, case, length, roles or predict_roles(case, length))


def check_other_slots_unchanged(what, predict, before, positions, case, length, roles=None):
    """Every element of ``predict`` outside ``positions`` keeps its value from ``before``."""
    __tracebackhide__ = True
    got = predict.cpu()
    expected = before.clone()
    flat = positions.reshape(-1)
    expected[flat] = got[flat]  # the accepted slots are another property's business
    check_equal(what, got, expected, case, length, roles or predict_roles(case, length))


def check_inputs_untouched(outcome, case, names):
    """Each named input (when the case has it) is byte-identical after the call, and so is
    the rest of its storage: a write through wrong strides lands in a buffer's gaps."""
    __tracebackhide__ = True
    for name in names:
        if getattr(case, name) is None:
            continue
        got = outcome.args[name]
        check_equal(name, got, outcome.before[name], case, role=lambda index: "an input, never written")
        fresh = getattr(case, name).on(outcome.device)
        check_equal(f"{name} storage", whole_storage(got), whole_storage(fresh), case,
                    role=gap_role(getattr(case, name).layout))


def check_nothing_outside_views(outcome, case, names):
    """Nothing of each named 1-D output's storage outside its view is written: a write
    through wrong strides, or a fill over the view's whole span, lands in its gaps."""
    __tracebackhide__ = True
    for name in names:
        got, fresh = outcome.args[name], getattr(case, name).on(outcome.device)
        outside = whole_storage(got).clone()
        outside[_view_positions(got)] = 0
        expected = whole_storage(fresh).clone()
        expected[_view_positions(fresh)] = 0
        check_equal(f"{name}'s storage outside the view", outside, expected, case,
                    role=gap_role(getattr(case, name).layout))


def _view_positions(t):
    """The storage positions that the 1-D view ``t`` covers."""
    return t.storage_offset() + torch.arange(t.shape[0], device=t.device) * t.stride(0)


def check_index_type(outcome, case, inputs):
    """The result is an int32 tensor of shape ``(bs, W)`` on the device of the input tensor
    ``inputs``: its own device, never the parameter's spelling ("cuda" is cuda:0, "cpu:0" is
    cpu)."""
    __tracebackhide__ = True
    got = outcome.returned
    check(isinstance(got, torch.Tensor), "type(index)", type(got).__name__, "Tensor", case)
    shape = (case.bs, case.max_len)
    check(tuple(got.shape) == shape, "index.shape", tuple(got.shape), shape, case)
    check(got.dtype == torch.int32, "index.dtype", got.dtype, torch.int32, case)
    where = outcome.args[inputs].device
    check(got.device == where, "index.device", got.device, f"{where} ({inputs}'s device)", case)


HELD_CALLS = 8  # calls whose results one example holds: a pool of up to 7 buffers is caught
# and in a case whose seed is a multiple of LONG_EVERY (about one in ten, 0 among them): a pool of up to 32
LONG_HELD_CALLS, LONG_EVERY = 33, 16


def check_fresh_result(outcome, earlier, case):
    """The result is a tensor sharing storage with no argument of its call and with none of
    the ``earlier`` results (their :func:`held` aliases), the results of earlier calls still
    read (CONTRACT.md §4.6: "returns a new tensor", §11.2: however far back), empty ones aside."""
    __tracebackhide__ = True
    returned = outcome.returned
    check(isinstance(returned, torch.Tensor), "type(index)", type(returned).__name__, "Tensor", case)
    for name, arg in outcome.args.items():
        if isinstance(arg, torch.Tensor):
            check(not shares_storage(returned, arg), "index shares storage with", name, "nothing", case)
    for back, result in enumerate(reversed(earlier), 1):
        if not returned.numel() or not isinstance(result, torch.Tensor) or not result.numel():
            continue  # an empty result has no element a later call could disturb
        reused = shares_storage(returned, result)
        check(not reused, "index shares storage with", f"the index of the call {back} before it, still held", "nothing",
              case)


def check_fresh_across_calls(simacc, case):
    """:data:`HELD_CALLS` calls of ``case`` (:data:`LONG_HELD_CALLS` for some seeds: a server's
    pool of output buffers can be deep), every result held as a caller that has dropped it
    holds it (:func:`held`): each is fresh (:func:`check_fresh_result`) against all the
    earlier ones, which keep their values (checked after every call, or after the last of a
    long run) and are never written in place, even to be put back (seen by their version
    counter, outside inference mode)."""
    __tracebackhide__ = True
    kept = []
    calls = LONG_HELD_CALLS if case.seed % LONG_EVERY == 0 else HELD_CALLS
    for number in range(1, calls + 1):
        outcome = simacc.run(case)
        check_fresh_result(outcome, [alias for alias, _, _ in kept], case)
        for back, result in enumerate(reversed(kept), 1):
            check_intact(f"the index of the call {back} before this one", result, case,
                         values=calls == HELD_CALLS or number == calls)
        kept.append(held(outcome.returned))
        del outcome  # the result object itself is not kept: only what a caller keeps of it


def held(result):
    """``(alias, copy, version)``: a tensor over the result's storage that keeps no reference
    to the result object (``detach()``), a copy of its values, and its version counter. A
    caller that keeps a view of an inference tensor, or the data of a result it dropped, holds
    no more than that, so an implementation that recycles an output buffer once nobody
    references it (``sys.getrefcount``) is seen reusing storage that is still read; holding
    the result object itself would keep the buffer from ever being recycled while simacc
    watches."""
    alias = result.detach()
    return alias, alias.clone(), _version(alias)


def check_intact(what, result, case, defined=None, values=True):
    """A :func:`held` result keeps its values (with ``values``; those at ``defined`` where
    given) and was never written in place since it was returned, even to be put back (§11.2:
    an overlap scheduler reads it while the next call runs). The writes are seen by the version
    counter, which an inference tensor does not keep, and which cannot tell a write to an
    undefined entry (nobody reads it) from one to a defined entry: with ``defined``, only the
    values are judged."""
    __tracebackhide__ = True
    alias, copy, version = result
    if values:
        got, expected = (alias.cpu()[defined], copy.cpu()[defined]) if defined is not None else (alias, copy)
        check_equal(f"{what} (still held{'; its defined entries' if defined is not None else ''})", got, expected,
                    case)
    if defined is None:
        check(_version(alias) == version, f"{what} (still held)", "written in place since it was returned",
              "never written once returned", case)


def _version(t):
    """How many times ``t``'s storage was written in place through it or a view of it (a
    detached alias shares the count); None for an inference tensor, which keeps none, and
    for an empty one, which a write leaves as it was."""
    return None if t.is_inference() or not t.numel() else t._version


def whole_storage(t):
    """Every element of ``t``'s storage as a 1-D tensor, gaps of a strided view included."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())


def shares_storage(a, b):
    """Whether two tensors are one object or live in the same (non-empty) storage; the
    identity test matters for empty tensors, whose storage has no address to compare."""
    if a is b:
        return True
    sa, sb = a.untyped_storage(), b.untyped_storage()
    return sa.nbytes() > 0 and sb.nbytes() > 0 and sa.data_ptr() == sb.data_ptr()
