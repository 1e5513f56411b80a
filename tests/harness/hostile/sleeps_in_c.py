"""Blocks every call in C code (libc's sleep through ctypes), far past any time limit."""

import ctypes

LIBC = ctypes.CDLL(None)


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    LIBC.sleep(100000)
