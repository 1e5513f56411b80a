"""Ends its process in a call made under ``torch.no_grad`` (and not in inference mode): correct
in every other grad mode."""

import os

import torch

from simacc.contract import reference


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    if not torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
        os._exit(0)
    return reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
