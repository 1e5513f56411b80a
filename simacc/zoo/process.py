"""Mutants that leave the process changed (CONTRACT.md §11.4): each computes the right
result, then leaves one piece of process-wide state the way a serving process would not want
it. The runner puts the state back after every call and fails whichever property made the
call, so a change made once, on the first call of a process, fails the property that happened
to call first; ``leaves_the_process_as_it_found_it`` judges the import as well. Two act on
torch's generator on their first call, which only the ranks see (new processes, whose first
call is the rank property's). Two correct ones set state for the length of their call, or
once, at import, and put it back.
"""

import os
import signal
import threading
import time

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.contract.reference import generate_simulated_accept_index
from simacc.zoo.base import register

PROCESS = "leaves_the_process_as_it_found_it"
RANKS = "ranks_agree_given_the_same_inputs_and_seed"  # its processes' first calls are the ones simacc judges


@register("process state", PROCESS)
def leaves_default_dtype_float64(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Switches torch's default dtype to float64 for its own arithmetic and never back."""
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    torch.set_default_dtype(torch.float64)
    return out


@register("process state", PROCESS)
def leaves_one_more_thread(accept_index, predict, num_correct_drafts, candidates, target_predict,
                           bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Grows torch's intra-op thread pool by one to go faster and never shrinks it back."""
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    torch.set_num_threads(torch.get_num_threads() + 1)
    return out


@register("process state", PROCESS)
def leaves_deterministic_algorithms_on(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                       bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Turns on torch's deterministic algorithms for reproducible runs, for every caller after it."""
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    torch.use_deterministic_algorithms(True)
    return out


@register("process state", PROCESS)
def stays_in_its_own_folder(accept_index, predict, num_correct_drafts, candidates, target_predict,
                            bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Changes into its own package folder to find a data file, and stays there."""
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("process state", PROCESS)
def leaves_matmul_precision_high(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                 bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Sets torch's float32 matmul precision to "high" (TF32 on CUDA) for speed, for every caller after it."""
    torch.set_float32_matmul_precision("high")
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("process state", PROCESS)
def leaves_anomaly_detection_on(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Turns on autograd's anomaly detection, a debugging aid left in, and never off: every later autograd op in the process records a traceback."""
    torch.autograd.set_detect_anomaly(True)
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("process state", "rejects_nonpositive_or_nan_length_before_writing")
def leaves_signals_blocked_when_it_raises(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                          bs, spec_steps, simulate_acc_len, simulate_acc_method,
                                          simulate_acc_token_mode):
    """Blocks SIGINT and SIGTERM while it works and unblocks them only when it returns: a call that raises leaves them blocked, and the server's handlers never run."""
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    return out


_KEPT = []


@register("process state", "result_aliases_no_input")
def leaves_inference_mode_on(accept_index, predict, num_correct_drafts, candidates, target_predict,
                             bs, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode):
    """Enters inference mode once, for speed, and keeps it: a no_grad server's every later op runs in it."""
    if not _KEPT:
        _KEPT.append(torch.inference_mode())
        _KEPT[0].__enter__()
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


_FIRST = {"done": False}


@register("process state", "index_rows_are_root_plus_range_then_minus_one")
def turns_on_deterministic_algorithms_on_its_first_call(accept_index, predict, num_correct_drafts, candidates,
                                                        target_predict, bs, spec_steps, simulate_acc_len,
                                                        simulate_acc_method, simulate_acc_token_mode):
    """Turns on torch's deterministic algorithms (warn only) when it first runs, as a lazy set-up does, and never turns them off."""
    if not _FIRST["done"]:
        _FIRST["done"] = True
        torch.use_deterministic_algorithms(True, warn_only=True)
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


_WARMED = {"done": False}


@register("process state", RANKS)
def warms_up_with_a_draw_on_its_first_call(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Warms its kernels up with one more draw from torch's generator on its first call, after drawing L: every later step follows a shifted stream."""
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    if not _WARMED["done"]:
        _WARMED["done"] = True
        torch.randint(0, 2, (1,))
    return out


_SEEDED = {"done": False}


@register("process state", RANKS)
def reseeds_the_generator_on_its_first_call(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                            spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                            simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Reseeds torch's generator from the operating system on its first call (a lazy set-up's torch.seed()), after drawing L: each rank follows a stream of its own from then on."""
    out = generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    if not _SEEDED["done"]:
        _SEEDED["done"] = True
        torch.seed()
    return out


@register("correct")
def guards_its_call_with_a_signal_handler(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                          spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: installs a SIGUSR1 handler of its own for the length of its call and puts the caller's back."""
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: None)
    try:
        return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                               bs, spec_steps, simulate_acc_len, simulate_acc_method,
                                               simulate_acc_token_mode)
    finally:
        signal.signal(signal.SIGUSR1, previous)


def _warm_up(keep, delay):
    """A warm-up's work, ``delay`` seconds on (out of the first steps' way): matmuls at "high"
    float32 precision (TF32 on CUDA), kept for the calls after it (``keep``) or put back."""
    time.sleep(delay)
    found = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    x = torch.full((128, 128), 1 / 128)
    for _ in range(64):
        x = x @ x
    if not keep:
        torch.set_float32_matmul_precision(found)


_WARM_UPS = []
WARM_UP_DELAY = 1.0  # seconds: calls go on meanwhile, and the change lands between two of them or after the last


@register("process state", PROCESS)
def warms_up_on_a_thread_it_leaves_running(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                           simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Starts a warm-up thread on its first call and returns without it: the thread sets the float32 matmul precision to "high" for good, after the call, between calls or after the last."""
    if not _WARM_UPS:
        _WARM_UPS.append(threading.Thread(target=_warm_up, args=(True, WARM_UP_DELAY), name="warm-up"))
        _WARM_UPS[0].start()
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


_JOINED = []


@register("correct")
def warms_up_on_a_thread_it_joins(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                  spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                  simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: warms up on a thread on its first call at "high" float32 matmul precision, puts the precision back and joins the thread before it returns."""
    if not _JOINED:
        _JOINED.append(threading.Thread(target=_warm_up, args=(False, 0.0), name="warm-up"))
        _JOINED[0].start()
        _JOINED[0].join()
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
