"""A module that reads sglang's simulation settings when it is imported, as sglang's own does
(CONTRACT.md §5.1, §5.4): the method's and token mode's defaults into its signature, and the
acceptance length to say in its log that simulation is on. Correct: it changes nothing of the
process. Registered in :mod:`simacc.zoo.launched` and imported only by a check of it."""

import logging
import os

from simacc.contract.reference import generate_simulated_accept_index

METHOD = os.environ.get("SGLANG_SIMULATE_ACC_METHOD", "match-expected")
TOKEN_MODE = os.environ.get("SGLANG_SIMULATE_ACC_TOKEN_MODE", "fixed")
SIMULATING = float(os.environ.get("SGLANG_SIMULATE_ACC_LEN", "-1")) > 0
if SIMULATING:
    logging.getLogger(__name__).info("simulated acceptance on: method %s, token mode %s", METHOD, TOKEN_MODE)


def reads_its_settings_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                                 simulate_acc_len, simulate_acc_method=METHOD, simulate_acc_token_mode=TOKEN_MODE):
    """Correct: reads SGLANG_SIMULATE_ACC_* at import, into its defaults and a log line."""
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
