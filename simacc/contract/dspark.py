"""The references of sglang's DSpark simulated acceptance (CONTRACT.md Part III): the step's
length (§19), the simulated bonus (§20) and the accept under a simulated length (§21).

DSpark draws one length a decode step into a one-element device buffer, puts it in place of
its accept's correct length, and may sample the bonus token with a temperature. Each function
here is one of those steps as the contract states it; the accept's bonus is the target's token
at the *simulated* position (§21.3), where sglang 0.5.23's greedy paths without the fold take
the one at the real first mismatch.
"""

import random

import torch

from simacc.contract import validation as checks
from simacc.contract.caller import DEFAULT_METHOD
from simacc.contract.sampling import sample_simulated_acc_len

SEED_BITS = 31  # the bonus's one draw from Python's generator: random.getrandbits(31) (§20.3)
_TINY = torch.finfo(torch.float64).tiny


def begin_simulated_step(*, simulated_correct_len, simulate_acc_len, gamma):
    """Fill the one-element buffer with the step's correct-draft count ``L - 1`` (§19): ``L``
    from the sampler (§3) with ``max_len = gamma + 1`` and the method read at import (§5.1).
    No ``> 0`` check: a server turns simulation on only for a positive length."""
    checks.check_length(simulate_acc_len, positive=False)
    checks.check_int("gamma", gamma)
    checks.check_tensor("simulated_correct_len", simulated_correct_len, shape=(1,))
    length = sample_simulated_acc_len(simulate_acc_len, DEFAULT_METHOD, gamma + 1)
    simulated_correct_len.fill_(length - 1)


def _check_bonus_args(target_logits, correct_len, temperatures, bs, rows_per_request):
    checks.check_int("bs", bs)
    checks.check_int("rows_per_request", rows_per_request, minimum=1)
    if not isinstance(target_logits, torch.Tensor) or target_logits.dim() != 2 or not target_logits.is_floating_point():
        raise ValueError(f"target_logits must be a 2-D float tensor, got {getattr(target_logits, 'shape', None)}")
    if target_logits.shape[0] != bs * rows_per_request or target_logits.shape[1] < 1:
        raise ValueError(f"target_logits must be (bs * rows_per_request, V) = ({bs * rows_per_request}, V >= 1), "
                         f"got {tuple(target_logits.shape)}")
    checks.check_tensor("correct_len", correct_len, shape=(bs,))
    if not isinstance(temperatures, torch.Tensor) or not temperatures.is_floating_point() or temperatures.numel() != bs:
        raise ValueError(f"temperatures must be a float tensor of one temperature per request ({bs}), "
                         f"got {getattr(temperatures, 'shape', temperatures)}")
    checks.check_same_device(target_logits=target_logits, correct_len=correct_len, temperatures=temperatures)
    low, high = (int(correct_len.min()), int(correct_len.max())) if correct_len.device.type == "cpu" and bs else (0, 0)
    if not 0 <= low <= high < rows_per_request:
        raise ValueError(f"correct_len must lie in [0, rows_per_request - 1 = {rows_per_request - 1}], "
                         f"got {correct_len.tolist()}")


def simulated_bonus_sample(*, target_logits, correct_len, temperatures, bs, rows_per_request):
    """Each request's bonus token, ``(bs,)`` int64 (§20): a sample of ``softmax(x / T)`` over its
    row ``r * rows_per_request + correct_len[r]`` of ``target_logits``, or that row's first
    maximum where ``T <= 0``. The noise comes from one ``random.getrandbits(31)`` of Python's
    generator (a private torch generator seeded with it); torch's own generator is not drawn."""
    _check_bonus_args(target_logits, correct_len, temperatures, bs, rows_per_request)
    device = target_logits.device
    seed = random.getrandbits(SEED_BITS)
    rows = torch.arange(bs, device=device) * rows_per_request + correct_len.to(device=device, dtype=torch.int64)
    scores = target_logits.index_select(0, rows).double()
    uniforms = torch.rand(scores.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    gumbel = -torch.log(-torch.log(uniforms.clamp_min(_TINY))).to(device)
    temperature = temperatures.reshape(bs, 1).to(torch.float64)
    sampled = torch.where(temperature > 0, scores / temperature.clamp_min(_TINY) + gumbel, scores)
    return sampled.argmax(dim=1)


def _check_accept_args(candidates, target_predict, seq_lens, verify_lens, gate, outputs, simulated_correct_len,
                       bonus_in, bonus_parts):
    """Shapes and dtypes before anything is written; on a CPU also the simulated length's range
    (on CUDA that would cost a synchronisation a call)."""
    checks.check_tensor("candidates", candidates, ndim=2)
    bs, width = candidates.shape
    if width < 1:
        raise ValueError("candidates must have gamma + 1 >= 1 columns (the anchor, then the drafts), got 0")
    for name, t in (("seq_lens", seq_lens), ("verify_lens", verify_lens), *outputs.items()):
        if t is None:
            continue
        checks.check_tensor(name, t)
        if t.dim() != (2 if name == "out_tokens_out" else 1) or t.shape[0] < bs:
            raise ValueError(f"{name} must have at least bs = {bs} rows, got shape {tuple(t.shape)}")
    if outputs["out_tokens_out"].shape[1] != width:
        shape = tuple(outputs["out_tokens_out"].shape)
        raise ValueError(f"out_tokens_out must have gamma + 1 = {width} columns, got {shape}")
    checks.check_tensor("gate", gate, shape=(1,))
    if bonus_in is not None and bonus_parts is not None:
        raise ValueError("bonus_in and bonus_parts are two ways to supply the bonus: give one at most")
    supplied = bonus_in is not None or bonus_parts is not None
    if target_predict is None and (simulated_correct_len is None or not supplied):
        raise ValueError("target_predict may be None only with a simulated_correct_len and a supplied bonus")
    if target_predict is not None:
        checks.check_tensor("target_predict", target_predict, shape=(bs * width,))
    if bonus_in is not None:
        checks.check_tensor("bonus_in", bonus_in, ndim=1)
        if bonus_in.shape[0] < bs:
            raise ValueError(f"bonus_in must have at least bs = {bs} entries, got {bonus_in.shape[0]}")
    if bonus_parts is not None:
        part_val, part_idx, vocab = bonus_parts
        checks.check_int("vocab", vocab, minimum=1)
        checks.check_tensor("part_idx", part_idx, ndim=2)
        if not isinstance(part_val, torch.Tensor) or not part_val.is_floating_point() or \
                part_val.shape != part_idx.shape or part_val.shape[0] < bs or part_val.shape[1] < 1:
            raise ValueError(f"bonus_parts must hold float values and int indices of one shape (>= bs = {bs} rows, "
                             f"a split at least), got {getattr(part_val, 'shape', None)} and {tuple(part_idx.shape)}")
    if simulated_correct_len is not None:
        checks.check_tensor("simulated_correct_len", simulated_correct_len, shape=(1,))
        if simulated_correct_len.device.type == "cpu" and not 0 <= int(simulated_correct_len) < width:
            raise ValueError(f"simulated_correct_len must lie in [0, gamma = {width - 1}], "
                             f"got {int(simulated_correct_len)}")
    parts = bonus_parts[:2] if bonus_parts is not None else ()
    checks.check_same_device(candidates=candidates, target_predict=target_predict, seq_lens=seq_lens,
                             verify_lens=verify_lens, gate=gate, simulated_correct_len=simulated_correct_len,
                             bonus_in=bonus_in, **dict(zip(("part_val", "part_idx"), parts)), **outputs)


def static_accept_tail(*, candidates, target_predict, seq_lens, verify_lens, gate, correct_len_out, bonus_out,
                       cap_trim_lens_out, commit_lens_out, new_seq_lens_out, out_tokens_out,
                       simulated_correct_len=None, bonus_in=None, bonus_parts=None, gated_commit_lens_out=None):
    """DSpark's greedy accept and its bookkeeping, written into rows ``[:bs]`` of the output
    buffers (§21). ``candidates`` is ``(bs, gamma + 1)``: the anchor, then the drafts;
    ``target_predict`` the target's ``(bs * (gamma + 1),)`` argmax ids.

    The correct count is ``simulated_correct_len`` where given, else the drafts' leading
    matches with the target; the bonus is the one supplied (``bonus_parts``: the largest
    value's index, ties to the lowest; ``bonus_in``), else the target's token at that count,
    the position it is committed at (§21.3). Returns None.
    """
    outputs = {"correct_len_out": correct_len_out, "bonus_out": bonus_out, "cap_trim_lens_out": cap_trim_lens_out,
               "commit_lens_out": commit_lens_out, "new_seq_lens_out": new_seq_lens_out,
               "out_tokens_out": out_tokens_out, "gated_commit_lens_out": gated_commit_lens_out}
    _check_accept_args(candidates, target_predict, seq_lens, verify_lens, gate, outputs, simulated_correct_len,
                       bonus_in, bonus_parts)
    bs, width = candidates.shape
    drafts = candidates[:, 1:].to(torch.int64)
    target = None if target_predict is None else target_predict.reshape(bs, width).to(torch.int64)
    if simulated_correct_len is not None:
        correct = simulated_correct_len.to(torch.int64).expand(bs)
    else:  # the real greedy accept: a draft counts while it and every draft before it match the target
        correct = (drafts == target[:, : width - 1]).to(torch.int64).cummin(dim=1).values.sum(dim=1)
    if bonus_parts is not None:
        values, indices, vocab = bonus_parts
        values, indices = values[:bs], indices[:bs].to(torch.int64)
        best = values == values.amax(dim=1, keepdim=True)
        bonus = indices.masked_fill(~best, vocab).amin(dim=1)
    elif bonus_in is not None:
        bonus = bonus_in[:bs].to(torch.int64)
    else:
        bonus = target.gather(1, correct[:, None]).squeeze(1)
    commit = correct + 1
    tokens = torch.cat([drafts, drafts.new_zeros((bs, 1))], dim=1)
    tokens.scatter_(1, correct[:, None], bonus[:, None])
    correct_len_out[:bs] = correct
    bonus_out[:bs] = bonus
    cap_trim_lens_out[:bs] = 0
    commit_lens_out[:bs] = commit
    new_seq_lens_out[:bs] = seq_lens[:bs] + commit
    out_tokens_out[:bs] = tokens
    if gated_commit_lens_out is not None:
        gated_commit_lens_out[:bs] = torch.minimum(commit, verify_lens[:bs].to(torch.int64)) * gate.to(torch.int64)
