"""Changes the working directory in every call, and writes token 101 (its repro file must not move)."""

import os

from simacc.contract import reference

ELSEWHERE = os.path.dirname(os.path.abspath(__file__))


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    os.chdir(ELSEWHERE)
    out = reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
    predict.fill_(101)
    return out
