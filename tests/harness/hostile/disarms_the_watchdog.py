"""Disarms faulthandler's watchdog and ignores SIGALRM, then sleeps in every call."""

import faulthandler
import signal
import time


def generate(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps, simulate_acc_len,
             simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    faulthandler.cancel_dump_traceback_later()
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(100000)
