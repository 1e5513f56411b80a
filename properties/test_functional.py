"""The functional contract (issue #11, :mod:`simacc.contract.functional`; SPEC.md, "A functional port:
sglang-jax" and "Semantic conformance"): a port that returns ``(index, predict, lens)`` as
new arrays and draws ``L`` with its own key.

The level is semantic: which ``L`` a key gives is the port's business, so each call is
checked against the ``L`` its own outputs show (``lens`` of the valid rows), and the
distribution of ``L`` over many keys is checked in ``test_functional_sampling.py``. The
results come back as torch tensors (:mod:`simacc.contract.jaxbridge`); the fixed id asked for is the
check's ``--fixed-token-id``, carried by each case.
"""

import dataclasses

import pytest
import torch
from hypothesis import given

import strategies as sx
from properties import support
from simacc.contract import jaxbridge
from simacc.harness.assertions import check, check_equal

pytestmark = [pytest.mark.contracts("functional"),
              pytest.mark.skipif(jaxbridge.missing() is not None, reason=str(jaxbridge.missing()))]

cases = sx.functional_cases()
real_cases = sx.functional_cases(modes=("real-draft-token",))
INPUTS = ("accept_index", "predict", "candidates", "target_predict", "valid_mask")


def valid_lengths(case, lens):
    """``[(row, L)]`` for the valid rows, ``L`` as ``lens`` reports it."""
    return [(i, int(lens[i])) for i in range(case.bs) if case.valid_mask.values[i]]


def accepted_slots(case, lens):
    """``[(row, slots)]``: the accepted positions in ``predict`` of each valid row with a
    length (by its ``lens``, at most ``W``)."""
    roots = case.accept_index.values[:, 0]
    return [(i, roots[i] + torch.arange(min(n, case.max_len))) for i, n in valid_lengths(case, lens) if n >= 1]


@given(case=cases)
def test_functional_results_are_index_predict_and_lens(impl, device, case):
    index, predict, lens = impl.run(case, device).returned
    wanted = (("index", index, (case.bs, case.max_len)), ("predict", predict, tuple(case.predict.values.shape)),
              ("lens", lens, (case.bs,)))
    for name, got, shape in wanted:
        check(tuple(got.shape) == shape, f"{name}.shape", tuple(got.shape), shape, case)
        check(got.dtype == torch.int32, f"{name}.dtype", got.dtype, torch.int32, case)


@given(case=cases)
def test_functional_valid_rows_share_one_length(impl, device, case):
    lens = impl.run(case, device).returned[2].cpu()
    seen = sorted({n for _, n in valid_lengths(case, lens)})
    check(len(seen) <= 1, "lens of the valid rows", seen, "one length for the whole call", case)


@given(case=cases)
def test_functional_length_is_within_one_and_width(impl, device, case):
    lens = impl.run(case, device).returned[2].cpu()
    outside = [(i, n) for i, n in valid_lengths(case, lens) if not 1 <= n <= case.max_len]
    check(not outside, "(row, lens) of valid rows", outside, f"none outside [1, {case.max_len}]", case)


@given(case=cases)
def test_functional_masked_rows_have_length_zero_and_no_accepted_slot(impl, device, case):
    index, _, lens = (t.cpu() for t in impl.run(case, device).returned)
    masked = ~case.valid_mask.values
    expected_lens, expected_index = lens.clone(), index.clone()
    expected_lens[masked], expected_index[masked] = 0, -1
    check_equal("lens", lens, expected_lens, case)
    check_equal("index", index, expected_index, case)


@given(case=cases)
def test_functional_valid_index_rows_are_root_plus_lens_slots_then_minus_one(impl, device, case):
    index, _, lens = (t.cpu() for t in impl.run(case, device).returned)
    expected = index.clone()
    expected[case.valid_mask.values] = -1
    for i, slots in accepted_slots(case, lens):
        expected[i, : len(slots)] = slots
    check_equal("index", index, expected, case)


@given(case=sx.functional_cases(modes=("fixed",)))
def test_functional_fixed_mode_fills_predict_with_the_fixed_id(impl, device, case):
    predict = impl.run(case, device).returned[1]
    check_equal("predict", predict, torch.full_like(predict, case.fixed_token_id), case)


@given(case=real_cases)
def test_functional_real_mode_writes_drafts_then_bonus_at_accepted_slots(impl, device, case):
    _, predict, lens = (t.cpu() for t in impl.run(case, device).returned)
    for i, slots in accepted_slots(case, lens):
        row = slice(i, i + 1)
        tokens = support.drafts_then_bonus(case.candidates.values[row], case.target_predict.values[row], len(slots))
        check_equal(f"predict at row {i}'s accepted slots", predict[slots], tokens[0].int(), case)


@given(case=real_cases)
def test_functional_real_mode_leaves_other_predict_slots_unchanged(impl, device, case):
    _, predict, lens = (t.cpu() for t in impl.run(case, device).returned)
    expected = case.predict.values.clone()
    for _, slots in accepted_slots(case, lens):
        expected[slots] = predict[slots]  # the accepted slots are another property's business
    check_equal("predict", predict, expected, case)


@given(case=cases)
def test_functional_inputs_are_never_written(impl, device, case):
    support.check_inputs_untouched(impl.run(case, device), case, device, INPUTS)


@given(case=cases)
def test_functional_same_key_gives_identical_outputs(impl, device, case):
    first, second = impl.run(case, device).returned, impl.run(case, device).returned
    for name, got, expected in zip(jaxbridge.RESULTS, second, first):
        check_equal(f"{name} (second call, same key)", got, expected, case)


def check_rejected(outcome, case, device):
    """The call raised a ``ValueError`` and wrote none of its inputs."""
    __tracebackhide__ = True
    error = outcome.error
    said = "returned" if error is None else f"{type(error).__name__}: {error}".splitlines()[0][:200]
    check(isinstance(error, ValueError), "the call", said, "a ValueError", case)
    support.check_inputs_untouched(outcome, case, device, INPUTS)


@given(case=cases.map(lambda c: dataclasses.replace(c, omitted=("rng",))))
def test_functional_rejects_a_call_without_a_key(impl, device, case):
    check_rejected(impl.attempt(case, device), case, device)


@given(case=sx.functional_cases(missing_columns=1))
def test_functional_real_mode_rejects_too_few_candidate_columns(impl, device, case):
    check_rejected(impl.attempt(case, device), case, device)
