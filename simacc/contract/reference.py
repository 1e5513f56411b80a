"""Reference implementations of the contracts in CONTRACT.md.

Vectorised torch on whatever device the inputs live on: a handful of ops per call, no loop
over rows, so the cost barely grows with the batch. Every public function validates all of
its arguments before it draws from the generator or writes a buffer.
"""

import torch

from simacc.contract import validation as checks
from simacc.contract.caller import DEFAULT_METHOD, DEFAULT_TOKEN_ID, DEFAULT_TOKEN_MODE
from simacc.contract.sampling import sample_simulated_acc_len

FIXED_TOKEN_ID = DEFAULT_TOKEN_ID  # 100 unless SGLANG_SIMULATE_ACC_TOKEN_ID says otherwise


_ROWS = {}  # (width, length, device) -> (keep, base): see _simulated_index


def _row_template(width, length, device):
    """``keep[j] = j < length`` and ``base[j] = j if j < length else -1`` on ``device``,
    made once per shape, so that the whole index is one ``addcmul``."""
    key = (width, length, device)
    found = _ROWS.get(key)
    if found is None:
        cols = torch.arange(width, dtype=torch.int32, device=device)
        keep = cols < length
        found = _ROWS[key] = (keep.to(torch.int32), torch.where(keep, cols, -1).to(torch.int32))
    return found


def _simulated_index(roots, length, width):
    """``(bs, width)`` int32 from ``(bs, 1)`` roots: row ``i`` is ``root_i + 0..length-1``,
    then -1 (``root * keep + base``)."""
    keep, base = _row_template(width, length, roots.device)
    return torch.addcmul(base, roots if roots.dtype == torch.int32 else roots.to(torch.int32), keep)


def _check_roots_fit(roots, width, size):
    """Every ``(bs, 1)`` root in ``[0, size - width]``, so the accepted slots fit in
    ``predict``: a clamp and a comparison, no reduction or scalar read when they do."""
    limit = size - width
    if limit >= 0 and torch.equal(roots.clamp(0, limit), roots):
        return
    low, high = (int(v) for v in roots.aminmax())
    raise ValueError(
        f"accept_index roots must lie in [0, {limit}] so the accepted slots fit in predict "
        f"(length {size}), got [{low}, {high}]"
    )


def _check_index_args(accept_index, predict, num_correct_drafts, bs, spec_steps):
    checks.check_int("bs", bs)
    checks.check_int("spec_steps", spec_steps)
    checks.check_tensor("accept_index", accept_index, shape=(bs, spec_steps + 1))
    checks.check_tensor("predict", predict, ndim=1)
    checks.check_tensor("num_correct_drafts", num_correct_drafts, shape=(bs,))


def _check_eagle_args(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                      spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                      fixed_token_id):
    """Every check, in upstream's order, each raising with a message that names the argument."""
    checks.check_length(simulate_acc_len)
    checks.check_method(simulate_acc_method)
    checks.check_mode(simulate_acc_token_mode)
    checks.check_int("fixed_token_id", fixed_token_id, minimum=-(2**63))
    _check_index_args(accept_index, predict, num_correct_drafts, bs, spec_steps)
    checks.check_fits("fixed_token_id", fixed_token_id, predict)
    real = simulate_acc_token_mode == "real-draft-token"
    tokens = {"candidates": candidates, "target_predict": target_predict} if real else {}
    if real:
        _check_token_tensors(tokens, bs, spec_steps + 1, "real-draft-token mode", "spec_steps + 1")
    checks.check_same_device(accept_index=accept_index, predict=predict, num_correct_drafts=num_correct_drafts,
                             **tokens)


def _check_token_tensors(tokens, bs, width, who, named):
    """Real mode's two token tensors (``{name: tensor}``, candidates first): integer, of one
    shape, ``bs`` rows and at least ``width`` columns (``named``: how the width is called)."""
    (cand_name, candidates), (target_name, target) = tokens.items()
    checks.check_tensor(cand_name, candidates, shape=(bs, None))
    checks.check_tensor(target_name, target, shape=tuple(candidates.shape))
    if candidates.shape[1] < width:
        raise ValueError(f"{who} needs {cand_name} with >= {named} = {width} columns, "
                         f"got shape {tuple(candidates.shape)}")


def generate_simulated_accept_index(
    accept_index,
    predict,
    num_correct_drafts,
    candidates,
    target_predict,
    bs,
    spec_steps,
    simulate_acc_len,
    simulate_acc_method=DEFAULT_METHOD,
    simulate_acc_token_mode=DEFAULT_TOKEN_MODE,
    fixed_token_id=FIXED_TOKEN_ID,
):
    """Force one acceptance length ``L`` on the batch and return the simulated index.

    Writes ``num_correct_drafts`` (``L - 1``) and ``predict``: all ``fixed_token_id`` in
    fixed mode; in real-draft-token mode the accepted slots get the draft tokens and the
    last one the target's bonus token, other slots keep their value. Stricter than
    upstream: an unknown token mode is an error here, not silently fixed.
    """
    real = simulate_acc_token_mode == "real-draft-token"
    if not checks.plainly_valid_eagle(accept_index, predict, num_correct_drafts, candidates, target_predict,
                                      bs, spec_steps, simulate_acc_len, simulate_acc_method,
                                      simulate_acc_token_mode, fixed_token_id):
        _check_eagle_args(accept_index, predict, num_correct_drafts, candidates, target_predict, bs,
                          spec_steps, simulate_acc_len, simulate_acc_method, simulate_acc_token_mode,
                          fixed_token_id)
    width = spec_steps + 1
    roots = accept_index[:, :1]
    if real and bs > 0 and roots.device.type == "cpu":
        # On CUDA this check would cost a device synchronisation per call, and
        # upstream makes none: there an out-of-range root fails in torch's indexing instead.
        _check_roots_fit(roots, width, predict.shape[0])

    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    out = _simulated_index(roots, length, width)
    num_correct_drafts.fill_(length - 1)
    if not real:
        predict.fill_(fixed_token_id)
        return out
    _write_tokens(predict, out, candidates, target_predict, length)
    return out


def _write_tokens(predict, out, candidates, target_predict, length):
    """CONTRACT.md §4.5: the drafts ``candidates[:, 1:L]`` then the bonus ``target_predict[:, L-1]``
    at each row's accepted slots, cast to ``predict``'s dtype."""
    tokens = torch.cat([candidates[:, 1:length], target_predict[:, length - 1 : length]], 1)
    predict[out[:, :length]] = tokens.to(predict.dtype)


def simulated_accept(
    *,
    accept_indices,
    predict_tokens,
    num_correct_drafts,
    candidate_tokens,
    target_tokens,
    width,
    num_accept_tokens,
    real_tokens,
):
    """The kernel op (CONTRACT.md §8): the simulation with the length given.

    ``L = num_accept_tokens`` in ``[1, width]`` for ``bs = accept_indices.shape[0]`` rows;
    returns a new ``(bs, width)`` int32 index, writes ``num_correct_drafts`` (``L - 1``) and
    ``predict_tokens``: every element of the view becomes the fixed id (100 unless
    ``SGLANG_SIMULATE_ACC_TOKEN_ID`` says otherwise) when ``real_tokens`` is False
    (the token tensors are then not read), else the accepted slots get the drafts and the
    bonus. Every tensor is read and written through its strides. Nothing is drawn.
    """
    checks.check_int("width", width, minimum=1)
    checks.check_int("num_accept_tokens", num_accept_tokens, minimum=1)
    if num_accept_tokens > width:
        raise ValueError(f"num_accept_tokens must be <= width = {width}, got {num_accept_tokens}")
    if not isinstance(real_tokens, bool):
        raise TypeError(f"real_tokens must be a bool, got {type(real_tokens).__name__}")
    checks.check_tensor("accept_indices", accept_indices, ndim=2)
    bs = accept_indices.shape[0]
    if accept_indices.shape[1] < 1:
        raise ValueError(f"accept_indices must have a root column, got shape {tuple(accept_indices.shape)}")
    checks.check_tensor("predict_tokens", predict_tokens, ndim=1)
    checks.check_tensor("num_correct_drafts", num_correct_drafts, shape=(bs,))
    tokens = {"candidate_tokens": candidate_tokens, "target_tokens": target_tokens} if real_tokens else {}
    if real_tokens:
        _check_token_tensors(tokens, bs, width, "real_tokens", "width")
    checks.check_same_device(accept_indices=accept_indices, predict_tokens=predict_tokens,
                             num_correct_drafts=num_correct_drafts, **tokens)
    roots = accept_indices[:, :1]
    if real_tokens and bs > 0 and roots.device.type == "cpu":
        _check_roots_fit(roots, width, predict_tokens.shape[0])
    out = _simulated_index(roots, num_accept_tokens, width)
    num_correct_drafts.fill_(num_accept_tokens - 1)
    if real_tokens:
        _write_tokens(predict_tokens, out, candidate_tokens, target_tokens, num_accept_tokens)
    else:
        predict_tokens.fill_(FIXED_TOKEN_ID)
    return out


def legacy_generate_simulated_accept_index(
    accept_index,
    predict,
    num_correct_drafts,
    bs,
    spec_steps,
    simulate_acc_len,
    simulate_acc_method=DEFAULT_METHOD,
):
    """The behaviour before token modes existed: fixed mode only, the default fixed id (100).

    Upstream allocated the index on ``"cuda"``; this allocates on ``accept_index.device``,
    which gives the same bytes on CUDA and also runs on a CPU.
    """
    checks.check_length(simulate_acc_len)
    checks.check_method(simulate_acc_method)
    _check_index_args(accept_index, predict, num_correct_drafts, bs, spec_steps)
    checks.check_same_device(
        accept_index=accept_index, predict=predict, num_correct_drafts=num_correct_drafts
    )
    width = spec_steps + 1
    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, width)
    out = _simulated_index(accept_index[:, :1], length, width)
    num_correct_drafts.fill_(length - 1)
    predict.fill_(FIXED_TOKEN_ID)
    return out


def apply_dflash_simulated_acceptance(
    *,
    candidates,
    target_predict,
    accept_len,
    commit_lens,
    bonus,
    out_tokens,
    simulate_acc_len,
    simulate_acc_method,
    simulate_acc_token_mode,
    next_token_logits=None,
    fixed_token_id=FIXED_TOKEN_ID,
):
    """The DFLASH block layout: ``L`` in ``[1, B]`` for ``(bs, B)`` blocks.

    Unlike the EAGLE function there is no ``> 0`` check on the length (``x <= 0`` acts as 1
    under ``match-expected``). In real mode a missing ``target_predict`` is the argmax of
    ``next_token_logits`` viewed as ``(bs, B)``, computed before the draw.
    """
    checks.check_length(simulate_acc_len, positive=False)
    checks.check_method(simulate_acc_method)
    checks.check_mode(simulate_acc_token_mode)
    checks.check_int("fixed_token_id", fixed_token_id, minimum=-(2**63))
    checks.check_tensor("out_tokens", out_tokens, ndim=2)
    bs, block = out_tokens.shape
    checks.check_tensor("candidates", candidates, shape=(bs, block))
    for name, t in (("accept_len", accept_len), ("commit_lens", commit_lens), ("bonus", bonus)):
        checks.check_tensor(name, t, shape=(bs,))
    checks.check_fits("fixed_token_id", fixed_token_id, bonus, out_tokens)
    real = simulate_acc_token_mode == "real-draft-token"
    if real and target_predict is None:
        if not isinstance(next_token_logits, torch.Tensor):
            raise ValueError(
                "real-draft-token mode needs target_predict or next_token_logits, got neither"
            )
        if next_token_logits.dim() != 2 or next_token_logits.shape[0] != bs * block:
            raise ValueError(
                f"next_token_logits must be 2-D with bs * B = {bs * block} rows, "
                f"got shape {tuple(next_token_logits.shape)}"
            )
    elif real:
        checks.check_tensor("target_predict", target_predict, shape=(bs, block))
    checks.check_same_device(
        candidates=candidates,
        accept_len=accept_len,
        commit_lens=commit_lens,
        bonus=bonus,
        out_tokens=out_tokens,
        target_predict=target_predict if real else None,
        next_token_logits=next_token_logits if real and target_predict is None else None,
    )
    if block == 0:
        raise ValueError("out_tokens must have at least one column (B >= 1), got B = 0")
    if real and target_predict is None:
        target_predict = torch.argmax(next_token_logits, dim=-1).reshape(bs, block)

    length = sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, block)
    accept_len.fill_(length - 1)
    commit_lens.fill_(length)
    if not real:
        bonus.fill_(fixed_token_id)
        out_tokens.fill_(fixed_token_id)
        return
    out_tokens.zero_()
    out_tokens[:, : length - 1] = candidates[:, 1:length].to(out_tokens.dtype)
    bonus.copy_(target_predict[:, length - 1])
    out_tokens[:, length - 1] = bonus.to(out_tokens.dtype)


def verify_chain_greedy(candidates, target_predict, predict, accept_index, accept_token_num):
    """Greedy verification of ``topk == 1`` chains, in place: the oracle real mode mirrors.

    Draft ``j+1`` is accepted while ``candidates[i, j+1] == target_predict[i, j]``. With
    ``k`` accepted: ``accept_index[i, :k+1] = i*D + 0..k`` (rest untouched),
    ``accept_token_num[i] = k`` and ``predict[i*D + j] = target_predict[i, j]`` for
    ``j <= k`` (other slots untouched).
    """
    checks.check_tensor("candidates", candidates, ndim=2)
    bs, drafts = candidates.shape
    checks.check_tensor("target_predict", target_predict, shape=(bs, drafts))
    checks.check_tensor("accept_index", accept_index, shape=(bs, None))
    checks.check_tensor("predict", predict, ndim=1)
    checks.check_tensor("accept_token_num", accept_token_num, shape=(bs,))
    checks.check_same_device(
        candidates=candidates,
        target_predict=target_predict,
        predict=predict,
        accept_index=accept_index,
        accept_token_num=accept_token_num,
    )
    if accept_index.shape[1] < drafts:
        raise ValueError(
            f"accept_index must have >= D = {drafts} columns, got {tuple(accept_index.shape)}"
        )
    if predict.shape[0] < bs * drafts:
        raise ValueError(f"predict must hold >= bs * D = {bs * drafts} slots, got {predict.shape[0]}")
    matches = (candidates[:, 1:] == target_predict[:, :-1]).long()
    accepted = matches.cumprod(dim=1).sum(dim=1)  # k per row
    cols = torch.arange(drafts, device=candidates.device)
    keep = cols <= accepted[:, None]  # (bs, D): the root and the accepted drafts
    slots = torch.arange(bs, device=candidates.device)[:, None] * drafts + cols
    predict[slots[keep]] = target_predict[keep].to(predict.dtype)
    head = accept_index[:, :drafts]
    head.copy_(torch.where(keep, slots.to(accept_index.dtype), head))
    accept_token_num.copy_(accepted)
