"""Composite strategies for whole cases: coherent verify states for each contract.

Cases stay inside the contract (SPEC.md): accepted ranges are disjoint and inside
``predict``, and real-mode chains have ``D == W``. Roots follow sglang's ``i * D`` layout
or another valid one, so an implementation that assumes the layout is caught.
"""

import math

import torch
from hypothesis import strategies as st

import simacc as sa
from simacc.cases import DflashCase, EagleCase, TensorArg
from strategies import scalars as sc
from strategies import tensors as tn

ROOT_LAYOUTS = ("sglang", "permuted", "spaced")


def _check_root_layout(layout):
    if layout is not None and layout not in ROOT_LAYOUTS:
        raise ValueError(f"{layout=} must be None or one of {ROOT_LAYOUTS}")


def roots(bs, draft_token_num, *, layout=None):
    """``(roots, predict_len)``: one root per request, each with ``draft_token_num``
    slots of its own in a flat buffer of ``predict_len``.

    ``sglang`` puts request ``i`` at ``i * D``; ``permuted`` shuffles the blocks;
    ``spaced`` leaves gaps and an offset; ``layout=None`` draws one. Shrinks toward
    ``sglang``.
    """
    if bs < 0 or draft_token_num < 1:
        raise ValueError(f"{bs=} must be >= 0 and {draft_token_num=} >= 1")
    _check_root_layout(layout)
    return _roots(bs, draft_token_num, layout)


@st.composite
def _roots(draw, bs, draft_token_num, layout):
    layout = layout or draw(st.sampled_from(ROOT_LAYOUTS), label="roots.layout")
    d = draft_token_num
    if layout == "sglang":
        return [i * d for i in range(bs)], bs * d
    if layout == "permuted":
        order = draw(st.permutations(range(bs)), label="roots.order")
        return [j * d for j in order], bs * d
    gap = draw(st.integers(1, 5), label="roots.gap")
    start = draw(st.integers(0, 5), label="roots.start")
    return [start + i * (d + gap) for i in range(bs)], start + bs * (d + gap)


def eagle_cases(
    *,
    modes=sa.TOKEN_MODES,
    min_bs=0,
    max_bs=256,
    max_spec_steps=sc.MAX_SPEC_STEPS,
    acc_lens=None,
    methods=None,
    root_layout=None,
):
    """Cases for ``generate_simulated_accept_index`` in the given token ``modes``.

    Fixed mode may carry trees (``D > W``) or no candidates at all (``None``); real mode is
    a chain (``D == W``). ``acc_lens``/``methods`` replace the default length and method
    strategies; ``root_layout`` fixes one of ``ROOT_LAYOUTS``. Shrinks toward bs=1,
    spec_steps=0, a length of 1, small token ids, sglang roots and contiguous tensors.
    """
    _check_root_layout(root_layout)
    return _eagle_cases(
        sc.token_modes(modes),
        sc.batch_sizes(min_bs, max_bs),
        sc.spec_steps(0, max_spec_steps),
        acc_lens,
        sc.methods() if methods is None else methods,
        root_layout,
    )


@st.composite
def _eagle_cases(draw, modes, batch_sizes, spec_steps, acc_lens, methods, root_layout):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    steps = draw(spec_steps, label="spec_steps")
    width = steps + 1
    real = mode == "real-draft-token"
    d = width if real else width + draw(st.integers(0, 8), label="tree_extra_nodes")
    root_list, predict_len = draw(roots(bs, d, layout=root_layout))

    index = tn.fill((bs, width), torch.int32, -1, predict_len + 1, draw(sc.seeds(), label="index.seed"))
    if bs:
        index[:, 0] = torch.tensor(root_list, dtype=torch.int32)
    index_layout = draw(tn.layouts(2), label="accept_index.layout")

    candidates = target = None
    if real or draw(st.booleans(), label="passes_candidates"):
        vocab = draw(sc.vocab_sizes(), label="vocab")
        dtype = draw(tn.token_dtypes(), label="candidates.dtype")
        candidates = draw(tn.int_tensors((bs, d), dtype, 0, vocab, label="candidates"))
        target = draw(tn.int_tensors((bs, d), torch.int64, 0, vocab, label="target_predict"))

    return EagleCase(
        accept_index=TensorArg(index, index_layout),
        predict=draw(tn.arbitrary_int32((predict_len,), label="predict")),
        num_correct_drafts=draw(tn.arbitrary_int32((bs,), label="num_correct_drafts")),
        candidates=candidates,
        target_predict=target,
        bs=bs,
        spec_steps=steps,
        simulate_acc_len=draw(sc.acc_lens(width) if acc_lens is None else acc_lens, label="simulate_acc_len"),
        simulate_acc_method=draw(methods, label="method"),
        simulate_acc_token_mode=mode,
        seed=draw(sc.seeds(), label="seed"),
    )


def chain_cases(*, max_bs=64, max_spec_steps=sc.MAX_SPEC_STEPS):
    """Real-mode chains whose target agrees with exactly the first ``k`` drafts of every
    row, roots at ``i * D``, ``accept_index`` -1 beyond the root, and the integer length
    ``k + 1`` (which samples exactly itself): the setting in which real-mode simulation
    must equal greedy verification (SPEC.md). ``k`` is ``simulate_acc_len - 1``.
    Shrinks toward bs=1, spec_steps=0, k=0.
    """
    return _chain_cases(sc.batch_sizes(1, max_bs), sc.spec_steps(0, max_spec_steps))


@st.composite
def _chain_cases(draw, batch_sizes, spec_steps):
    bs = draw(batch_sizes, label="bs")
    steps = draw(spec_steps, label="spec_steps")
    width = steps + 1
    k = draw(st.integers(0, steps), label="k")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidates.dtype")
    cand = tn.fill((bs, width), dtype, 0, vocab, draw(sc.seeds(), label="candidates.seed"))
    target = tn.fill((bs, width), torch.int64, 0, vocab, draw(sc.seeds(), label="target.seed"))
    target[:, :k] = cand[:, 1 : k + 1].long()
    if k < steps:  # the first disagreement
        target[:, k] = (cand[:, k + 1].long() + 1) % vocab
    index = torch.full((bs, width), -1, dtype=torch.int32)
    index[:, 0] = torch.arange(bs, dtype=torch.int32) * width
    return EagleCase(
        accept_index=TensorArg(index),
        predict=draw(tn.arbitrary_int32((bs * width,), label="predict")),
        num_correct_drafts=draw(tn.arbitrary_int32((bs,), label="num_correct_drafts")),
        candidates=TensorArg(cand, draw(tn.layouts(2), label="candidates.layout")),
        target_predict=TensorArg(target, draw(tn.layouts(2), label="target.layout")),
        bs=bs,
        spec_steps=steps,
        simulate_acc_len=float(k + 1),  # an integer length samples exactly itself
        simulate_acc_method="match-expected",
        simulate_acc_token_mode="real-draft-token",
        seed=draw(sc.seeds(), label="seed"),
    )


def dflash_cases(*, modes=sa.TOKEN_MODES, min_bs=0, max_bs=256, max_block=16, methods=None):
    """Cases for ``apply_dflash_simulated_acceptance``: ``(bs, B)`` blocks, ``B`` in
    ``[1, max_block]``.

    ``target_predict`` is sometimes missing: ``None`` in fixed mode, float32 logits with a
    unique maximum per row in real mode (so the argmax is the same on every device). Lengths
    include zero and negatives (no ``> 0`` check in this contract), and NaN with
    ``match-expected``. ``methods`` replaces the method strategy. Shrinks toward bs=1,
    B=1, fixed mode.
    """
    if max_block < 1:
        raise ValueError(f"{max_block=} must be >= 1")
    return _dflash_cases(
        sc.token_modes(modes),
        sc.batch_sizes(min_bs, max_bs),
        max_block,
        sc.methods() if methods is None else methods,
    )


@st.composite
def _dflash_cases(draw, modes, batch_sizes, max_block, methods):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    block = draw(st.integers(1, max_block), label="B")
    method = draw(methods, label="method")
    lengths = sc.acc_lens(block, positive=False)
    if method == "match-expected":
        # integers(0, 0), not just(): a branch without a draw of its own would shrink first
        lengths = lengths | st.integers(0, 0).map(lambda _: math.nan)
    vocab = draw(sc.vocab_sizes(), label="vocab")
    dtype = draw(tn.token_dtypes(), label="candidates.dtype")
    target = logits = None
    if draw(st.booleans(), label="passes_target"):
        target = draw(tn.int_tensors((bs, block), torch.int64, 0, vocab, label="target_predict"))
    elif mode == "real-draft-token":  # fixed mode passes None through, real mode uses logits
        classes = draw(st.integers(1, 64), label="logit_classes")
        gen = torch.Generator().manual_seed(draw(sc.seeds(), label="logits.seed"))
        scores = torch.rand((bs * block, classes), generator=gen).argsort(dim=1).float()
        logits = TensorArg(scores, draw(tn.layouts(2), label="logits.layout"))
    return DflashCase(
        candidates=draw(tn.int_tensors((bs, block), dtype, 0, vocab, label="candidates")),
        target_predict=target,
        accept_len=draw(tn.arbitrary_int32((bs,), label="accept_len")),
        commit_lens=draw(tn.arbitrary_int32((bs,), label="commit_lens")),
        bonus=draw(tn.int_tensors((bs,), torch.int64, -(2**40), 2**40, label="bonus")),
        out_tokens=draw(tn.int_tensors((bs, block), torch.int64, -(2**40), 2**40, label="out_tokens")),
        simulate_acc_len=draw(lengths, label="simulate_acc_len"),
        simulate_acc_method=method,
        simulate_acc_token_mode=mode,
        next_token_logits=logits,
        seed=draw(sc.seeds(), label="seed"),
    )
