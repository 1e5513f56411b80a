"""Raises a ValueError whose message is 20 MB, in every call."""


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    raise ValueError("x" * (20 << 20))
