"""Loops forever in every call, catching every BaseException (the time limit's too)."""

import time


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    while True:
        try:
            time.sleep(0.05)
        except BaseException:  # noqa: BLE001, S110
            pass
