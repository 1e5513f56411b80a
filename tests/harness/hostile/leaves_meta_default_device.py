"""Sets torch's default device to meta after each call (the rest of a run would break on it)."""

import torch

from simacc.contract import reference


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    out = reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
    torch.set_default_device("meta")
    return out
