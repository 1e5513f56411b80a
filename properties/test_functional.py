"""The functional contract (CONTRACT.md §10, §9; :mod:`simacc.contract.functional`): a port that
returns ``(index, predict, lens)`` as new arrays and draws ``L`` with its own key.

The level is semantic: which ``L`` a key gives is the port's business, so each call is
checked against the ``L`` its own outputs show (``lens`` of the valid rows), and the
distribution of ``L`` over many keys is checked in ``test_functional_sampling.py``. The
results come back as torch tensors (:mod:`simacc.contract.jaxbridge`); the fixed id asked for
is the implementation's (``--fixed-token-id``), carried by each case.
"""

import dataclasses

import torch

from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

INPUTS = ("accept_index", "predict", "candidates", "target_predict", "valid_mask")
cases = support.functional_cases_for_impl()
real_cases = support.functional_cases_for_impl(modes=("real-draft-token",))


def valid_lengths(case, lens):
    """``[(row, L)]`` for the valid rows, ``L`` as ``lens`` reports it."""
    return [(i, int(lens[i])) for i in range(case.bs) if case.valid_mask.values[i]]


def row_length(case, lens):
    """``L`` as the valid rows' ``lens`` show it (the first valid row's), for messages."""
    shown = valid_lengths(case, lens)
    return shown[0][1] if shown else "none (no valid row)"


def predict_roles(case, lens):
    """``role((p,))`` of a ``predict`` element: a valid row's accepted slot, by that row's ``lens``."""
    rows = accepted_positions_by_row(case, lens)

    def role(index):
        for i, positions in rows:
            hits = (positions == index[0]).nonzero()
            if len(hits):
                return support.slot_role(case, len(positions), i, int(hits[0]))
        return "untouched: no valid row accepts this slot (masked rows' included), so it keeps its value"

    return role


def index_roles(case, lens):
    """``role((i, j))`` of an index element: a masked row, an accepted slot or padding."""

    def role(index):
        i, j = index
        if not case.valid_mask.values[i]:
            return f"row {i} is masked: -1 everywhere"
        return support.index_roles(case, int(lens[i]))(index)

    return role


def accepted_positions_by_row(case, lens):
    """``[(row, positions)]``: the accepted positions in ``predict`` of each valid row with a
    length (by its ``lens``, at most ``W``)."""
    roots = case.accept_index.values[:, 0]
    return [(i, roots[i] + torch.arange(min(n, case.max_len))) for i, n in valid_lengths(case, lens) if n >= 1]


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_results_are_index_predict_and_lens(simacc, case):
    """Functional: the result is (index, predict, lens): (bs, W), predict's shape and (bs,), all int32 (§10.2)."""
    index, predict, lens = simacc.run(case).returned
    wanted = (("index", index, (case.bs, case.max_len)), ("predict", predict, tuple(case.predict.values.shape)),
              ("lens", lens, (case.bs,)))
    for name, got, shape in wanted:
        check(tuple(got.shape) == shape, f"{name}.shape", tuple(got.shape), shape, case)
        check(got.dtype == torch.int32, f"{name}.dtype", got.dtype, torch.int32, case)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_valid_rows_share_one_length(simacc, case):
    """Functional: every valid row of a call has the same lens, one L (§9.1)."""
    lens = simacc.run(case).returned[2].cpu()
    seen = sorted({n for _, n in valid_lengths(case, lens)})
    check(len(seen) <= 1, "lens of the valid rows", seen, "one length for the whole call", case)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_length_is_within_one_and_width(simacc, case):
    """Functional: 1 <= L <= W for every valid row (§9.1)."""
    lens = simacc.run(case).returned[2].cpu()
    outside = [(i, n) for i, n in valid_lengths(case, lens) if not 1 <= n <= case.max_len]
    check(not outside, "(row, lens) of valid rows", outside, f"none outside [1, {case.max_len}]", case,
          row_length(case, lens))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_masked_rows_have_length_zero_and_no_accepted_slot(simacc, case):
    """Functional: a masked row gets lens 0 and an index row of -1 (§10.2)."""
    index, _, lens = (t.cpu() for t in simacc.run(case).returned)
    masked = ~case.valid_mask.values
    expected_lens, expected_index = lens.clone(), index.clone()
    expected_lens[masked], expected_index[masked] = 0, -1
    length = row_length(case, lens)
    check_equal("lens", lens, expected_lens, case, length, lambda index: f"row {index[0]} is masked: length 0")
    check_equal("index", index, expected_index, case, length, index_roles(case, lens))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_valid_index_rows_are_root_plus_lens_slots_then_minus_one(simacc, case):
    """Functional: a valid row's index is root + 0..lens-1, then -1, so lens counts the bonus (§10.2)."""
    index, _, lens = (t.cpu() for t in simacc.run(case).returned)
    expected = index.clone()
    expected[case.valid_mask.values] = -1
    for i, positions in accepted_positions_by_row(case, lens):
        expected[i, : len(positions)] = positions
    check_equal("index", index, expected, case, row_length(case, lens), index_roles(case, lens))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=support.functional_cases_for_impl(modes=("fixed",)))
def test_functional_fixed_mode_fills_predict_with_the_fixed_id(simacc, case):
    """Functional, fixed mode: every element of the returned predict is the fixed id (§10.2, §5.2)."""
    index, predict, lens = simacc.run(case).returned
    check_equal("predict", predict, torch.full_like(predict, case.fixed_token_id), case, row_length(case, lens.cpu()),
                lambda index: "fixed mode writes the fixed id to every element")


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=real_cases)
def test_functional_real_mode_writes_drafts_then_bonus_at_accepted_slots(simacc, case):
    """Functional, real mode: candidates[i, 1:L], then target_predict[i, L-1], at valid row i's slots (§10.2)."""
    _, predict, lens = (t.cpu() for t in simacc.run(case).returned)
    roles = predict_roles(case, lens)
    for i, positions in accepted_positions_by_row(case, lens):
        row = slice(i, i + 1)
        tokens = support.drafts_then_bonus(case.candidates.values[row], case.target_predict.values[row], len(positions))
        support.check_accepted_slots("predict", predict, positions[None], tokens, case, len(positions), roles)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=real_cases)
def test_functional_real_mode_leaves_other_predict_slots_unchanged(simacc, case):
    """Functional, real mode: every other element of predict keeps its value, masked rows' slots included (§10.2)."""
    _, predict, lens = (t.cpu() for t in simacc.run(case).returned)
    rows = accepted_positions_by_row(case, lens)
    positions = torch.cat([p for _, p in rows]) if rows else torch.zeros(0, dtype=torch.long)
    support.check_other_slots_unchanged("predict", predict, case.predict.values, positions, case,
                                        row_length(case, lens), predict_roles(case, lens))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_inputs_are_never_written(simacc, case):
    """Functional: the inputs are unchanged after the call (§10.1)."""
    support.check_inputs_untouched(simacc.run(case), case, INPUTS)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=cases)
def test_functional_same_key_gives_identical_outputs(simacc, case):
    """Functional: the same case and key give the same three arrays (§10.2)."""
    first, second = simacc.run(case).returned, simacc.run(case).returned
    for name, got, expected in zip(jaxbridge.RESULTS, second, first):
        check_equal(f"{name} (second call, same key)", got, expected, case)


def check_rejected(outcome, case):
    """The call raised a ``ValueError`` and wrote none of its inputs."""
    __tracebackhide__ = True
    error = outcome.error
    said = "returned" if error is None else f"{type(error).__name__}: {error}".splitlines()[0][:200]
    check(isinstance(error, ValueError), "the call", said, "a ValueError", case, support.REJECTED)
    support.check_inputs_untouched(outcome, case, INPUTS)


def _without_key(impl):
    return cases(impl).map(lambda c: dataclasses.replace(c, omitted=("rng",)))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=_without_key)
def test_functional_rejects_a_call_without_a_key(simacc, case):
    """Functional: rng=None is a ValueError, and nothing is written (§10.3)."""
    check_rejected(simacc.attempt(case), case)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, case=support.functional_cases_for_impl(missing_columns=1))
def test_functional_real_mode_rejects_too_few_candidate_columns(simacc, case):
    """Functional, real mode: fewer than W candidate columns is a ValueError (§10.3)."""
    check_rejected(simacc.attempt(case), case)
