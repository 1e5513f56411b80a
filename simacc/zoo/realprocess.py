"""Implementations shaped by the process they live in (CONTRACT.md §11.5-§11.7): compiled with
``torch.compile``, keeping a work buffer per shape, working on a thread of their own, and two
ports whose length follows no seed the caller controls.

The correct ones must be accepted: torch's own change to its namespace when ``torch.compile``
imports ``torch._dynamo`` is not the implementation's (§11.6), and a buffer made in one grad
mode is only ever used in that mode, as in a server (§11.5). Three act when their module is
imported: each has a module of its own, registered here and imported only by a check of it (so
only a check of the compiled one pays for compiling: seconds, in every process that imports it).
"""

import math
import threading

import numpy as np
import torch

from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_MODE
from simacc.zoo import base
from simacc.zoo.base import register, register_elsewhere

for _module, _name, _bug, _killers in (
    ("compiled_at_import", "compiled_at_import",
     "Correct: builds the index with a helper its module compiles with torch.compile at import.", ()),
    ("logs_at_import", "configures_logging_at_import",
     "Correct: its module configures the root logger at import; it logs each call.", ()),
    ("warms_up_at_import", "warms_up_at_import",
     "Correct: its module calls it once at import, on a small batch, to warm it up.", ()),
    ("tables_at_import", "builds_a_float64_table_at_import",
     "Correct: its module builds a table in float64 at import, switching the default dtype and back.", ()),
    ("handles_sigterm_at_import", "handles_sigterm_at_import",
     "Installs a SIGTERM handler of its own at import, to flush its counters, in place of the server's.",
     ("leaves_the_process_as_it_found_it",)),
):
    register_elsewhere(f"simacc.zoo.{_module}", _name, "process state" if _killers else "correct", _bug, *_killers)

_COMPILED = {}


@register("correct")
def compiled_on_first_call(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                           simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                           simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: compiles its index builder with torch.compile on its first call (backend eager)."""
    if "index" not in _COMPILED:
        _COMPILED["index"] = torch.compile(base.index, backend="eager", dynamic=True)
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    out = _COMPILED["index"](accept_index[:, 0], length, width)
    return base.finish(out, length, predict, num_correct_drafts, candidates, target_predict, simulate_acc_token_mode)


_BUFFERS = {}


@register("correct")
def per_shape_work_buffer(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                          simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: refills one work buffer per shape, made in the caller's grad mode, and returns a clone of it."""
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    key = (bs, width, accept_index.device)
    if key not in _BUFFERS:
        _BUFFERS[key] = torch.empty((bs, width), dtype=torch.int32, device=accept_index.device)
    work = _BUFFERS[key]
    work.fill_(-1)
    work[:, :length] = accept_index[:, :1].to(torch.int32) + torch.arange(length, dtype=torch.int32,
                                                                           device=work.device)
    return base.finish(work.clone(), length, predict, num_correct_drafts, candidates, target_predict,
                       simulate_acc_token_mode)


def _on_a_thread(body, carry_the_grad_mode):
    """``body()`` on a worker thread, in the caller's grad mode or in the thread's default one."""
    inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()
    answer = {}

    def work():
        try:
            if carry_the_grad_mode:
                with torch.inference_mode(inference), torch.set_grad_enabled(grad):
                    answer["out"] = body()
            else:
                answer["out"] = body()
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread
            answer["error"] = e

    thread = threading.Thread(target=work, name="simacc-zoo-worker")
    thread.start()
    thread.join()
    if "error" in answer:
        raise answer["error"]
    return answer["out"]


def _simulate(accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps, simulate_acc_len,
              simulate_acc_method, simulate_acc_token_mode):
    width = spec_steps + 1
    length = base.sample(simulate_acc_len, simulate_acc_method, width)
    return lambda: base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                                 simulate_acc_token_mode)


@register("correct")
def on_a_worker_thread(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                       simulate_acc_len, simulate_acc_method=DEFAULT_METHOD, simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct: draws L, then writes its outputs on a worker thread that enters the caller's grad mode."""
    return _on_a_thread(_simulate(accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode), True)


@register("grad mode", "fixed_mode_fills_predict_with_the_fixed_id", "serving_loop_conforms_at_every_step")
def on_a_worker_thread_without_the_grad_mode(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                             bs, spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                             simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Writes its outputs on a worker thread in the thread's own grad mode: it cannot update an inference tensor."""
    return _on_a_thread(_simulate(accept_index, predict, num_correct_drafts, candidates, target_predict, spec_steps,
                                  simulate_acc_len, simulate_acc_method, simulate_acc_token_mode), False)


# -- ports whose ranks disagree (the law is right; the draw follows no seed the caller controls) --


def _length_from(uniform, normal, x, method, width):
    """``L`` by the law of CONTRACT.md §9.2-§9.3 from numpy draws: ``uniform()`` in [0, 1), ``normal(x)`` from N(x, 1)."""
    if method == "multinomial":
        base.check_length(x)
        return int(np.round(min(max(normal(x), 1.0), width)))  # numpy rounds half to even
    if method != "match-expected":
        raise ValueError(f"unknown simulate_acc_method {method!r}")
    base.check_length(x)
    clamped = max(1.0, min(width, x))
    low = math.floor(clamped)
    return low if low >= width else low + int(uniform() < clamped - low)


@register("rank", "ranks_agree_given_the_same_inputs_and_seed", level="semantic")
def draws_from_os_entropy(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                          simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                          simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Draws L by the documented law from a numpy generator the operating system seeds anew on every call."""
    width = spec_steps + 1
    rng = np.random.default_rng()
    length = _length_from(rng.random, lambda x: rng.normal(x, 1.0), simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("rank", "ranks_agree_given_the_same_inputs_and_seed", level="semantic")
def draws_from_an_unseeded_numpy_generator(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                           spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                           simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Draws L by the documented law from numpy's global generator, which nothing seeds (sglang-jax's older code)."""
    width = spec_steps + 1
    length = _length_from(np.random.random, lambda x: np.random.normal(x, 1.0), simulate_acc_len, simulate_acc_method,
                          width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


_STREAM = np.random.default_rng(hash(("sim-acc", "stream")) % 2**32)  # seeded once, at import


@register("rank", "ranks_agree_given_the_same_inputs_and_seed", level="semantic")
def seeds_its_stream_from_a_string_hash(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                                        spec_steps, simulate_acc_len, simulate_acc_method=DEFAULT_METHOD,
                                        simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Draws L by the documented law from a generator its module seeds at import from a string's hash, which differs in every new interpreter."""
    width = spec_steps + 1
    length = _length_from(_STREAM.random, lambda x: _STREAM.normal(x, 1.0), simulate_acc_len, simulate_acc_method,
                          width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)


@register("correct", level="semantic")
def derives_its_stream_from_the_callers_generator(accept_index, predict, num_correct_drafts, candidates,
                                                  target_predict, bs, spec_steps, simulate_acc_len,
                                                  simulate_acc_method=DEFAULT_METHOD,
                                                  simulate_acc_token_mode=DEFAULT_TOKEN_MODE):
    """Correct at the semantic level: seeds a numpy generator of its own with one draw from torch's CPU generator, which the caller seeds, and draws L by the documented law from it."""
    width = spec_steps + 1
    base.check_length(simulate_acc_len)
    if simulate_acc_method not in ("match-expected", "multinomial"):  # before any draw (§3.4)
        raise ValueError(f"unknown simulate_acc_method {simulate_acc_method!r}")
    rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,))))
    length = _length_from(rng.random, lambda x: rng.normal(x, 1.0), simulate_acc_len, simulate_acc_method, width)
    return base.simulate(length, accept_index, predict, num_correct_drafts, candidates, target_predict, width,
                         simulate_acc_token_mode)
