"""Mutants that leave the process changed (CONTRACT.md §11.4): each computes the right
result, then leaves one piece of process-wide state the way a serving process would not want
it. The runner puts the state back after every call, so only the property that judges the
process (``leaves_the_process_as_it_found_it``) sees them.
"""

import os

import torch

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
