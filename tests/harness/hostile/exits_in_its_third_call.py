"""Ends its process with exit code 0 in its third call."""

import os

from simacc.contract import reference

CALLS = []


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    CALLS.append(1)
    if len(CALLS) == 3:
        os._exit(0)
    return reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
