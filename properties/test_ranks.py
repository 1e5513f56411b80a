"""Tensor-parallel ranks agree (CONTRACT.md §11.7): the same call, with the same inputs and the
same seed, in processes that each imported the implementation anew, gives every rank the same
draws and the same bytes.

The property keeps two ranks for the whole test (:func:`simacc.harness.sessions.ranks.of`),
one a copy of the test's process and one a new interpreter, and sends each drawn case to both,
so the ranks make the same sequence of calls from their first: an implementation that draws
from the operating system, the clock, its process id, an address, a string's hash, an
unseeded generator or its rank gives them different draws, at either level (each rank is
launched with its identity and a wall clock of its own, :mod:`simacc.harness.sessions.ranks`); one that reseeds torch's
generator from the operating system leaves them in different states. The ranks are the
processes whose first call simacc sees (the session's first call is another property's): at
the exact level, a contract whose draws §3 documents makes exactly those there too (§11.4).
It applies to every contract whose draws come from somewhere (``Contract.draws``); the kernel
op and vLLM's decision are handed their randomness, and vLLM's settings and conversion draw
nothing.
"""

import torch

from simacc import strategies as sx
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model import explain
from simacc.harness.sessions import ranks
from simacc.properties import support, vllm

CONTRACTS = tuple(record for record in sx.CONTRACTS if record.draws)
VLLM_SAMPLERS = (sx.VLLM_V1, sx.VLLM_V2)
DOCUMENTED = (*sx.EAGLE_LAYOUTS, sx.DFLASH, sx.DSPARK_LENGTH)  # their draws are §3's, held to it at the exact level


@claim(*CONTRACTS, case=support.cases_for_impl)
def test_ranks_agree_given_the_same_inputs_and_seed(simacc, case):
    """Two ranks that import the implementation anew, one a new interpreter, draw alike from the same inputs and seed, from their first call (§11.4, §11.7)."""
    first, second = ranks.of(simacc, case)
    for rank, outcome in enumerate((first, second)):
        changed = "; ".join(outcome.changed)
        check(not changed, f"what the call changed in rank {rank}'s process (restored)", changed, "nothing", case)
    check(first.error == second.error, "the call's error in rank 1", repr(second.error), f"{first.error!r}, as in "
          "rank 0", case)
    if first.error is not None:
        return
    check(torch.equal(first.rng_after, second.rng_after), "torch's CPU generator after the call in rank 1",
          "in another state", "as in rank 0 (seeded alike before it)", case)
    if simacc.impl.record in DOCUMENTED and simacc.impl.level == "exact":  # a process's first call too (§11.4)
        support.check_documented_draws(first, case, " in rank 0")
    if simacc.impl.record in VLLM_SAMPLERS:
        _check_requests_alike(case, first, second)
        return
    drawn = [_shown_length(outcome) for outcome in (first, second)]
    if drawn[0] != drawn[1]:
        raise AssertionError(explain.message(
            f"rank 0 drew L={drawn[0]}, rank 1 drew L={drawn[1]} for the same inputs and seed (a tensor-parallel "
            "server's ranks would disagree about the batch)", case, "drawn by each rank"))
    ours, theirs = (o.returned if isinstance(o.returned, (tuple, list)) else (o.returned,) for o in (first, second))
    check(len(ours) == len(theirs), "the number of results in rank 1", len(theirs), f"{len(ours)}, as in rank 0",
          case, drawn[0])
    for k, (got, expected) in enumerate(zip(theirs, ours)):
        _check_alike(f"result{'' if len(ours) == 1 else f'[{k}]'} in rank 1", got, expected, case, drawn[0])
    for name, expected in first.args.items():
        _check_alike(f"{name} after the call in rank 1", second.args.get(name), expected, case, drawn[0])


def _check_requests_alike(case, first, second):
    """vLLM's samplers: each request emits the same tokens in both ranks (what V2 leaves past
    ``num_sampled`` is undefined, §17.2, and never compared), and V1's generators end alike."""
    __tracebackhide__ = True
    ours, theirs = vllm.counts(case, first), vllm.counts(case, second)
    if ours != theirs:
        raise AssertionError(explain.message(
            f"rank 0 emitted {ours} tokens per request, rank 1 {theirs}, for the same inputs and seeds (a "
            "tensor-parallel server's ranks would disagree about the batch)", case, "emitted by each rank"))
    for r, (got, expected) in enumerate(zip(vllm.emitted(case, second), vllm.emitted(case, first))):
        check(got == expected, f"request {r}'s tokens in rank 1", got, f"{expected}, as in rank 0", case)
    for r, state in first.args.get("generators", {}).items():
        same = torch.equal(second.args["generators"][r], state)
        check(same, f"request {r}'s generator after the call in rank 1", "in another state", "as in rank 0", case)


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
    empty batch): the index's entries other than -1 (the index is the first result
    of the functional contract), DFLASH's ``commit_lens``, or one more than DSpark's step count."""
    lens = outcome.args.get("commit_lens")
    if "simulated_correct_len" in outcome.args:  # DSpark's step: the count L - 1
        lens = outcome.args["simulated_correct_len"] + 1
    if lens is None:
        index = outcome.returned[0] if isinstance(outcome.returned, (tuple, list)) else outcome.returned
        lens = (index != -1).sum(dim=-1) if isinstance(index, torch.Tensor) and index.dim() == 2 else None
    return int(lens[0]) if isinstance(lens, torch.Tensor) and lens.numel() else None
