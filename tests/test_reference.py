"""Example tests that pin hand-computed outputs of the EAGLE reference functions
(SPEC.md, "generate_simulated_accept_index", "Legacy behaviour", "greedy verification";
issue #2).

Every expected tensor is a literal worked out by hand from the SPEC. ``L`` is forced with
``match-expected`` and an integer ``x`` (``x < W`` yields exactly ``x``, ``x >= W`` yields
``W``). The real-mode tables use ``candidates[i, j] = 10*(i+1) + j`` and
``target_predict[i, j] = 10*(i+1) + j + 5`` (so row 0 is 10, 11, ... / 15, 16, ...), and
``predict`` starts as -1, -2, ... so every untouched slot is visible.
"""

import pytest
import torch

import simacc as sa


def i32(data, shape=None):
    t = torch.tensor(data, dtype=torch.int32)
    return t if shape is None else t.reshape(shape)


def summary(t):
    return f"Tensor[size={tuple(t.shape)}, dtype={t.dtype}, device={t.device}]"


def assert_tensor(what, got, expected):
    """Exact equality of an integer tensor, dtype, shape and device included."""
    __tracebackhide__ = True
    assert isinstance(got, torch.Tensor), f"{what}={got!r}, but should be {summary(expected)}"
    assert summary(got) == summary(expected), f"{what}={summary(got)}, but should be {summary(expected)}"
    if not torch.equal(got, expected):
        at = tuple((got != expected).nonzero()[0].tolist())
        raise AssertionError(
            f"{what}[{at}]={got[at].item()}, but should be {expected[at].item()} "
            f"[{what}={got.tolist()}]"
        )


def chain(bs, drafts, dtype=torch.int64):
    """The candidates / target_predict pair described in the module note."""
    base = 10 * torch.arange(1, bs + 1)[:, None] + torch.arange(drafts)
    return base.to(dtype), (base + 5).to(dtype)


def roots_index(roots, width):
    """``(bs, width)`` int32 with the roots in column 0 and 77 (never read) elsewhere."""
    return i32([[r] + [77] * (width - 1) for r in roots], (len(roots), width))


def simulate(roots, width, predict, x, mode="fixed", cand_dtype=torch.int64, **extra):
    bs = len(roots)
    candidates, target = chain(bs, width, cand_dtype) if mode != "fixed" else (None, None)
    ncd = torch.full((bs,), 9, dtype=torch.int32)
    out = sa.generate_simulated_accept_index(
        accept_index=roots_index(roots, width),
        predict=predict,
        num_correct_drafts=ncd,
        candidates=candidates,
        target_predict=target,
        bs=bs,
        spec_steps=width - 1,
        simulate_acc_len=x,
        simulate_acc_method="match-expected",
        simulate_acc_token_mode=mode,
        **extra,
    )
    return out, ncd


INDEX_CASES = [  # id, roots, W, len(predict), x, L, expected index
    ("bs 1, W 1, L 1", [0], 1, 1, 1, 1, [[0]]),
    ("bs 1, L = W = 4", [0], 4, 4, 4, 4, [[0, 1, 2, 3]]),
    ("bs 3, L 1", [0, 3, 6], 3, 9, 1, 1, [[0, -1, -1], [3, -1, -1], [6, -1, -1]]),
    ("bs 2, L 2", [0, 3], 3, 6, 2, 2, [[0, 1, -1], [3, 4, -1]]),
    ("roots not at i*D, x > W", [5, 1], 3, 8, 9, 3, [[5, 6, 7], [1, 2, 3]]),
    ("bs 4, tree with D 5 > W 2", [0, 5, 10, 15], 2, 20, 2, 2, [[0, 1], [5, 6], [10, 11], [15, 16]]),
    ("bs 0", [], 3, 2, 2, 2, []),
]


@pytest.mark.parametrize("roots, width, n, x, length, index", [c[1:] for c in INDEX_CASES],
                         ids=[c[0] for c in INDEX_CASES])
def test_fixed_mode_writes_the_index_the_count_and_100_everywhere(roots, width, n, x, length, index):
    out, ncd = simulate(roots, width, -torch.arange(1, n + 1, dtype=torch.int32), x)
    assert_tensor("index", out, i32(index, (len(roots), width)))
    assert_tensor("num_correct_drafts", ncd, i32([length - 1] * len(roots)))


@pytest.mark.parametrize("token", [100, 7, 0, -1])
def test_fixed_mode_fills_every_predict_slot_with_the_fixed_token(token):
    predict = -torch.arange(1, 9, dtype=torch.int32)
    extra = {} if token == 100 else {"fixed_token_id": token}
    simulate([0, 3], 3, predict, 2, **extra)
    assert_tensor("predict", predict, i32([token] * 8))


REAL_CASES = [  # id, roots, W, len(predict), x, L, expected index, expected predict
    ("bs 2, L 2", [0, 3], 3, 6, 2, 2, [[0, 1, -1], [3, 4, -1]], [11, 16, -3, 21, 26, -6]),
    ("bs 2, L 1 writes only the bonus", [0, 3], 3, 6, 1, 1, [[0, -1, -1], [3, -1, -1]],
     [15, -2, -3, 25, -5, -6]),
    ("bs 2, L = W", [0, 3], 3, 6, 3, 3, [[0, 1, 2], [3, 4, 5]], [11, 12, 17, 21, 22, 27]),
    ("bs 3, x > W", [0, 2, 4], 2, 6, 5, 2, [[0, 1], [2, 3], [4, 5]], [11, 16, 21, 26, 31, 36]),
    ("bs 2, W 1", [0, 1], 1, 2, 1, 1, [[0], [1]], [15, 25]),
    ("roots not at i*D", [4, 0], 3, 8, 2, 2, [[4, 5, -1], [0, 1, -1]],
     [21, 26, -3, -4, 11, 16, -7, -8]),
    ("bs 1, slots inside the buffer", [2], 4, 7, 3, 3, [[2, 3, 4, -1]], [-1, -2, 11, 12, 17, -6, -7]),
    ("bs 0", [], 3, 2, 2, 2, [], [-1, -2]),
]


@pytest.mark.parametrize("cand_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("roots, width, n, x, length, index, tokens", [c[1:] for c in REAL_CASES],
                         ids=[c[0] for c in REAL_CASES])
def test_real_mode_writes_drafts_then_the_bonus_and_keeps_other_slots(
    roots, width, n, x, length, index, tokens, cand_dtype
):
    predict = -torch.arange(1, n + 1, dtype=torch.int32)
    out, ncd = simulate(roots, width, predict, x, "real-draft-token", cand_dtype, fixed_token_id=3)
    assert_tensor("index", out, i32(index, (len(roots), width)))
    assert_tensor("num_correct_drafts", ncd, i32([length - 1] * len(roots)))
    assert_tensor("predict", predict, i32(tokens))


def test_fixed_mode_never_looks_at_candidates_or_target_predict():
    junk = torch.empty(5, dtype=torch.float32, device="meta")  # wrong shape, dtype and device
    predict = torch.zeros(6, dtype=torch.int32)
    out = sa.generate_simulated_accept_index(
        accept_index=roots_index([0, 3], 3), predict=predict,
        num_correct_drafts=torch.zeros(2, dtype=torch.int32), candidates=junk,
        target_predict=junk, bs=2, spec_steps=2, simulate_acc_len=2,
    )
    assert_tensor("index", out, i32([[0, 1, -1], [3, 4, -1]]))
    assert_tensor("predict", predict, i32([100] * 6))


@pytest.mark.parametrize("mode", ["fixed", "real-draft-token"])
def test_the_index_is_new_int32_and_the_inputs_are_never_written(mode):
    accept_index = torch.tensor([[0, -1, -1], [3, -1, -1]], dtype=torch.int64)
    candidates, target = chain(2, 3)
    before = [t.clone() for t in (accept_index, candidates, target)]
    out = sa.generate_simulated_accept_index(
        accept_index=accept_index, predict=torch.zeros(6, dtype=torch.int32),
        num_correct_drafts=torch.zeros(2, dtype=torch.int32), candidates=candidates,
        target_predict=target, bs=2, spec_steps=2, simulate_acc_len=3,
        simulate_acc_token_mode=mode,
    )
    assert_tensor("index", out, i32([[0, 1, 2], [3, 4, 5]]))
    for name, t, old in zip(("accept_index", "candidates", "target_predict"), (accept_index, candidates, target), before):
        assert_tensor(name, t, old)
        assert out.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


@pytest.mark.parametrize(
    "mode, buffer",
    [("fixed", [100, 101, 100, 103, 100, 105, 100, 107, 100, 109, 100, 111]),
     ("real-draft-token", [11, 101, 16, 103, 104, 105, 21, 107, 26, 109, 110, 111])],
)
def test_strided_and_transposed_views_are_read_and_written_through(mode, buffer):
    predict_buf = torch.arange(100, 112, dtype=torch.int32)
    ncd_buf = i32([9, 8, 9, 8])
    index_buf = i32([[0, 3], [-1, -1], [-1, -1]])  # transposed below: (bs, W) = (2, 3)
    cand_buf = i32([[10, 20], [11, 21], [12, 22]])
    target_buf = i32([[15, 25], [16, 26], [17, 27]])
    views = (index_buf.t(), predict_buf[::2], ncd_buf[::2], cand_buf.t(), target_buf.t())
    assert not any(v.is_contiguous() for v in views)
    before = [b.clone() for b in (index_buf, cand_buf, target_buf)]
    out = sa.generate_simulated_accept_index(
        *views, bs=2, spec_steps=2, simulate_acc_len=2, simulate_acc_token_mode=mode
    )
    assert_tensor("index", out, i32([[0, 1, -1], [3, 4, -1]]))
    assert_tensor("predict buffer", predict_buf, i32(buffer))
    assert_tensor("num_correct_drafts buffer", ncd_buf, i32([1, 8, 1, 8]))
    for name, buf, old in zip(("accept_index", "candidates", "target_predict"), (index_buf, cand_buf, target_buf), before):
        assert_tensor(f"{name} buffer", buf, old)


@pytest.mark.parametrize(
    "roots, width, x, method, seed, index",
    [
        ([0, 8], 8, 2.5, "multinomial", 0, [[0, 1, 2, 3, -1, -1, -1, -1], [8, 9, 10, 11, -1, -1, -1, -1]]),
        ([0, 3], 3, 2, "match-expected", 0, [[0, 1, -1], [3, 4, -1]]),
        ([2], 2, 5, "match-expected", 0, [[2, 3]]),
        ([0], 1, 0.5, "multinomial", 4, [[0]]),
        ([], 2, 1, "match-expected", 0, []),
    ],
)
def test_legacy_takes_positional_arguments_and_writes_100(roots, width, x, method, seed, index):
    bs, n = len(roots), 2 * width * max(len(roots), 1)
    predict, ncd = -torch.arange(1, n + 1, dtype=torch.int32), torch.full((bs,), 9, dtype=torch.int32)
    torch.manual_seed(seed)  # multinomial, seed 0: the draw is 4.041, so L = 4
    out = sa.legacy_generate_simulated_accept_index(
        roots_index(roots, width), predict, ncd, bs, width - 1, x, method
    )
    expected = i32(index, (bs, width))
    assert_tensor("index", out, expected)
    assert_tensor("num_correct_drafts", ncd, i32([int((expected[0] >= 0).sum()) - 1] * bs if bs else []))
    assert_tensor("predict", predict, i32([100] * n))


GREEDY_CASES = [  # id, candidates, target_predict, expected index, count, predict
    ("k = 2, 0, 1", [[9, 5, 6], [9, 1, 2], [9, 7, 8]], [[5, 6, 50], [3, 30, 31], [7, 0, 70]],
     [[0, 1, 2], [3, 99, 99], [6, 7, 99]], [2, 0, 1], [5, 6, 50, 3, -5, -5, 7, 0, -5]),
    ("D 1", [[4], [5]], [[40], [50]], [[0, 99, 99], [1, 99, 99]], [0, 0], [40, 50, -5, -5, -5, -5, -5, -5, -5]),
    ("bs 0", [], [], [], [], [-5] * 9),
]


@pytest.mark.parametrize("cands, target, index, count, tokens", [c[1:] for c in GREEDY_CASES],
                         ids=[c[0] for c in GREEDY_CASES])
def test_greedy_verification_accepts_the_matching_prefix(cands, target, index, count, tokens):
    bs = len(cands)
    drafts = len(cands[0]) if bs else 3
    predict, accept_index = torch.full((9,), -5, dtype=torch.int32), torch.full((bs, 3), 99, dtype=torch.int32)
    count_out = torch.full((bs,), 9, dtype=torch.int32)
    sa.verify_chain_greedy(
        torch.tensor(cands, dtype=torch.int64).reshape(bs, drafts),
        torch.tensor(target, dtype=torch.int64).reshape(bs, drafts), predict, accept_index, count_out
    )
    assert_tensor("accept_index", accept_index, i32(index, (bs, 3)))
    assert_tensor("accept_token_num", count_out, i32(count))
    assert_tensor("predict", predict, i32(tokens))


def test_real_mode_matches_greedy_verification_when_every_row_accepts_one_draft():
    candidates = torch.tensor([[9, 5, 6], [8, 1, 2]])
    target = torch.tensor([[5, 0, 50], [1, 3, 31]])  # k = 1 in both rows
    verified = [torch.full((6,), -5, dtype=torch.int32), i32([[-1] * 3] * 2), i32([9, 9])]
    sa.verify_chain_greedy(candidates, target, *verified)
    predict, ncd = torch.full((6,), -5, dtype=torch.int32), i32([9, 9])
    out = sa.generate_simulated_accept_index(
        accept_index=i32([[0, -1, -1], [3, -1, -1]]), predict=predict, num_correct_drafts=ncd,
        candidates=candidates, target_predict=target, bs=2, spec_steps=2, simulate_acc_len=2,
        simulate_acc_token_mode="real-draft-token",
    )
    expected = (i32([5, 0, -5, 1, 3, -5]), i32([[0, 1, -1], [3, 4, -1]]), i32([1, 1]))
    for name, got, v, e in zip(("predict", "index", "count"), (predict, out, ncd), verified, expected):
        assert_tensor(f"simulated {name}", got, e)
        assert_tensor(f"verified {name}", v, e)
