"""A correct implementation whose module calls it once at import, on a small batch, to warm it
up, as serving modules do (its draw at import moves torch's generator before the harness seeds
it for each call). Registered in :mod:`simacc.zoo.realprocess` and imported only by a check of
it: the check sees the import as a server's process does, after its harness is in place.
"""

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base


def warms_up_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                       simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: its module calls it once at import, on a small batch, to warm it up."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


warms_up_at_import(torch.tensor([[0, -1], [2, -1]], dtype=torch.int32), torch.zeros(4, dtype=torch.int32),
                   torch.zeros(2, dtype=torch.int32), torch.zeros(2, 2, dtype=torch.int64),
                   torch.zeros(2, 2, dtype=torch.int64), 2, 1, 1.5, "match-expected", "real-draft-token")
