"""The kernel op (CONTRACT.md §8): the simulation with the length given,
``simulated_accept(*, accept_indices, predict_tokens, num_correct_drafts, candidate_tokens,
target_tokens, width, num_accept_tokens, real_tokens)``, as upstream's Triton op runs it on
CUDA. Steps 2, 3, 5 and 6 hold with ``L = num_accept_tokens``; fixed mode writes the fixed
id to every element of the ``predict_tokens`` view; every tensor is read and written through its
strides, so nothing in the gaps of a strided view is ever written. The last property runs
upstream's own test grid exhaustively, so that the catalogue subsumes it.
"""

import itertools

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg
from simacc.properties import support
from simacc.strategies import KernelCase

cases = sx.kernel_cases()
real_cases = sx.kernel_cases(modes=("real-draft-token",))
INPUTS = ("accept_indices", "candidate_tokens", "target_tokens")
WRITTEN = ("predict_tokens", "num_correct_drafts")


@claim(sx.KERNEL, case=cases)
def test_kernel_index_is_an_int32_tensor_of_shape_bs_by_width(simacc, case):
    """Kernel op: the result is an int32 (bs, width) tensor on the inputs' device (§8.1)."""
    support.check_index_type(simacc.run(case), case, "accept_indices")


@claim(sx.KERNEL, case=cases)
def test_kernel_index_rows_are_root_plus_range_then_minus_one(simacc, case):
    """Kernel op: row i of the index is root_i + 0..L-1, then -1, with L = num_accept_tokens (§8.2)."""
    got = simacc.run(case).returned
    support.check_index_rows(got, case, case.num_accept_tokens, got.device)


@claim(sx.KERNEL, case=cases)
def test_kernel_num_correct_drafts_is_length_minus_one(simacc, case):
    """Kernel op: every element of num_correct_drafts becomes L - 1 (§8.2)."""
    got = simacc.run(case).args["num_correct_drafts"]
    support.check_counts(got, case, case.num_accept_tokens, got.device)


@claim(sx.KERNEL, case=real_cases)
def test_kernel_real_mode_writes_drafts_then_bonus_at_accepted_slots(simacc, case):
    """Kernel op, real mode: the drafts, then the bonus, at each row's accepted slots (§8.2)."""
    length = case.num_accept_tokens
    tokens = support.drafts_then_bonus(case.candidate_tokens.values, case.target_tokens.values, length)
    support.check_accepted_slots("predict_tokens", simacc.run(case).args["predict_tokens"],
                                 support.accepted_positions(case, length), tokens, case, length)


@claim(sx.KERNEL, case=real_cases)
def test_kernel_real_mode_leaves_other_predict_slots_unchanged(simacc, case):
    """Kernel op, real mode: every other element of predict_tokens keeps its value (§8.2)."""
    positions = support.accepted_positions(case, case.num_accept_tokens)
    predict = simacc.run(case).args["predict_tokens"]
    support.check_other_slots_unchanged("predict_tokens", predict, case.predict_tokens.values, positions, case,
                                        case.num_accept_tokens)


@claim(sx.KERNEL, case=sx.kernel_cases(modes=("fixed",)))
def test_kernel_fixed_mode_fills_every_predict_element(simacc, case):
    """Kernel op, fixed mode: every element of the predict_tokens view becomes the fixed id (§8.2)."""
    got = simacc.run(case).args["predict_tokens"]
    check_equal("predict_tokens", got, torch.full_like(got, simacc.impl.fixed_token_id), case,
                role=lambda index: "fixed mode writes the fixed id to every element of the view")


@claim(sx.KERNEL, case=cases)
def test_kernel_writes_nothing_outside_its_views(simacc, case):
    """Kernel op: nothing in the gaps of a strided predict_tokens or num_correct_drafts is written (§8.3)."""
    support.check_nothing_outside_views(simacc.run(case), case, WRITTEN)


@claim(sx.KERNEL, case=cases)
def test_kernel_inputs_are_never_written(simacc, case):
    """Kernel op: accept_indices and the token tensors are never written (§8.2)."""
    support.check_inputs_untouched(simacc.run(case), case, INPUTS)


@claim(sx.KERNEL, case=cases)
def test_kernel_result_aliases_no_input_and_no_earlier_result(simacc, case):
    """Kernel op: the index shares storage with no argument and no earlier result (§8.2)."""
    support.check_fresh_across_calls(simacc, case)


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


@claim(sx.KERNEL)
def test_kernel_matches_upstreams_grid(simacc):
    """Upstream's grid, bs {0, 1, 8, 128} x width {1, 4, 7} x every L x contiguous and strided, both modes:
    index, counts and tokens exact (upstream's one test of its op, as a property)."""
    for case in upstream_grid():
        outcome = simacc.run(case)
        length = case.num_accept_tokens
        support.check_index_rows(outcome.returned, case, length, outcome.device)
        support.check_counts(outcome.args["num_correct_drafts"], case, length, outcome.device)
        predict = outcome.args["predict_tokens"]
        check_equal("predict_tokens", predict.cpu(), expected_predict(case, simacc.impl.fixed_token_id), case,
                    length, support.predict_roles(case, length))


def expected_predict(case, fixed_token_id):
    """``predict_tokens`` after the op: all the fixed id in fixed mode, else the drafts and
    the bonus at the accepted slots and the old values elsewhere."""
    if not case.real_tokens:
        return torch.full_like(case.predict_tokens.values, fixed_token_id)
    expected = case.predict_tokens.values.clone()
    tokens = support.drafts_then_bonus(case.candidate_tokens.values, case.target_tokens.values, case.num_accept_tokens)
    expected[support.accepted_positions(case, case.num_accept_tokens).reshape(-1)] = tokens.reshape(-1).int()
    return expected
