"""A correct implementation whose module configures the root logger at import and logs each
call, as serving modules do. Registered in :mod:`simacc.zoo.realprocess` and imported only by a
check of it: the check sees the import as a server's process does, after its harness is in place.
"""

import logging

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
_LOG = logging.getLogger(__name__)


def configures_logging_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                 spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: its module configures the root logger at import; it logs each call."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    _LOG.info("simulated acceptance: bs=%d L=%d", bs, length)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)
