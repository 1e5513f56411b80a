"""Mutants with the legacy signature (before token modes): fixed mode only, token id 100.

The first is no invented mistake: it is the oldest private version as CONTRACT.md §6.3 describes
it, which simacc must flag as non-conforming.
"""

import math

import torch

from simacc.zoo import base
from simacc.zoo.base import register


@register("sampling bounds", "length_is_within_one_and_width", "length_matches_the_documented_draw")
def oldest_private_version(accept_index, predict, num_correct_drafts, simulate_acc_len, bs, spec_steps):
    """The oldest signature: Gaussian only, clamped to [1, spec_steps], so L == W is impossible."""
    base.check_length(simulate_acc_len)
    draw = torch.normal(mean=simulate_acc_len, std=1.0, size=(1,), device="cpu")
    length = int(torch.round(torch.clamp(draw, 1, spec_steps)).item())
    return base.simulate(length, accept_index, predict, num_correct_drafts, None, None, spec_steps + 1, "fixed")


@register("device", "index_is_a_fresh_int32_tensor_of_shape_bs_by_width", "index_rows_are_root_plus_range_then_minus_one")
def index_allocated_on_cuda(accept_index, predict, num_accepted_drafts, bs, spec_steps, simulate_acc_len, simulate_acc_method):
    """Allocates the index on "cuda" unconditionally, as the legacy code did (fails on a CPU)."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = torch.full((bs, width), -1, dtype=torch.int32, device="cuda")
    out[:, :length] = accept_index[:, :1].to("cuda") + torch.arange(length, dtype=torch.int32, device="cuda")
    return base.finish(out, length, predict, num_accepted_drafts, None, None, "fixed")


@register("num_correct_drafts", "num_correct_drafts_is_length_minus_one", "fixed_mode_is_byte_identical_to_legacy")
def accept_length_counts_the_bonus(accept_index, predict, accept_length, bs, spec_steps, simulate_acc_len, simulate_acc_method):
    """Sets accept_length to L, the count with the bonus, instead of the L - 1 drafts."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    base.simulate(length, accept_index, predict, accept_length, None, None, width, "fixed")
    accept_length.fill_(length)
    return base.index(accept_index[:, 0], length, width)


@register("sampling distribution", "index_rows_are_root_plus_range_then_minus_one",
          "generator_consumes_exactly_the_documented_draws", "length_is_one_value_for_the_whole_batch")
def one_length_per_request(accept_index, predict, num_correct_drafts, bs, spec_steps, simulate_acc_len, simulate_acc_method):
    """Draws a length for every request instead of one for the whole batch."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    draws = [base.sample(simulate_acc_len, simulate_acc_method, width) for _ in range(bs)]
    lengths = torch.tensor(draws, dtype=torch.int32, device=accept_index.device).reshape(bs)
    cols = torch.arange(width, dtype=torch.int32, device=accept_index.device)
    out = torch.where(cols < lengths[:, None], accept_index[:, :1].to(torch.int32) + cols, -1).to(torch.int32)
    num_correct_drafts.copy_(lengths - 1)
    predict.fill_(base.FIXED)
    return out


@register("defaults", "omitted_arguments_take_their_documented_defaults")
def legacy_default_method_is_multinomial(accept_index, predict, num_correct_drafts, bs, spec_steps, simulate_acc_len,
                                         simulate_acc_method="multinomial"):
    """Defaults the method to multinomial instead of match-expected."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, None, None, width, "fixed")


@register("sampling distribution", "length_matches_the_documented_draw")
def legacy_weights_in_half_precision(accept_index, predict, num_correct_drafts, bs, spec_steps, simulate_acc_len,
                                     simulate_acc_method="match-expected"):
    """match-expected builds its two weights in float16: at the edge of the seeded draw, L is the other one."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    x = max(1.0, min(width, simulate_acc_len))
    lo = math.floor(x)
    if simulate_acc_method != "match-expected" or lo == width:
        length = base.sample(simulate_acc_len, simulate_acc_method, width)
    else:
        weights = torch.tensor([1 - (x - lo), x - lo], dtype=torch.float16)
        length = lo + torch.multinomial(weights, 1).item()
    return base.simulate(length, accept_index, predict, num_correct_drafts, None, None, width, "fixed")


@register("layout", "inputs_are_never_written")
def legacy_fills_the_views_span(accept_index, predict, num_correct_drafts, bs, spec_steps, simulate_acc_len,
                                simulate_acc_method):
    """Fills predict and the counts over the memory their views span, in one launch each: a strided view's gaps get written too."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = base.index(accept_index[:, 0], length, width)
    base.span(num_correct_drafts).fill_(length - 1)
    base.span(predict).fill_(base.FIXED)
    return out
