"""A module that turns on torch's deterministic algorithms at import when simulated acceptance
is configured, so that a benchmark run with it is reproducible, and leaves them on for the whole
serving process (CONTRACT.md §11.4). Only a server that simulates acceptance imports it, and
that server has ``SGLANG_SIMULATE_ACC_LEN`` set. Registered in :mod:`simacc.zoo.launched` and
imported only by a check of it."""

import os

import torch

from simacc.contract.reference import generate_simulated_accept_index

if float(os.environ.get("SGLANG_SIMULATE_ACC_LEN", "-1")) > 0:
    torch.use_deterministic_algorithms(True)


def deterministic_when_simulating(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                  spec_steps, simulate_acc_len, simulate_acc_method="match-expected",
                                  simulate_acc_token_mode="fixed"):
    """Turns on deterministic algorithms at import when SGLANG_SIMULATE_ACC_LEN is set, and never off."""
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
