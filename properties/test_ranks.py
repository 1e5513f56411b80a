"""Tensor-parallel ranks agree (CONTRACT.md §11.7): the same call, with the same inputs and the
same seed, in processes that each imported the implementation anew, gives every rank the same
``L`` and the same bytes.

The property keeps two ranks for the whole test (:func:`simacc.harness.sessions.ranks.of`)
and sends each drawn case to both, so the ranks make the same sequence of calls from their
first: an implementation that draws from the operating system, the clock, its process id or
an unseeded numpy generator gives them different lengths, at either level. The kernel op is
given ``L`` and draws nothing (§8).
"""

import torch

from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model import explain
from simacc.harness.sessions import ranks
from simacc.properties import support

CONTRACTS = ("eagle", "legacy", "dflash", "functional", "dspark_length", "dspark_bonus")


@claim(*CONTRACTS, case=support.cases_for_impl)
def test_ranks_agree_given_the_same_inputs_and_seed(simacc, case):
    """Two ranks that import the implementation anew get the same L and bytes from the same inputs and seed (§11.7)."""
    first, second = ranks.of(simacc, case)
    drawn = [_shown_length(outcome) for outcome in (first, second)]
    if drawn[0] != drawn[1]:
        raise AssertionError(explain.message(
            f"rank 0 drew L={drawn[0]}, rank 1 drew L={drawn[1]} for the same inputs and seed (a tensor-parallel "
            "server's ranks would disagree about the batch)", case, "drawn by each rank"))
    check(first.error == second.error, "the call's error in rank 1", repr(second.error), f"{first.error!r}, as in "
          "rank 0", case, drawn[0])
    ours, theirs = (o.returned if isinstance(o.returned, (tuple, list)) else (o.returned,) for o in (first, second))
    check(len(ours) == len(theirs), "the number of results in rank 1", len(theirs), f"{len(ours)}, as in rank 0",
          case, drawn[0])
    for k, (got, expected) in enumerate(zip(theirs, ours)):
        _check_alike(f"result{'' if len(ours) == 1 else f'[{k}]'} in rank 1", got, expected, case, drawn[0])
    for name, expected in first.args.items():
        _check_alike(f"{name} after the call in rank 1", second.args.get(name), expected, case, drawn[0])


def _check_alike(what, got, expected, case, length):
    """``got`` (rank 1's) is ``expected`` (rank 0's): every byte of a tensor, else ``==`` (NaN
    alike)."""
    __tracebackhide__ = True
    if isinstance(expected, torch.Tensor):
        check_equal(what, got, expected, case, length)
    else:
        alike = got == expected or (got != got and expected != expected)  # NaN, as a length may be
        check(alike, what, repr(got), f"{expected!r}, as in rank 0", case, length)


def _shown_length(outcome):
    """``L`` as the first row shows it in one rank's outcome, or None where no row does (an
    empty batch, an error): the index's entries other than -1 (the index is the first result
    of the functional contract), DFLASH's ``commit_lens``, or one more than DSpark's step count."""
    if outcome.error is not None:
        return None
    lens = outcome.args.get("commit_lens")
    if "simulated_correct_len" in outcome.args:  # DSpark's step: the count L - 1
        lens = outcome.args["simulated_correct_len"] + 1
    if lens is None:
        index = outcome.returned[0] if isinstance(outcome.returned, (tuple, list)) else outcome.returned
        lens = (index != -1).sum(dim=-1) if isinstance(index, torch.Tensor) and index.dim() == 2 else None
    return int(lens[0]) if isinstance(lens, torch.Tensor) and lens.numel() else None
