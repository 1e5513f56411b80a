"""A module that installs a SIGTERM handler of its own at import, to flush its call counters
when the server shuts down, replacing the handler the serving process set (CONTRACT.md §11.4).
Registered in :mod:`simacc.zoo.realprocess` and imported only by a check of it."""

import signal

from simacc.contract.reference import generate_simulated_accept_index

CALLS = [0]


def _flush(signum, frame):
    print(f"simulated acceptance: {CALLS[0]} calls")


signal.signal(signal.SIGTERM, _flush)


def handles_sigterm_at_import(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                              simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """Installs a SIGTERM handler of its own at import, to flush its counters, in place of the server's."""
    CALLS[0] += 1
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
