"""A correct implementation whose module compiles a helper with ``torch.compile`` at import, and
runs it once there, as sglang's own module does (CONTRACT.md §11.6). Registered in
:mod:`simacc.zoo.realprocess` and not imported with the zoo: only a check of it pays for
compiling (importing ``torch._dynamo`` costs a second or more), and the check sees the import
as a server's process does, after its harness is in place.
"""

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base


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


_index(torch.tensor([0, 2], dtype=torch.int32), 1, 2)  # compiled here, at import
