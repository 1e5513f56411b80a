"""Prints a megabyte in every call (a debug print left in), through Python and through C."""

import os
import sys

from simacc.contract import reference

MEGABYTE = "x" * (1 << 20)


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    print(MEGABYTE)
    sys.stdout.flush()
    os.write(2, MEGABYTE.encode())
    return reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
