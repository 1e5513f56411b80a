"""Ports of vLLM 0.33.0's synthetic samplers, written for simacc's tests from what the release's
code does (not copied from it): V1's ``rejection_sample(..., synthetic_mode=True)`` without
draft probabilities (``vllm/v1/sample/rejection_sampler.py``) and V2's ``rejection_sample``
without draft logits (``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``), each in
simacc's layout (CONTRACT.md §16.2, §17), a request at a time as vLLM's kernels walk them.

Neither reads a draft's logit before accepting it: 0.33's synthetic branches test only
``draft >= 0`` and ``u < rate`` (V1 ``rejection_sampler.py:826-830`` and ``:931-936``, V2
``rejection_sampler_utils.py:612-617`` and ``:691-693``). 0.33's runner made a draft its grammar refuses,
and every draft after it, -1 before calling them (CONTRACT.md §15.4), so they are checked with
``--refused-drafts runner`` (``tests/commands/test_vllm_check.py``).
"""

import torch

_MASK64 = (1 << 64) - 1


def v1_rejection_sample(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy, generators,
                        synthetic_conditional_rates):
    """V1's synthetic sampler with V1's generator calls: float64 uniforms (a seeded request's
    redrawn from its generator), then, when some request samples, one Exp(1) row per request
    (a seeded one's redrawn) for its recovered tokens."""
    counts, device = list(num_draft_tokens), target_logits.device
    uniforms = torch.rand((sum(counts),), dtype=torch.float64, device=device)
    first = [sum(counts[:r]) for r in range(len(counts))]
    for r, n in enumerate(counts):
        if n and r in generators:
            uniforms[first[r] : first[r] + n].uniform_(generator=generators[r])
    greedy = is_greedy.tolist()
    argmax = target_logits.argmax(dim=-1).tolist()
    if not all(greedy):
        exponentials = torch.empty((len(counts), target_logits.shape[1]), dtype=torch.float32, device=device)
        exponentials.exponential_()
        for r, generator in generators.items():
            if counts[r] > 0:
                exponentials[r].exponential_(generator=generator)
        probs = target_logits.softmax(dim=-1, dtype=torch.float32)
        inverse = exponentials.reciprocal()
    drafts, rates = draft_token_ids.tolist(), synthetic_conditional_rates.tolist()
    u, bonus = uniforms.tolist(), bonus_token_ids.reshape(-1).tolist()
    out = torch.full((len(counts), max(counts, default=0) + 1), -1, dtype=torch.int32)
    for r, n in enumerate(counts):
        for i in range(n):
            t = first[r] + i
            if drafts[t] >= 0 and u[t] < rates[i]:  # the synthetic test: no logit read
                out[r, i] = drafts[t]
                continue
            if greedy[r]:
                out[r, i] = argmax[t]
            else:
                row = probs[t].clone()
                if drafts[t] >= 0:
                    row[drafts[t]] = 0.0
                out[r, i] = int((row * inverse[r]).argmax())
            break
        else:
            out[r, n] = bonus[r]
    return out.to(device)


def _mix(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _stream(seed, position, lane):
    """A generator of its own for (request seed, logit position, lane): 0 the acceptance
    uniform, 1 a sampled token's noise. torch keeps 32 bits of a seed, so the 64-bit key is folded."""
    key = _mix(_mix(_mix(seed & _MASK64) ^ (position & _MASK64)) ^ lane)
    return torch.Generator().manual_seed((key ^ (key >> 32)) & 0xFFFFFFFF)


def v2_rejection_sample(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed, num_speculative_steps,
                        synthetic_conditional_rates):
    """V2's synthetic sampler: draft i of a request is accepted while it is a token (``>= 0``)
    and the uniform of (its seed, the position of logit i) is below rate i; the last token is
    the argmax of the logit where the walk stopped (greedy) or a Gumbel-max sample of it without
    the rejected draft. Uniforms from a generator per (seed, position), not Philox: semantic level."""
    starts, rates = cu_num_logits.tolist(), synthetic_conditional_rates.tolist()
    drafts, positions, seeds = draft_sampled.tolist(), pos.tolist(), seed.tolist()
    greedy = (temperature == 0).tolist()
    requests = len(starts) - 1
    sampled = torch.full((requests, num_speculative_steps + 1), -1, dtype=torch.int64)
    num_sampled = torch.zeros(requests, dtype=torch.int32)
    for r in range(requests):
        start, n = starts[r], starts[r + 1] - starts[r] - 1
        accepted, removed = 0, -1
        while accepted < n:
            draft = drafts[start + accepted + 1]
            u = float(torch.rand((), generator=_stream(seeds[r], positions[start + accepted], 0)))
            if draft < 0 or not u < rates[accepted]:  # the synthetic test: no logit read
                removed = draft
                break
            sampled[r, accepted] = draft
            accepted += 1
        stop = start + accepted
        row = target_logits[stop].to(torch.float32).cpu()
        if not greedy[r]:
            if removed >= 0:
                row[removed] = -torch.inf
            noise = torch.rand(row.shape, generator=_stream(seeds[r], positions[stop], 1)).clamp(1e-12, 1 - 1e-7)
            row = row - torch.log(-torch.log(noise))
        sampled[r, accepted] = int(row.argmax())
        num_sampled[r] = accepted + 1
    return sampled.to(target_logits.device), num_sampled.to(target_logits.device)
