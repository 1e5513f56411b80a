"""Breaks pytest in the process that calls it, so that pytest fails with an internal error."""

import _pytest.runner

from simacc.contract import reference


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    _pytest.runner.call_and_report = None
    return reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
