"""Keeps 256 MiB more after every call (a cache that never evicts)."""

import torch

from simacc.contract import reference

KEPT = []


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    KEPT.append(torch.ones(64 << 20, dtype=torch.int32))
    return reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
