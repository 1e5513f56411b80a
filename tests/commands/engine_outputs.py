"""Files in the shapes the engines write them (docs/laws.md names each field's source: file and
line of vLLM 0.34.0, sglang 0.5.23 and ATOM), drawn from a law, for ``simacc observe``'s tests:
nothing is downloaded, and the shapes are written here as the engines' code writes them."""

import json

from simacc.contract import laws


def draws(engine, length, k, steps, batch, seed):
    """A run drawn the engine's way: each step's acceptance lengths (accepted + 1)."""
    return laws.law(engine, length, k).draw(steps, batch, seed)


def records(path, run, drafted=None):
    """simacc's JSON Lines, a line per request per step (``drafted``: per step and request)."""
    with open(path, "w") as out:
        for s, step in enumerate(run):
            for r, n in enumerate(step):
                line = {"step": s, "request": r, "accept_length": n}
                if drafted is not None:
                    line["drafted"] = drafted[s][r]
                out.write(json.dumps(line) + "\n")
    return path


def vllm_responses(path, run, k, detailed=True):
    """vLLM's chat completion bodies, one a line, with ``metrics.speculative_decoding`` as
    ``RequestSpecDecodeMetrics.to_dict`` makes it (vllm/v1/metrics/stats.py): one request per
    column of ``run``."""
    with open(path, "w") as out:
        for r in range(len(run[0])):
            accepted = [step[r] - 1 for step in run]
            histogram = [accepted.count(j) for j in range(k + 1)]
            spec = {"mean_acceptance_length": 1.0 + sum(accepted) / len(accepted),
                    "draft_acceptance_rate": sum(accepted) / (k * len(accepted)), "acceptance_histogram": histogram,
                    "num_spec_steps": len(accepted), "num_accepted_draft_tokens": sum(accepted),
                    "num_draft_tokens": k * len(accepted), "num_spec_tokens": k}
            if detailed:
                spec["per_step_accepted"] = accepted
                spec["per_step_drafted"] = [k] * len(accepted)
            body = {"id": f"chatcmpl-{r:04x}", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "..."},
                                 "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 8, "completion_tokens": len(accepted) + sum(accepted)},
                    "metrics": {"time_to_first_token_ms": 12.5, "speculative_decoding": spec}}
            out.write(json.dumps(body) + "\n")
    return path


def vllm_prometheus(path, run, k, base=0):
    """A scrape of vLLM's ``/metrics`` as prometheus_client's text exposition writes the
    spec-decode counters of vllm/v1/spec_decode/metrics.py (``_total`` samples, ``_created``
    beside them), ``base`` added to every counter (an earlier run's)."""
    accepted = [n - 1 for step in run for n in step]
    labels = 'engine="0",model_name="m"'
    lines = []
    for name, doc, value in (("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", len(accepted)),
                             ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", k * len(accepted)),
                             ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", sum(accepted))):
        lines += [f"# HELP {name}_total {doc}", f"# TYPE {name}_total counter",
                  f"{name}_total{{{labels}}} {float(value + base)}", f"{name}_created{{{labels}}} 1.7e+09"]
    name = "vllm:spec_decode_num_accepted_tokens_per_pos"
    lines += [f"# HELP {name}_total Accepted tokens per draft position.", f"# TYPE {name}_total counter"]
    for p in range(k):
        lines.append(f'{name}_total{{{labels},position="{p}"}} {float(sum(a > p for a in accepted) + base)}')
    path.write_text("\n".join(lines) + "\n")
    return path


def sglang_log(path, run, interval=1):
    """sglang's server log: a ``Decode batch`` line every ``interval`` steps, its ``accept len``
    the mean over the interval's requests and steps to two decimals (metrics_reporter.py
    ``report_decode_stats``), with the iteration in brackets (``SGLANG_LOG_FORWARD_ITERS=1``)."""
    lines = ["[2026-11-30 10:00:00] server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE')",
             "[2026-11-30 10:00:05] The server is fired up and ready to roll!"]
    for first in range(0, len(run) - interval + 1, interval):
        steps = run[first:first + interval]
        tokens, count = sum(sum(step) for step in steps), sum(len(step) for step in steps)
        lines.append(f"[2026-11-30 10:00:{first % 60:02d} TP0] Decode batch [{first + interval}], #running-req: "
                     f"{len(steps[-1])}, #token: 4096, token usage: 0.01, accept len: {tokens / count:.2f}, "
                     f"accept rate: {(tokens / count - 1) / 3:.2f}, cuda graph: True, gen throughput (token/s): "
                     f"1234.56, #queue-req: 0")
    path.write_text("\n".join(lines) + "\n")
    return path


def sglang_responses(path, run):
    """sglang's ``/generate`` bodies, one a line, with ``meta_info.spec_correct_drafts_histogram``
    as ``Req.update_spec_correct_drafts_histogram`` grows it (as long as the largest count + 1)."""
    with open(path, "w") as out:
        for r in range(len(run[0])):
            accepted = [step[r] - 1 for step in run]
            histogram = [accepted.count(j) for j in range(max(accepted) + 1)]
            meta = {"id": f"{r:032x}", "finish_reason": {"type": "length", "length": 64}, "prompt_tokens": 8,
                    "completion_tokens": len(accepted) + sum(accepted), "spec_verify_ct": len(accepted),
                    "spec_accept_length": (len(accepted) + sum(accepted)) / len(accepted),
                    "spec_correct_drafts_histogram": histogram}
            out.write(json.dumps({"text": "...", "meta_info": meta}) + "\n")
    return path


def atom_mtp_stats(path, run, k, distribution=True):
    """ATOM's ``/debug/mtp_stats`` as ``LLMEngine.get_mtp_statistics`` returns it
    (atom/model_engine/llm_engine.py); without ``distribution``, its mean and counts alone."""
    accepted = [n - 1 for step in run for n in step]
    counts = {a: accepted.count(a) for a in range(k + 1)}
    stats = {"enabled": True, "total_draft_tokens": k * len(accepted), "total_accepted_tokens": sum(accepted),
             "acceptance_rate": sum(accepted) / (k * len(accepted)),
             "average_tokens_per_forward": 1 + sum(accepted) / len(accepted)}
    if distribution:
        stats["distribution"] = {str(a): c for a, c in counts.items()}
        stats["distribution_percent"] = {str(a): c / len(accepted) for a, c in counts.items()}
    path.write_text(json.dumps(stats))
    return path
