"""References of vLLM's synthetic acceptance (CONTRACT.md §13-§18): resolving the settings,
the conditional rates, the decision given the uniforms (V1's layout) and V1's sampler with
V1's own generator calls. V2's layout, which draws from keyed uniforms, is in
:mod:`simacc.contract.vllm_v2`.

A request ``r`` has ``n_r <= K`` drafts (``K`` = ``num_speculative_tokens``), flat in
request order, ``-1`` for a placeholder the proposer could not fill. The walk accepts draft
``i`` while it is a real token and its uniform is below the conditional rate ``c_i``, stops
at the first rejection, then emits one more token. Every function here walks all requests at
once on a ``(B, max_n)`` grid: no Python loop over the batch. The loops over ``generators``
are the per-request generator calls the contract names (§16.2), one call per seeded request.

The steps (``grid``, ``forbid``, ``walk``, ``emit``, ``decide``, ``v1_uniforms``, ``v1_exponentials``,
``v1_recovered``) and
the checks (``check``, ``check_devices``, ``check_rate_tensor``) are public so that V2's
reference and the zoo's mutants are built from them: a mutant differs from the reference in
the one step it gets wrong.
"""

import numbers

import torch

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


# -- settings (§13) and conditional rates (§14) ----------------------------------------------


def _check_k(num_speculative_tokens):
    k = num_speculative_tokens
    if type(k) is not int and (isinstance(k, bool) or not isinstance(k, numbers.Integral)):
        raise TypeError(f"num_speculative_tokens must be an int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"num_speculative_tokens must be >= 1, got {k}")


def _check_real(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must hold real numbers, got {type(value).__name__}")


def _check_rates(rates, k, name):
    """§13.2: ``k`` unconditional rates, each in [0, 1], non-increasing (NaN fails [0, 1])."""
    if isinstance(rates, (str, bytes)) or not hasattr(rates, "__len__"):
        raise TypeError(f"{name} must be a sequence of floats, got {type(rates).__name__}")
    for p in rates:
        _check_real(name, p)
    if k is not None and len(rates) != k:
        raise ValueError(f"{name} must have length num_speculative_tokens = {k}, got {len(rates)}: {list(rates)}")
    if len(rates) == 0:
        raise ValueError(f"{name} must not be empty")
    if not all(0.0 <= p <= 1.0 for p in rates):
        raise ValueError(f"{name} entries must lie in [0, 1], got {list(rates)}")
    if any(later > earlier for earlier, later in zip(rates, rates[1:])):
        raise ValueError(f"{name} must be non-increasing, got {list(rates)}")


def resolve_synthetic_rates(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                            synthetic_acceptance_length=None):
    """The ``K`` unconditional rates ``p_0..p_{K-1}`` the settings stand for (§13), as floats.

    Exactly one of the two knobs. Rates are returned as given once valid; a mean acceptance
    length ``x`` in ``[1, K + 1]`` becomes the minimum-variance schedule: with ``d = x - 1``,
    ``floor(d)`` ones, then ``d - floor(d)``, then zeros, cut to ``K`` entries. Every bad
    setting is a ``ValueError`` (a value of the wrong type a ``TypeError``).
    """
    _check_k(num_speculative_tokens)
    k = num_speculative_tokens
    if (synthetic_acceptance_rates is None) == (synthetic_acceptance_length is None):
        raise ValueError("synthetic acceptance needs exactly one of synthetic_acceptance_rates and "
                         "synthetic_acceptance_length")
    if synthetic_acceptance_rates is not None:
        _check_rates(synthetic_acceptance_rates, k, "synthetic_acceptance_rates")
        return [float(p) for p in synthetic_acceptance_rates]
    length = synthetic_acceptance_length
    _check_real("synthetic_acceptance_length", length)
    if not 1.0 <= length <= k + 1:  # `not` also rejects NaN
        raise ValueError(f"synthetic_acceptance_length must lie in [1, {k + 1}], got {length}")
    drafts = float(length) - 1.0  # the expected number of accepted drafts
    full = int(drafts)  # floor: drafts >= 0
    return ([1.0] * full + [drafts - full] + [0.0] * (k - full - 1))[:k]


def conditional_rates(*, unconditional_rates, device="cpu"):
    """``c_i = p_i / p_{i-1}`` with ``p_{-1} = 1``, and ``c_i = 0`` where ``p_{i-1} = 0`` (§14):
    a float32 ``(K,)`` tensor on ``device``, each quotient taken in float64 first."""
    _check_rates(unconditional_rates, None, "unconditional_rates")
    p = torch.tensor([float(x) for x in unconditional_rates], dtype=torch.float64)
    before = torch.cat([p.new_ones(1), p[:-1]])
    c = torch.where(before > 0, p / before, 0.0)  # 0/0 is NaN where it is masked
    return c.to(device=device, dtype=torch.float32)


# -- the decision given the uniforms (§15.1) ----------------------------------------------------


def _check_counts(num_draft_tokens, k):
    """§15.1: one count per request, each in ``[0, K]``; returns them as a list."""
    if isinstance(num_draft_tokens, torch.Tensor) or not hasattr(num_draft_tokens, "__len__"):
        raise TypeError(f"num_draft_tokens must be a sequence of ints, got {type(num_draft_tokens).__name__}")
    counts = list(num_draft_tokens)
    for n in counts:
        if type(n) is not int and (isinstance(n, bool) or not isinstance(n, numbers.Integral)):
            raise TypeError(f"num_draft_tokens must hold ints, got {type(n).__name__}")
    if counts and not 0 <= min(counts) <= max(counts) <= k:
        raise ValueError(f"num_draft_tokens must lie in [0, K = {k}], got [{min(counts)}, {max(counts)}]")
    return counts


def check(name, t, shape, kinds):
    """A tensor of ``shape`` whose dtype is one of ``kinds`` ("int", "float" or "bool")."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    kind = ("bool" if t.dtype == torch.bool else "float" if t.dtype in _FLOATS
            else "complex" if t.is_complex() else "int")
    if kind not in kinds:
        raise TypeError(f"{name} must have a {' or '.join(kinds)} dtype, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")


def check_devices(**tensors):
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        listed = ", ".join(f"{name} on {t.device}" for name, t in tensors.items())
        raise ValueError(f"all tensors must be on one device, got {listed}")


def grid(counts, device):
    """``(flat, real)`` for ``B`` requests: ``flat[r, i]`` indexes request ``r``'s draft ``i``
    in the flat layout (0 where it has none), ``real[r, i]`` says whether it has one."""
    n = torch.tensor(counts, dtype=torch.int64, device=device)
    width = max(counts, default=0)
    cols = torch.arange(width, device=device)
    real = cols < n[:, None]
    flat = torch.where(real, (n.cumsum(0) - n)[:, None] + cols, 0)
    return flat, real


def forbid(drafts, target_logits, rows):
    """§15.4: ``drafts`` with each one the target does not allow made a placeholder (-1): a
    token whose processed logit at ``rows`` (the logit that verifies it, broadcast with
    ``drafts``) is -inf, as a grammar's bitmask or top-k write it. It is then never accepted,
    and its position emits the rejection token, from the target's allowed tokens."""
    logit = target_logits[rows, drafts.clamp(min=0).to(torch.int64)]
    return torch.where((drafts >= 0) & (logit == -torch.inf), -1, drafts)


def walk(drafts, real, uniforms, rates):
    """§15.1 on ``(B, W)`` grids: how many drafts each request accepts (int64 ``(B,)``).

    Draft ``i`` is accepted while it is real (``real``), a token (``>= 0``) and its uniform
    is below ``rates[i]``; the first failure ends the walk (a running product).
    """
    width = drafts.shape[1]
    ok = real & (drafts >= 0) & (uniforms < rates[:width])
    return ok.to(torch.int64).cumprod(1).sum(1)


def emit(accepted, counts_grid, drafts, rejected_tokens, bonus):
    """§15.2: the ``(B, W + 1)`` int32 output: the accepted drafts, then the token at column
    ``accepted``: ``rejected_tokens`` there (``(B, W)``) on a rejection, else the bonus; -1
    after it."""
    rows, width = drafts.shape
    cols = torch.arange(width + 1, device=drafts.device)
    pad = torch.full((rows, 1), -1, dtype=torch.int32, device=drafts.device)
    drafts, rejected_tokens = (torch.cat([t.to(torch.int32), pad], 1) for t in (drafts, rejected_tokens))
    last = torch.where(accepted < counts_grid, rejected_tokens.gather(1, accepted[:, None]).squeeze(1),
                       bonus.to(torch.int32))
    out = torch.where(cols < accepted[:, None], drafts, pad)
    return torch.where(cols == accepted[:, None], last[:, None], out)


def check_rate_tensor(rates):
    """The conditional rates: a 1-D float tensor of ``K >= 1`` entries; returns ``K``."""
    if not isinstance(rates, torch.Tensor) or rates.dim() != 1 or rates.shape[0] < 1:
        raise ValueError(f"synthetic_conditional_rates must be a 1-D tensor of K >= 1 rates, "
                         f"got {getattr(rates, 'shape', rates)}")
    check("synthetic_conditional_rates", rates, tuple(rates.shape), ("float",))
    return rates.shape[0]


def _check_v1(draft_token_ids, num_draft_tokens, synthetic_conditional_rates, bonus_token_ids, is_greedy):
    """The arguments the V1 decision and sampler share; returns ``(counts, K)``."""
    k = check_rate_tensor(synthetic_conditional_rates)
    counts = _check_counts(num_draft_tokens, k)
    check("draft_token_ids", draft_token_ids, (sum(counts),), ("int",))
    check("bonus_token_ids", bonus_token_ids, (len(counts), 1), ("int",))
    check("is_greedy", is_greedy, (len(counts),), ("bool",))
    return counts, k


def synthetic_accept(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                     target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """The decision with the uniforms given, in V1's layout (§15.1, §15.2, §16.1).

    ``num_draft_tokens``: ``B`` ints; the flat ``(T,)`` tensors ``draft_token_ids``,
    ``uniform_probs`` (the one uniform of each draft), ``target_argmax`` and
    ``recovered_token_ids`` (the token a rejection emits for a greedy and for a random request);
    ``bonus_token_ids`` ``(B, 1)``; ``is_greedy`` ``(B,)`` bool. Returns ``(B, max_n + 1)``
    int32, -1 after each request's tokens. Draws nothing.
    """
    counts, _ = _check_v1(draft_token_ids, num_draft_tokens, synthetic_conditional_rates, bonus_token_ids,
                          is_greedy)
    tokens = sum(counts)
    check("uniform_probs", uniform_probs, (tokens,), ("float",))
    check("target_argmax", target_argmax, (tokens,), ("int",))
    check("recovered_token_ids", recovered_token_ids, (tokens,), ("int",))
    check_devices(draft_token_ids=draft_token_ids, uniform_probs=uniform_probs,
                   synthetic_conditional_rates=synthetic_conditional_rates, target_argmax=target_argmax,
                   recovered_token_ids=recovered_token_ids, bonus_token_ids=bonus_token_ids, is_greedy=is_greedy)
    return decide(counts, draft_token_ids, uniform_probs, synthetic_conditional_rates, target_argmax,
                   recovered_token_ids, bonus_token_ids, is_greedy)


def decide(counts, drafts, uniforms, rates, target_argmax, recovered, bonus, is_greedy):
    flat, real = grid(counts, drafts.device)
    draft_grid = drafts[flat]
    accepted = walk(draft_grid, real, uniforms[flat], rates)
    rejected = torch.where(is_greedy[:, None], target_argmax[flat], recovered[flat])
    n = real.sum(1)
    return emit(accepted, n, draft_grid, rejected, bonus.reshape(-1))


# -- V1's sampler with V1's generator calls (§16.2) ------------------------------------------------


def v1_uniforms(counts, generators, device):
    """§16.2: one float64 ``torch.rand`` over every draft on the default generator, then each
    seeded request's slice redrawn from its own generator, in request order; a request with
    no drafts draws nothing."""
    u = torch.rand((sum(counts),), dtype=torch.float64, device=device)
    starts = [0]
    for n in counts:
        starts.append(starts[-1] + n)
    for r in sorted(generators):
        if counts[r]:
            u[starts[r]:starts[r + 1]].uniform_(generator=generators[r])
    return u


def v1_exponentials(counts, vocab, generators, device):
    """§16.2: the ``Exp(1)`` row ``q`` of each request that a random request's recovered
    tokens come from: float32 over the default generator, then each seeded request's own row,
    in the dict's order, for those with drafts only."""
    q = torch.empty((len(counts), vocab), dtype=torch.float32, device=device)
    q.exponential_()
    for r, generator in generators.items():
        if counts[r] > 0:
            q[r].exponential_(generator=generator)
    return q


def v1_recovered(counts, drafts, target_logits, q):
    """§16.2: the token a random request's rejection emits at each draft position: the
    target's softmax without the rejected draft (the whole of it for a -1), sampled as
    ``argmax(p / q)`` with the request's row of ``q``."""
    probs = target_logits.softmax(dim=-1, dtype=torch.float32)
    owner = torch.repeat_interleave(torch.arange(len(counts), device=drafts.device),
                                    torch.tensor(counts, dtype=torch.int64, device=drafts.device))
    ids = torch.arange(target_logits.shape[1], device=drafts.device)
    kept = torch.where(ids == drafts[:, None].to(torch.int64), 0.0, probs)
    return (kept * q.reciprocal()[owner]).argmax(dim=-1).to(torch.int32)


def synthetic_rejection_sample(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                               generators, synthetic_conditional_rates):
    """V1's synthetic sampler with V1's own random numbers (§16.2): the uniforms, then, when
    any request samples, the exponentials of the recovered tokens, each call as V1 makes it;
    then the decision of :func:`synthetic_accept`, a draft the target does not allow (-inf)
    never accepted (§15.4).

    ``target_logits``: ``(T, V)`` float, already processed (temperature, top-k/p); greedy rows
    emit its argmax on a rejection. ``generators``: ``{request index: torch.Generator}`` for
    the seeded requests, on the tensors' device. Returns ``(B, max_n + 1)`` int32.
    """
    counts, _ = _check_v1(draft_token_ids, num_draft_tokens, synthetic_conditional_rates, bonus_token_ids,
                          is_greedy)
    if not isinstance(target_logits, torch.Tensor) or target_logits.dim() != 2:
        raise ValueError(f"target_logits must be a 2-D tensor, got {getattr(target_logits, 'shape', target_logits)}")
    check("target_logits", target_logits, (sum(counts), target_logits.shape[1]), ("float",))
    if target_logits.shape[1] < 1:
        raise ValueError("target_logits must have a vocabulary of at least one token")
    if not isinstance(generators, dict) or not all(type(r) is int and 0 <= r < len(counts) for r in generators):
        raise ValueError(f"generators must map request indices in [0, {len(counts)}) to generators, got {generators!r}")
    check_devices(draft_token_ids=draft_token_ids, target_logits=target_logits,
                   synthetic_conditional_rates=synthetic_conditional_rates, bonus_token_ids=bonus_token_ids,
                   is_greedy=is_greedy)
    device = target_logits.device
    uniforms = v1_uniforms(counts, generators, device)
    target_argmax = target_logits.argmax(dim=-1)
    if bool(is_greedy.all()):  # V1 draws no exponentials for an all-greedy batch
        recovered = target_argmax
    else:
        q = v1_exponentials(counts, target_logits.shape[1], generators, device)
        recovered = v1_recovered(counts, draft_token_ids, target_logits, q)
    allowed = forbid(draft_token_ids, target_logits, torch.arange(sum(counts), device=device))
    return decide(counts, allowed, uniforms, synthetic_conditional_rates, target_argmax, recovered, bonus_token_ids,
                  is_greedy)
