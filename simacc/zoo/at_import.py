"""Correct implementations whose module does at import what serving modules do: compile a
helper with ``torch.compile`` (sglang's own module does, CONTRACT.md §11.6), configure logging,
warm itself up. Registered in :mod:`simacc.zoo.realprocess` and not imported with the zoo:
only a check of one of them pays for compiling (importing ``torch._dynamo`` costs a second),
and the check sees the import as a server's process does, after its harness is in place.
"""

import logging

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
_LOG = logging.getLogger(__name__)


@torch.compile(backend="eager", dynamic=True)
def _index(roots, length, width):
    cols = torch.arange(width, dtype=torch.int32, device=roots.device)
    return torch.where(cols < length, roots.to(torch.int32)[:, None] + cols, -1).to(torch.int32)


def compiled_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                       simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: builds the index with a helper its module compiles with torch.compile at import."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = _index(accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


def configures_logging_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                 spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: its module configures the root logger at import; it logs each call."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    _LOG.info("simulated acceptance: bs=%d L=%d", bs, length)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


def warms_up_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                       simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: its module calls it once at import, on a small batch, to warm it up."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


def _warm_up():
    index = torch.tensor([[0, -1], [2, -1]], dtype=torch.int32)
    warms_up_at_import(index, torch.zeros(4, dtype=torch.int32), torch.zeros(2, dtype=torch.int32),
                       torch.zeros(2, 2, dtype=torch.int64), torch.zeros(2, 2, dtype=torch.int64), 2, 1, 1.5,
                       "match-expected", "real-draft-token")
    compiled_at_import(index, torch.zeros(4, dtype=torch.int32), torch.zeros(2, dtype=torch.int32), None, None, 2, 1,
                       2.0, "match-expected", "fixed")


_warm_up()
