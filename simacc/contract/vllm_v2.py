"""The reference of vLLM's V2 synthetic sampler (CONTRACT.md §17): per-request seeds, and
every random number a function of ``(seed, position)`` alone.

V2 draws from Philox; the contract asks only for the law and for that dependence (§17.3), so
this reference draws from a keyed hash of its own, documented here so that anyone can
reproduce it: :func:`keyed_uniforms`. It is not a cryptographic generator and makes no claim
beyond passing the contract's statistical checks.
"""

import torch

from simacc.contract import vllm as v1

_MASK32 = 0xFFFFFFFF
_LANE_SALT = 0x9E3779B9  # keeps lane 0 away from a zero input


def _mul32(x, constant):
    """``x * constant mod 2**32`` for ``x`` in ``[0, 2**32)``, in int64 without overflow:
    the constant's two 16-bit halves, each product below ``2**48``."""
    low, high = constant & 0xFFFF, constant >> 16
    return (x * low + (((x * high) & 0xFFFF) << 16)) & _MASK32


def _round(x):
    """One 32-bit mixing round (the "lowbias32" finaliser: xor-shift, multiply, twice)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def keyed_uniforms(seed, pos, lane):
    """float32 uniforms in ``(0, 1)``, a function of ``(seed, pos, lane)`` only (broadcast).

    ``h`` = four rounds over the lane, then the position's low 32 bits, then the seed's low
    and high 32 bits, each xored in before its round; ``u = (h >> 9 + 1/2) / 2**23``, so
    ``2**-24 <= u <= 1 - 2**-24``. Lane 0 is a draft's acceptance uniform, lane ``1 + v``
    the noise of token ``v`` when a token is sampled at that position.
    """
    seed, pos, lane = (torch.as_tensor(t).to(torch.int64) for t in (seed, pos, lane))
    h = _round((lane + _LANE_SALT) & _MASK32)
    h = _round(h ^ (pos & _MASK32))
    h = _round(h ^ (seed & _MASK32))
    h = _round(h ^ ((seed >> 32) & _MASK32))
    return ((h >> 9).to(torch.float32) + 0.5) * 2.0**-23


def _check_args(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                synthetic_conditional_rates):
    """Shapes, dtypes and the device; on a CPU also the segments (on CUDA that check would
    cost a synchronisation per call): each request has 1 to ``K + 1`` logits, in order."""
    k = v1.check_rate_tensor(synthetic_conditional_rates)
    if type(num_speculative_steps) is not int or num_speculative_steps != k:
        raise ValueError(f"num_speculative_steps must be the int K = {k} (the number of rates), "
                         f"got {num_speculative_steps!r}")
    if not isinstance(target_logits, torch.Tensor) or target_logits.dim() != 2 or target_logits.shape[1] < 1:
        raise ValueError(f"target_logits must be a 2-D tensor with a vocabulary, got {getattr(target_logits, 'shape', None)}")
    logits = target_logits.shape[0]
    v1.check("target_logits", target_logits, tuple(target_logits.shape), ("float",))
    if not isinstance(cu_num_logits, torch.Tensor) or cu_num_logits.dim() != 1 or cu_num_logits.shape[0] < 1:
        raise ValueError(f"cu_num_logits must be a 1-D tensor of R + 1 offsets, got {getattr(cu_num_logits, 'shape', None)}")
    requests = cu_num_logits.shape[0] - 1
    v1.check("cu_num_logits", cu_num_logits, (requests + 1,), ("int",))
    v1.check("draft_sampled", draft_sampled, (logits,), ("int",))
    v1.check("pos", pos, (logits,), ("int",))
    v1.check("temperature", temperature, (requests,), ("float",))
    v1.check("seed", seed, (requests,), ("int",))
    v1.check_devices(target_logits=target_logits, draft_sampled=draft_sampled, cu_num_logits=cu_num_logits, pos=pos,
                      temperature=temperature, seed=seed, synthetic_conditional_rates=synthetic_conditional_rates)
    if cu_num_logits.device.type == "cpu":
        sizes = cu_num_logits.diff()
        if int(cu_num_logits[0]) != 0 or int(cu_num_logits[-1]) != logits or bool(((sizes < 1) | (sizes > k + 1)).any()):
            raise ValueError(f"cu_num_logits must run from 0 to {logits} in steps of 1 to K + 1 = {k + 1}, "
                             f"got {cu_num_logits.tolist()}")


def synthetic_rejection_sample_v2(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                  num_speculative_steps, synthetic_conditional_rates):
    """V2's synthetic sampler (§17): returns ``(sampled, num_sampled)``.

    Request ``r`` owns logits ``cu_num_logits[r]`` to ``cu_num_logits[r + 1] - 1``: ``n_r + 1``
    of them, its drafts being ``draft_sampled`` one place later (draft ``i`` at
    ``start + i + 1``), verified by logit ``start + i`` with the uniform of
    ``(seed[r], pos[start + i])``; a draft whose logit there is -inf (the target does not
    allow it, §15.4) is never accepted. ``target_logits`` are already processed;
    ``temperature[r] == 0`` marks a greedy request. ``sampled`` is ``(R, K + 1)`` int64: the
    accepted drafts, then one token from the logit where the walk stopped (its argmax for a
    greedy request, else a sample of its softmax without the rejected draft; at a full
    acceptance the bonus logit's, nothing removed). ``num_sampled`` (int32) counts them;
    ``sampled`` holds -1 past it, which the contract leaves undefined (§17.2).
    """
    _check_args(target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                synthetic_conditional_rates)
    start, logit, real, drafts = grid(draft_sampled, cu_num_logits, num_speculative_steps)
    drafts = v1.forbid(drafts, target_logits, logit)
    accepted = v1.walk(drafts, real, keyed_uniforms(seed.to(torch.int64)[:, None], pos[logit], 0),
                       synthetic_conditional_rates)
    return emit(target_logits, drafts, accepted, start, pos, temperature, seed)


def grid(draft_sampled, cu_num_logits, k):
    """``(start, logit, real, drafts)``: each request's first logit ``(R,)``, and on an
    ``(R, K)`` grid the logit that verifies draft ``i``, whether the request has it, and the
    draft (-1 where it has none)."""
    start = cu_num_logits[:-1].to(torch.int64)
    n = cu_num_logits[1:].to(torch.int64) - start - 1
    cols = torch.arange(k, device=draft_sampled.device)
    real = cols < n[:, None]
    logit = torch.where(real, start[:, None] + cols, 0)
    drafts = torch.where(real, draft_sampled[torch.where(real, logit + 1, 0)], -1)
    return start, logit, real, drafts


def emit(target_logits, drafts, accepted, start, pos, temperature, seed):
    """§15.2 in V2's layout: ``(sampled, num_sampled)`` of requests that accepted ``accepted``
    of their ``drafts`` (the ``(R, K)`` grid), the last token from the logit where each stopped."""
    k, device = drafts.shape[1], target_logits.device
    stop = start + accepted  # the logit the last token comes from
    rejected = torch.where(accepted < k, drafts.gather(1, accepted.clamp(max=k - 1)[:, None]).squeeze(1), -1)
    rows = target_logits[stop].to(torch.float32)
    last = rows.argmax(1)
    if not bool((temperature == 0).all()):  # a greedy batch needs no noise
        vocab = torch.arange(rows.shape[1], device=device)
        noise = -torch.log(-torch.log(keyed_uniforms(seed.to(torch.int64)[:, None], pos[stop][:, None], 1 + vocab)))
        sampled_rows = torch.where(vocab == rejected[:, None], -torch.inf, rows) + noise  # Gumbel(0, 1)
        last = torch.where(temperature == 0, last, sampled_rows.argmax(1))

    out_cols = torch.arange(k + 1, device=device)
    padded = torch.cat([drafts, drafts.new_full((drafts.shape[0], 1), -1)], 1)
    sampled = torch.where(out_cols < accepted[:, None], padded, -1)
    sampled = torch.where(out_cols == accepted[:, None], last[:, None], sampled)
    return sampled, (accepted + 1).to(torch.int32)
