"""A correct implementation whose module builds a lookup table in float64 at import, switching
torch's default dtype for the purpose and back (CONTRACT.md §11.4: what is put back is no
change). Registered in :mod:`simacc.zoo.realprocess` and imported only by a check of it."""

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base

_previous = torch.get_default_dtype()
torch.set_default_dtype(torch.float64)
try:
    _OFFSETS = torch.arange(64).to(torch.int32)  # built once, read by every call
finally:
    torch.set_default_dtype(_previous)


def builds_a_float64_table_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                     spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                     simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: its module builds a table in float64 at import, switching the default dtype and back."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    cols = _OFFSETS[:width].to(accept_index.device)
    out = torch.where(cols < length, accept_index[:, :1].to(torch.int32) + cols, -1).to(torch.int32)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)
