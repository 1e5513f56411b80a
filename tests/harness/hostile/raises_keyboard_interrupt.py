"""Raises KeyboardInterrupt itself, with no Ctrl-C pressed."""


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    raise KeyboardInterrupt
