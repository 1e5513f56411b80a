"""The kernel op (SPEC.md, "The kernel op"; issue #11): the simulation with the length given,
``simulated_accept(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
target_tokens, width, num_accept_tokens, real_tokens)``, as upstream's Triton op runs it on
CUDA. Steps 2, 3, 5 and 6 hold with ``L = num_accept_tokens``; fixed mode writes 100 to
every element of the ``predict_tokens`` view; every tensor is read and written through its
strides, so nothing in the gaps of a strided view is ever written. The last property runs
upstream's own test grid exhaustively, so that the catalogue subsumes it.
"""

import itertools

import pytest
import torch
from hypothesis import given

import strategies as sx
from properties import support
from simacc.harness.assertions import check_equal
from simacc.harness.cases import KernelCase, TensorArg

pytestmark = pytest.mark.contracts("kernel")

cases = sx.kernel_cases()
real_cases = sx.kernel_cases(modes=("real-draft-token",))
INPUTS = ("accept_indices", "candidate_tokens", "target_tokens")
WRITTEN = ("predict_tokens", "num_correct_drafts")


@given(case=cases)
def test_kernel_index_is_an_int32_tensor_of_shape_bs_by_width(impl, device, case):
    support.check_index_type(impl.run(case, device), case, "accept_indices")


@given(case=cases)
def test_kernel_index_rows_are_root_plus_range_then_minus_one(impl, device, case):
    got = impl.run(case, device).returned
    check_equal("index", got, support.expected_index(case, case.num_accept_tokens).to(device), case)


@given(case=cases)
def test_kernel_num_correct_drafts_is_length_minus_one(impl, device, case):
    got = impl.run(case, device).args["num_correct_drafts"]
    check_equal("num_correct_drafts", got, torch.full_like(got, case.num_accept_tokens - 1), case)


@given(case=real_cases)
def test_kernel_real_mode_writes_drafts_then_bonus_at_accepted_slots(impl, device, case):
    predict = impl.run(case, device).args["predict_tokens"].cpu()
    slots = support.accepted_slots(case, case.num_accept_tokens)
    expected = support.drafts_then_bonus(case.candidate_tokens.values, case.target_tokens.values,
                                         case.num_accept_tokens)
    got = predict[slots.reshape(-1)].reshape(slots.shape)
    check_equal("predict_tokens at the accepted slots (row, j)", got, expected.int(), case)


@given(case=real_cases)
def test_kernel_real_mode_leaves_other_predict_slots_unchanged(impl, device, case):
    got = impl.run(case, device).args["predict_tokens"].cpu()
    slots = support.accepted_slots(case, case.num_accept_tokens).reshape(-1)
    expected = case.predict_tokens.values.clone()
    expected[slots] = got[slots]  # the accepted slots are another property's business
    check_equal("predict_tokens", got, expected, case)


@given(case=sx.kernel_cases(modes=("fixed",)))
def test_kernel_fixed_mode_fills_every_predict_element(impl, device, case):
    got = impl.run(case, device).args["predict_tokens"]
    check_equal("predict_tokens", got, torch.full_like(got, support.FIXED_ID), case)


@given(case=cases)
def test_kernel_writes_nothing_outside_its_views(impl, device, case):
    outcome = impl.run(case, device)
    for name in WRITTEN:
        got, fresh = outcome.args[name], getattr(case, name).on(device)
        outside = support.whole_storage(got).clone()
        outside[_view_positions(got)] = 0
        expected = support.whole_storage(fresh).clone()
        expected[_view_positions(fresh)] = 0
        check_equal(f"{name}'s storage outside the view", outside, expected, case)


def _view_positions(t):
    """The storage positions that the 1-D view ``t`` covers."""
    return t.storage_offset() + torch.arange(t.shape[0], device=t.device) * t.stride(0)


@given(case=cases)
def test_kernel_inputs_are_never_written(impl, device, case):
    support.check_inputs_untouched(impl.run(case, device), case, device, INPUTS)


@given(case=cases)
def test_kernel_result_aliases_no_input_and_no_earlier_result(impl, device, case):
    first, second = impl.run(case, device), impl.run(case, device)
    support.check_fresh_result(second, first, case)


# -- upstream's test grid, exhaustively ---------------------------------------------------

GRID_BS, GRID_WIDTHS = (0, 1, 8, 128), (1, 4, 7)


def grid_case(bs, width, length, layout, real):
    """One point of upstream's grid: roots at ``i * width``, seeded contents, every tensor
    ``contiguous`` or ``strided``."""
    gen = torch.Generator().manual_seed(bs * 1000 + width * 10 + length)
    index = torch.randint(-1, bs * width + 1, (bs, width), generator=gen, dtype=torch.int64).int()
    index[:, 0] = torch.arange(bs, dtype=torch.int32) * width

    def arg(shape, dtype, low, high):
        return TensorArg(torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype), layout)

    return KernelCase(
        accept_indices=TensorArg(index, layout),
        predict_tokens=arg((bs * width,), torch.int32, -1000, 1000),
        num_correct_drafts=arg((bs,), torch.int32, -1000, 1000),
        candidate_tokens=arg((bs, width), torch.int64, 0, 32000),
        target_tokens=arg((bs, width), torch.int64, 0, 32000),
        width=width,
        num_accept_tokens=length,
        real_tokens=real,
        seed=0,
    )


def upstream_grid():
    for bs, width, layout, real in itertools.product(GRID_BS, GRID_WIDTHS, ("contiguous", "strided"), (False, True)):
        for length in range(1, width + 1):
            yield grid_case(bs, width, length, layout, real)


def test_kernel_matches_upstreams_grid(impl, device):
    """bs {0, 1, 8, 128} x width {1, 4, 7} x every L x contiguous and strided, both modes:
    index, counts and tokens exact (upstream's one test of its op, as a property)."""
    for case in upstream_grid():
        outcome = impl.run(case, device)
        check_equal("index", outcome.returned, support.expected_index(case, case.num_accept_tokens).to(device), case)
        counts = outcome.args["num_correct_drafts"]
        check_equal("num_correct_drafts", counts, torch.full_like(counts, case.num_accept_tokens - 1), case)
        predict = outcome.args["predict_tokens"]
        check_equal("predict_tokens", predict.cpu(), expected_predict(case), case)


def expected_predict(case):
    """``predict_tokens`` after the op: all 100 in fixed mode, else the drafts and the bonus
    at the accepted slots and the old values elsewhere."""
    if not case.real_tokens:
        return torch.full_like(case.predict_tokens.values, support.FIXED_ID)
    expected = case.predict_tokens.values.clone()
    tokens = support.drafts_then_bonus(case.candidate_tokens.values, case.target_tokens.values, case.num_accept_tokens)
    expected[support.accepted_slots(case, case.num_accept_tokens).reshape(-1)] = tokens.reshape(-1).int()
    return expected
