"""Sets oneDNN's float32 matmul precision to bf16 with torch's per-backend setting after each
call: a state torch's one-name getter cannot say, and raises on."""

import torch

from simacc.contract import reference


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    out = reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    return out
