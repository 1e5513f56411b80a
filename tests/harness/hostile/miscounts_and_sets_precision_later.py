"""Counts one draft too many, and starts a thread on its first call that sets torch's float32 matmul precision to "high" a while after the call has returned: two faults, the second found only at the session's end."""

import threading
import time

import torch

from simacc.contract import reference


def _later():
    time.sleep(0.3)
    torch.set_float32_matmul_precision("high")


_THREAD = []


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    if not _THREAD:
        _THREAD.append(threading.Thread(target=_later, name="later-too"))
        _THREAD[0].start()
    out = reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
    num_correct_drafts.add_(1)
    return out
