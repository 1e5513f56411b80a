"""Strategies for sglang's DSpark layouts (CONTRACT.md §19-§21): the step's length, the simulated
bonus and the accept under a simulated length.

As in :mod:`simacc.strategies.cases`, the case's seed seeds every tensor's contents, so a case
makes few draws. DSpark's Triton kernels address a token row through its row stride only
(CONTRACT.md §21.5), so a case's tensors are all contiguous or all one element into their
storage (``offset``): one draw. Batches stay small: upstream's kernels run a program a row, and
Triton's interpreter takes milliseconds a program.
"""

import functools
import math

import torch
from hypothesis import strategies as st

from simacc.contract.caller import DEFAULT_METHOD
from simacc.harness.config.contracts import DSPARK_BONUSES, VLLM_REQUESTS
from simacc.harness.model.cases import DsparkAcceptCase, DsparkBonusCase, DsparkLengthCase, TensorArg
from simacc.strategies import scalars as sc
from simacc.strategies import tensors as tn
from simacc.strategies.cases import _Contents, _logits

MAX_GAMMA = 8
_ROW_LAYOUTS = st.sampled_from(("contiguous", "offset"))
_BUFFER_LAYOUTS = st.sampled_from(("contiguous", "strided", "offset"))  # the length's buffer: any one-element view
_BOOLEANS = st.booleans()
_NAN = st.integers(0, 0).map(lambda _: math.nan)  # a branch with a draw of its own, as in strategies.cases
# a toy vocabulary, or now and then one that the upstream kernels split into blocks of 4096 (one, two, three)
_VOCABS = st.sampled_from((*range(1, 65), 4096, 4097, 8193))
_SPARE_ROWS = st.integers(0, 3)  # a static buffer's rows past the batch (a CUDA graph's, sized for the largest)
_SPLITS = st.sampled_from((1, 2, 4))  # a power of two, as the partials kernel makes them (§21.1)
_TEMPERATURES = (0.05, 4.0)  # a sampling request's temperature, uniform in this range


def _placed(values, layout):
    return {name: None if v is None else TensorArg(v, layout) for name, v in values.items()}


def dspark_length_cases(*, max_gamma=MAX_GAMMA, methods=None):
    """Cases for DSpark's step length: ``gamma`` in ``[0, max_gamma]``, lengths in and out of
    ``[1, gamma + 1]``, zero and negatives included (no ``> 0`` check, §19.2), NaN with
    ``match-expected``. ``methods`` replaces the method, which is otherwise the one this
    process reads at import (the call reads it there, not from its arguments). Shrinks toward
    gamma=0, a length of 1, contiguous.
    """
    sc._check_range("min_gamma", 0, "max_gamma", max_gamma)
    return _dspark_length_cases(sc.spec_steps(0, max_gamma), st.just(DEFAULT_METHOD) if methods is None else methods)


@functools.lru_cache(maxsize=None)
def _lengths(width, nan):
    lengths = sc.acc_lens(width, positive=False)
    return lengths | _NAN if nan else lengths


@st.composite
def _dspark_length_cases(draw, gammas, methods):
    gamma = draw(gammas, label="gamma")
    method = draw(methods, label="method")
    seed = draw(sc.seeds(), label="seed")
    buffer = _Contents(DsparkLengthCase, seed).ints("simulated_correct_len", (1,), torch.int64, *tn.WIDE)
    return DsparkLengthCase(
        simulated_correct_len=TensorArg(buffer, draw(_BUFFER_LAYOUTS, label="layout")),
        simulate_acc_len=draw(_lengths(gamma + 1, method == "match-expected"), label="simulate_acc_len"),
        gamma=gamma,
        simulate_acc_method=method,
        seed=seed,
    )


def dspark_bonus_cases(*, modes=VLLM_REQUESTS, min_bs=1, max_bs=8, max_rows=MAX_GAMMA + 1):
    """Cases for DSpark's simulated bonus: ``bs`` requests of ``rows_per_request`` verify rows
    each, logits with one maximum a row (integer scores below it, so the greedy bonus is one
    token on every device), ``correct_len`` one row for the batch (as DSpark passes it) or one
    a request. ``modes`` says which requests sample (``greedy``: temperatures 0 or negative;
    ``random``: in [0.05, 4]; ``mixed``). Shrinks toward bs=1, one row, greedy, a small vocabulary.
    """
    if not modes or set(modes) - set(VLLM_REQUESTS):
        raise ValueError(f"{modes=} must be a non-empty subset of {VLLM_REQUESTS}")
    sc._check_range("min_bs", max(min_bs, 1), "max_bs", max_bs)
    sc._check_range("min_rows", 1, "max_rows", max_rows)
    return _dspark_bonus_cases(st.sampled_from(tuple(modes)), st.integers(max(min_bs, 1), max_bs),
                               st.integers(1, max_rows))


@st.composite
def _dspark_bonus_cases(draw, modes, batch_sizes, row_counts):
    mode = draw(modes, label="mode")
    bs = draw(batch_sizes, label="bs")
    rows = draw(row_counts, label="rows_per_request")
    vocab = draw(_VOCABS, label="vocab")
    shared = draw(_BOOLEANS, label="one_correct_len")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(DsparkBonusCase, seed)
    correct_len = contents.ints("correct_len", (1 if shared else bs,), torch.int64, 0, rows).expand(bs).clone()
    gen = contents.generator("temperatures")
    low, high = _TEMPERATURES
    temperatures = torch.rand((bs, 1), generator=gen) * (high - low) + low
    greedy = {"greedy": torch.ones(bs, 1, dtype=torch.bool), "random": torch.zeros(bs, 1, dtype=torch.bool),
              "mixed": torch.rand((bs, 1), generator=gen) < 0.5}[mode]
    if mode == "mixed" and bs > 1:
        greedy[0], greedy[-1] = True, False  # both kinds
    # a greedy request's temperature: 0, or now and then a negative one (any T <= 0 is greedy, §20.2)
    temperatures = torch.where(greedy, torch.where(temperatures > 3.5, -1.0, 0.0), temperatures)
    values = {"target_logits": _logits(contents.generator("target_logits"), bs * rows, vocab),
              "correct_len": correct_len, "temperatures": temperatures}
    return DsparkBonusCase(**_placed(values, draw(_ROW_LAYOUTS, label="layout")), bs=bs, rows_per_request=rows,
                           seed=seed)


def dspark_accept_cases(*, bonuses=DSPARK_BONUSES, min_bs=1, max_bs=64, max_gamma=MAX_GAMMA, simulated=None,
                        gated=None):
    """Cases for DSpark's accept (the layout of ``static_accept_tail``): ``bs`` rows of an anchor
    and ``gamma`` drafts, each row's target agreeing with its first ``k`` drafts (``k`` from the
    seed, so the real count differs from the simulated one), static output buffers with spare
    rows, prefilled. ``bonuses`` says where the bonus may come from (``target``, ``bonus_in``,
    ``bonus_parts``); ``simulated`` True or False asks for a simulated length or none, ``gated``
    for ``gated_commit_lens_out`` or none (None: either). A supplied bonus sometimes comes
    without ``target_predict``, as the fold passes it.
    Shrinks toward bs=1, gamma=0, a simulated length of 0, the target's bonus, contiguous.
    """
    if not bonuses or set(bonuses) - set(DSPARK_BONUSES):
        raise ValueError(f"{bonuses=} must be a non-empty subset of {DSPARK_BONUSES}")
    sc._check_range("min_bs", max(min_bs, 1), "max_bs", max_bs)
    sc._check_range("min_gamma", 0, "max_gamma", max_gamma)
    simulations = _BOOLEANS.map(lambda real: not real) if simulated is None else st.just(simulated)
    gatings = _BOOLEANS if gated is None else st.just(gated)
    return _dspark_accept_cases(st.sampled_from(tuple(bonuses)), sc.batch_sizes(max(min_bs, 1), max_bs),
                                sc.spec_steps(0, max_gamma), simulations, gatings)


@functools.lru_cache(maxsize=None)
def _counts(gamma):
    return st.integers(0, gamma)


def _agreeing(contents, bs, gamma, vocab):
    """``(candidates, target)``: random tokens, then each row's target made to agree with its
    first ``k`` drafts and to differ at draft ``k + 1`` (``k`` in ``[0, gamma]``, from the seed)."""
    width = gamma + 1
    candidates = contents.ints("candidates", (bs, width), torch.int64, 0, vocab)
    target = contents.ints("target_predict", (bs, width), torch.int64, 0, vocab)
    agree = torch.randint(0, width, (bs,), generator=contents.generator("seed")).tolist()  # the field no tensor uses
    for row, k in enumerate(agree):
        target[row, :k] = candidates[row, 1 : k + 1]
        if k < gamma:
            target[row, k] = (candidates[row, k + 1] + 1) % max(vocab, 2)
    return candidates, target


@st.composite
def _dspark_accept_cases(draw, bonuses, batch_sizes, gammas, simulations, gatings):
    bonus = draw(bonuses, label="bonus")
    bs = draw(batch_sizes, label="bs")
    gamma = draw(gammas, label="gamma")
    width = gamma + 1
    simulated = draw(simulations, label="simulated")
    sim = draw(_counts(gamma), label="simulated_correct_len") if simulated else None
    spare = draw(_SPARE_ROWS, label="spare_rows")
    vocab = draw(sc.vocab_sizes(), label="vocab")
    keeps_target = bonus == "target" or not simulated or draw(_BOOLEANS, label="passes_target_predict")
    gated = draw(gatings, label="gated")
    seed = draw(sc.seeds(), label="seed")
    contents = _Contents(DsparkAcceptCase, seed)
    rows = bs + spare
    candidates, target = _agreeing(contents, bs, gamma, vocab)
    values = {
        "candidates": candidates,
        "target_predict": target.reshape(-1) if keeps_target else None,
        "seq_lens": contents.ints("seq_lens", (bs,), torch.int64, 0, 2**20),
        "verify_lens": contents.ints("verify_lens", (bs,), torch.int64, 0, width + 2),
        "gate": contents.ints("gate", (1,), torch.int32, 0, 2),
        "simulated_correct_len": None if sim is None else torch.tensor([sim], dtype=torch.int64),
        "bonus_in": contents.ints("bonus_in", (rows,), torch.int64, 0, vocab) if bonus == "bonus_in" else None,
        "part_val": None,
        "part_idx": None,
        "gated_commit_lens_out": None,
    }
    for name in ("correct_len_out", "bonus_out", "new_seq_lens_out"):
        values[name] = contents.ints(name, (rows,), torch.int64, *tn.WIDE)
    for name in ("cap_trim_lens_out", "commit_lens_out"):
        values[name] = contents.ints(name, (rows,), torch.int32, *tn.INT32)
    values["out_tokens_out"] = contents.ints("out_tokens_out", (rows, width), torch.int64, *tn.WIDE)
    if gated:
        values["gated_commit_lens_out"] = contents.ints("gated_commit_lens_out", (rows,), torch.int32, *tn.INT32)
    part_vocab = max(vocab, 1)
    if bonus == "bonus_parts":
        splits = draw(_SPLITS, label="splits")
        # a few integer-valued maxima, so that two splits often tie (ties go to the lower index)
        values["part_val"] = contents.ints("part_val", (rows, splits), torch.float32, -2, 2)
        values["part_idx"] = contents.ints("part_idx", (rows, splits), torch.int32, 0, min(part_vocab, 2**31 - 1))
    return DsparkAcceptCase(**_placed(values, draw(_ROW_LAYOUTS, label="layout")), vocab=part_vocab, seed=seed)
