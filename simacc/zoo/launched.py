"""Ports shaped by how a server launches its ranks (CONTRACT.md §11.7): each rank with its
identity in its environment (``RANK``, ``LOCAL_RANK``, ...) and in its process group, each on
its own clocks. Five mutants let one of them into their stream (the rank, the process group's
rank, the wall clock, the calendar, the monotonic clock), and their twins read the same
things for a log line only. Two modules act on the environment a server imports them in (its
simulated acceptance configured, §5.4): registered here, each imported only by a check of it;
and two ports read it at each call, which a server makes in it too.
Three ports rewind a generator to its seed, which a server's generators have drawn far past
(§11.2): torch's, after a warm-up or at every call, and vLLM V1's per-request ones; the twin puts
back the state its warm-up drew from.

Each seeds a numpy generator of its own with one draw from torch's CPU generator, which the
caller seeds (:func:`simacc.zoo.realprocess.derives_its_stream_from_the_callers_generator`), and
draws ``L`` by the documented law from it: at the semantic level.
"""

import datetime
import logging
import os
import time

import numpy as np
import torch

from simacc.contract import vllm
from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.contract.reference import generate_simulated_accept_index
from simacc.zoo import base
from simacc.zoo.base import register, register_elsewhere
from simacc.zoo.realprocess import _length_from

RANKS = "ranks_agree_given_the_same_inputs_and_seed"
register_elsewhere("simacc.zoo.deterministic_when_simulating", "deterministic_when_simulating", "process state",
                   "Turns on deterministic algorithms at import when SGLANG_SIMULATE_ACC_LEN is set, and never off.",
                   "leaves_the_process_as_it_found_it")
register_elsewhere("simacc.zoo.reads_its_settings_at_import", "reads_its_settings_at_import", "correct",
                   "Correct: reads SGLANG_SIMULATE_ACC_* at import, into its defaults and a log line.")
_LOG = logging.getLogger(__name__)


def _process_group_rank():
    """This process's rank in torch's default process group, 0 where none is initialised."""
    distributed = torch.distributed
    return distributed.get_rank() if distributed.is_available() and distributed.is_initialized() else 0


def _drawn(salt, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps, simulate_acc_len,
           simulate_acc_method, simulate_acc_token_mode):
    """The index of ``L`` drawn from a numpy generator seeded with one draw from the caller's generator plus ``salt``."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    if simulate_acc_method not in ("match-expected", "multinomial"):  # before any draw (§3.4)
        raise ValueError(f"unknown simulate_acc_method {simulate_acc_method!r}")
    rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,))) + salt)
    length = _length_from(rng.random, lambda x: rng.normal(x, 1.0), simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("rank", RANKS, level="semantic")
def offsets_its_stream_by_its_rank(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                   spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                   simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Offsets its stream's seed by the RANK its launcher gives it, so that each rank draws a stream of its own."""
    return _drawn(int(os.environ.get("RANK", "0")), accept_index, predict, num_correct_drafts, candidates,
                  target_predict, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("rank", RANKS, level="semantic")
def offsets_its_stream_by_its_process_group_rank(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                                 bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Offsets its stream's seed by torch.distributed.get_rank() where a process group is initialised."""
    return _drawn(_process_group_rank(), accept_index, predict, num_correct_drafts, candidates, target_predict,
                  spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("correct", level="semantic")
def logs_its_rank(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                  simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct at the semantic level: reads its RANK, LOCAL_RANK and process group rank for a log line only."""
    _LOG.debug("rank %s (local %s, group %d): bs=%d", os.environ.get("RANK"), os.environ.get("LOCAL_RANK"),
               _process_group_rank(), bs)
    return _drawn(0, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("rank", RANKS, level="semantic")
def salts_its_stream_with_the_clock(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                    spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                    simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Salts its stream's seed with the second it is called in, int(time.time()), which two ranks share only when they call in the same second."""
    return _drawn(int(time.time()), accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("rank", RANKS, level="semantic")
def salts_its_stream_with_the_calendar(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                       spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                       simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Salts its stream's seed with the hour of datetime.datetime.now(), which reads the clock in C, past time.time."""
    return _drawn(datetime.datetime.now().hour, accept_index, predict, num_correct_drafts, candidates,
                  target_predict, spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("rank", RANKS, level="semantic")
def salts_its_stream_with_the_monotonic_clock(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                              bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                              simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Salts its stream's seed with int(time.monotonic()), the seconds since boot, which every process of a host shares."""
    return _drawn(int(time.monotonic()), accept_index, predict, num_correct_drafts, candidates, target_predict,
                  spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("correct", level="semantic")
def times_its_call_with_the_clock(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                  spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                  simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct at the semantic level: reads the clocks (time, datetime, monotonic) before and after its work, for a log line of how long it took."""
    start, began, tick = time.time(), datetime.datetime.now(), time.perf_counter()
    out = _drawn(0, accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                 simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)
    if not isinstance(began, datetime.date) or datetime.datetime.now() < began:
        raise AssertionError("the calendar ran backwards")
    _LOG.debug("%s: bs=%d in %.6f s (%.6f s)", began.isoformat(), bs, time.time() - start, time.perf_counter() - tick)
    return out


@register("process state", "leaves_the_process_as_it_found_it")
def high_precision_while_simulating(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                    spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                    simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Sets torch's float32 matmul precision to "high" on each call while SGLANG_SIMULATE_ACC_LEN is set, as it is for a simulating server's whole life, and never back."""
    if os.environ.get("SGLANG_SIMULATE_ACC_LEN"):
        torch.set_float32_matmul_precision("high")
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("correct")
def prefers_the_servers_settings(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                                 simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                 simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: reads the length, method and token mode from the server's SGLANG_SIMULATE_ACC_* at each call where they are set, over its arguments, which a server passes from the same variables."""
    env = os.environ.get
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, float(env("SGLANG_SIMULATE_ACC_LEN", simulate_acc_len)),
                                           env("SGLANG_SIMULATE_ACC_METHOD", simulate_acc_method),
                                           env("SGLANG_SIMULATE_ACC_TOKEN_MODE", simulate_acc_token_mode))


# -- a warm-up that draws, and the generator afterwards (exact level) --

_WARMED = {}


def _warm_up(put_back):
    """One call on a batch of two, once per process, as a server warms a kernel up before its
    first step; then the generator rewound to its seed, or (``put_back``) its state put back."""
    if put_back in _WARMED:
        return
    _WARMED[put_back] = True
    state = torch.get_rng_state()
    generate_simulated_accept_index(torch.tensor([[0, -1], [2, -1]], dtype=torch.int32),
                                    torch.zeros(4, dtype=torch.int32), torch.zeros(2, dtype=torch.int32), None, None,
                                    2, 1, 1.5, "match-expected", "fixed")
    if put_back:
        torch.set_rng_state(state)
    else:
        torch.manual_seed(torch.initial_seed())


@register("generator", RANKS)
def rewinds_the_generator_after_its_warm_up(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                            spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                            simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Warms up on its first call and undoes the warm-up's draws with torch.manual_seed(torch.initial_seed()), which rewinds the generator to its seed, not to where the caller left it."""
    _warm_up(put_back=False)
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("correct")
def puts_the_generator_back_after_its_warm_up(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                              bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                              simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: warms up on its first call and puts back the generator's state from before the warm-up."""
    _warm_up(put_back=True)
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("generator", "generator_consumes_exactly_the_documented_draws")
def rewinds_the_generator_to_its_seed_on_every_call(accept_index, predict, num_correct_drafts, candidates,
                                                    target_predict, bs, spec_steps, simulate_acc_len,
                                                    simulate_acc_method=DEFAULT_METHOD,
                                                    simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Rewinds the generator to its seed before it draws, for a reproducible run: every step of a server draws the same L."""
    torch.manual_seed(torch.initial_seed())
    return generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode)


@register("generator", "vllm_v1_makes_v1s_generator_calls")
def v1_rewinds_each_requests_generator(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                                       generators, synthetic_conditional_rates):
    """vLLM V1: rewinds each seeded request's generator to its seed before drawing, for reproducible requests: a request's later steps redraw its first step's numbers."""
    for generator in generators.values():
        generator.manual_seed(generator.initial_seed())
    return vllm.synthetic_rejection_sample(
        draft_token_ids=draft_token_ids, num_draft_tokens=num_draft_tokens, target_logits=target_logits,
        bonus_token_ids=bonus_token_ids, is_greedy=is_greedy, generators=generators,
        synthetic_conditional_rates=synthetic_conditional_rates)
