"""Mutants that leave the process changed (CONTRACT.md §11.4): each computes the right
result, then leaves one piece of process-wide state the way a serving process would not want
it. The runner puts the state back after every call and fails whichever property made the
call, so a change made once, on the first call of a process, fails the property that happened
to call first; ``leaves_the_process_as_it_found_it`` judges the import as well. Two correct
ones set state for the length of their call, or once, at import, and put it back.
"""

import os
import signal

import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.contract.reference import generate_simulated_accept_index
from simacc.zoo.base import register

PROCESS = "leaves_the_process_as_it_found_it"


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
