"""Example tests that pin hand-computed outputs of the EAGLE reference functions
(CONTRACT.md §4, §6 and §1.3), and the argument checks of those and of the kernel op's reference.

Every expected tensor is a literal worked out by hand from the contract. ``L`` is forced with
``match-expected`` and an integer ``x`` (``x < W`` yields exactly ``x``, ``x >= W`` yields
``W``). The real-mode tables use ``candidates[i, j] = 10*(i+1) + j`` and
``target_predict[i, j] = 10*(i+1) + j + 5`` (so row 0 is 10, 11, ... / 15, 16, ...), and
``predict`` starts as -1, -2, ... so every untouched slot is visible.
"""

import math

import pytest
import torch
from tests.contract.literals import assert_tensor, i32, meta, set_, via

import simacc as sa


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
    ("bs 4, tree with D 5 > W 2", [0, 5, 10, 15], 2, 20, 2, 2,
     [[0, 1], [5, 6], [10, 11], [15, 16]]),
    ("bs 0", [], 3, 2, 2, 2, []),
]


@pytest.mark.parametrize(
    "roots, width, n, x, length, index", [c[1:] for c in INDEX_CASES],
    ids=[c[0] for c in INDEX_CASES],
)
def test_fixed_mode_writes_the_index_and_the_count(roots, width, n, x, length, index):
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
    ("bs 1, slots inside the buffer", [2], 4, 7, 3, 3, [[2, 3, 4, -1]],
     [-1, -2, 11, 12, 17, -6, -7]),
    ("bs 0", [], 3, 2, 2, 2, [], [-1, -2]),
]


@pytest.mark.parametrize("cand_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize(
    "roots, width, n, x, length, index, tokens", [c[1:] for c in REAL_CASES],
    ids=[c[0] for c in REAL_CASES],
)
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
    names = ("accept_index", "candidates", "target_predict")
    for name, t, old in zip(names, (accept_index, candidates, target), before):
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
    names = ("accept_index", "candidates", "target_predict")
    for name, buf, old in zip(names, (index_buf, cand_buf, target_buf), before):
        assert_tensor(f"{name} buffer", buf, old)


@pytest.mark.parametrize(
    "roots, width, x, method, seed, length, index",
    [  # multinomial: seed 0 draws 4.041 for mean 2.5 (L = 4), seed 4 draws -1.105 for 0.5
        ([0, 8], 8, 2.5, "multinomial", 0, 4,
         [[0, 1, 2, 3, -1, -1, -1, -1], [8, 9, 10, 11, -1, -1, -1, -1]]),
        ([0, 3], 3, 2, "match-expected", 0, 2, [[0, 1, -1], [3, 4, -1]]),
        ([2], 2, 5, "match-expected", 0, 2, [[2, 3]]),
        ([0], 1, 0.5, "multinomial", 4, 1, [[0]]),
        ([], 2, 1, "match-expected", 0, 1, []),
    ],
)
def test_legacy_takes_positional_arguments_and_writes_100(
    roots, width, x, method, seed, length, index
):
    bs, n = len(roots), 2 * width * max(len(roots), 1)
    predict = -torch.arange(1, n + 1, dtype=torch.int32)
    ncd = torch.full((bs,), 9, dtype=torch.int32)
    torch.manual_seed(seed)
    out = sa.legacy_generate_simulated_accept_index(
        roots_index(roots, width), predict, ncd, bs, width - 1, x, method
    )
    assert_tensor("index", out, i32(index, (bs, width)))
    assert_tensor("num_correct_drafts", ncd, i32([length - 1] * bs))
    assert_tensor("predict", predict, i32([100] * n))


GREEDY_CASES = [  # id, candidates, target_predict, expected index, count, predict
    ("k = 2, 0, 1", [[9, 5, 6], [9, 1, 2], [9, 7, 8]], [[5, 6, 50], [3, 30, 31], [7, 0, 70]],
     [[0, 1, 2], [3, 99, 99], [6, 7, 99]], [2, 0, 1], [5, 6, 50, 3, -5, -5, 7, 0, -5]),
    ("D 1", [[4], [5]], [[40], [50]], [[0, 99, 99], [1, 99, 99]], [0, 0],
     [40, 50, -5, -5, -5, -5, -5, -5, -5]),
    ("bs 0", [], [], [], [], [-5] * 9),
]


@pytest.mark.parametrize(
    "cands, target, index, count, tokens", [c[1:] for c in GREEDY_CASES],
    ids=[c[0] for c in GREEDY_CASES],
)
def test_greedy_verification_accepts_the_matching_prefix(cands, target, index, count, tokens):
    bs = len(cands)
    drafts = len(cands[0]) if bs else 3
    predict = torch.full((9,), -5, dtype=torch.int32)
    accept_index = torch.full((bs, 3), 99, dtype=torch.int32)
    count_out = torch.full((bs,), 9, dtype=torch.int32)
    candidates = torch.tensor(cands, dtype=torch.int64).reshape(bs, drafts)
    target = torch.tensor(target, dtype=torch.int64).reshape(bs, drafts)
    sa.verify_chain_greedy(candidates, target, predict, accept_index, count_out)
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
    names = ("predict", "index", "count")
    for name, got, v, e in zip(names, (predict, out, ncd), verified, expected):
        assert_tensor(f"simulated {name}", got, e)
        assert_tensor(f"verified {name}", v, e)


# Bad inputs as data, run by one test (PyTorch OpInfo's ErrorInput): (description, change to
# a valid call, error type, message pattern naming the argument).


def eagle_kwargs(mode):
    candidates, target = chain(2, 3)
    return dict(
        accept_index=i32([[0, -1, -1], [3, -1, -1]]),
        predict=-torch.arange(1, 7, dtype=torch.int32),
        num_correct_drafts=i32([9, 9]), candidates=candidates, target_predict=target, bs=2,
        spec_steps=2, simulate_acc_len=2.5, simulate_acc_method="match-expected",
        simulate_acc_token_mode=mode,
    )


SHARED_ERRORS = [  # for generate (both modes) and legacy
    ("zero length", set_(simulate_acc_len=0), ValueError, r"simulate_acc_len must be > 0, got 0"),
    ("negative length", set_(simulate_acc_len=-1.5), ValueError, r"simulate_acc_len .*-1\.5"),
    ("-inf length", set_(simulate_acc_len=-math.inf), ValueError, r"simulate_acc_len .*-inf"),
    ("NaN length", set_(simulate_acc_len=math.nan), ValueError, r"simulate_acc_len .*nan"),
    ("NaN length, multinomial",
     set_(simulate_acc_len=math.nan, simulate_acc_method="multinomial"),
     ValueError, r"simulate_acc_len .*nan"),
    ("string length", set_(simulate_acc_len="3"), TypeError, r"simulate_acc_len .*got str"),
    ("bool length", set_(simulate_acc_len=True), TypeError, r"simulate_acc_len .*got bool"),
    ("None length", set_(simulate_acc_len=None), TypeError, r"simulate_acc_len .*NoneType"),
    ("tensor length", set_(simulate_acc_len=torch.tensor(2.0)), TypeError,
     r"simulate_acc_len .*Tensor"),
    ("unknown method", set_(simulate_acc_method="gaussian"), ValueError,
     r"simulate_acc_method 'gaussian'"),
    ("bs above accept_index rows", set_(bs=3), ValueError,
     r"accept_index must have shape \(3, 3\), got \(2, 3\)"),
    ("bs below accept_index rows", set_(bs=1), ValueError, r"accept_index .*\(1, 3\)"),
    ("spec_steps unlike accept_index", set_(spec_steps=3), ValueError, r"accept_index .*\(2, 4\)"),
    ("1-D accept_index", via("accept_index", lambda t: t[:, 0]), ValueError,
     r"accept_index must have shape"),
    ("num_correct_drafts too long", set_(num_correct_drafts=i32([9, 9, 9])), ValueError,
     r"num_correct_drafts must have shape \(2,\), got \(3,\)"),
    ("2-D num_correct_drafts", set_(num_correct_drafts=i32([[9], [9]])), ValueError,
     r"num_correct_drafts .*\(2, 1\)"),
    ("2-D predict", via("predict", lambda t: t.reshape(2, 3)), ValueError,
     r"predict must be 1-D, got shape \(2, 3\)"),
    ("list predict", via("predict", torch.Tensor.tolist), TypeError,
     r"predict must be a torch.Tensor, got list"),
    ("float predict", via("predict", torch.Tensor.float), TypeError,
     r"predict must have an integer dtype, got torch.float32"),
    ("bool num_correct_drafts", via("num_correct_drafts", torch.Tensor.bool), TypeError,
     r"num_correct_drafts .*torch.bool"),
    ("float accept_index", via("accept_index", torch.Tensor.double), TypeError,
     r"accept_index .*torch.float64"),
    ("negative bs", set_(bs=-1), ValueError, r"bs must be >= 0, got -1"),
    ("float bs", set_(bs=2.0), TypeError, r"bs must be an int, got float"),
    ("negative spec_steps", set_(spec_steps=-1), ValueError, r"spec_steps must be >= 0, got -1"),
    ("bool spec_steps", set_(spec_steps=True), TypeError, r"spec_steps must be an int, got bool"),
    ("predict on another device", via("predict", meta), ValueError,
     r"one device.*predict on meta"),
    ("num_correct_drafts on another device", via("num_correct_drafts", meta), ValueError,
     r"num_correct_drafts on meta"),
    ("accept_index on another device", via("accept_index", meta), ValueError,
     r"accept_index on meta"),
]

REAL_ERRORS = [  # generate in real-draft-token mode only
    ("unknown token mode", set_(simulate_acc_token_mode="real"), ValueError,
     r"simulate_acc_token_mode 'real'"),
    ("non-int fixed_token_id", set_(fixed_token_id=1.5), TypeError,
     r"fixed_token_id must be an int"),
    ("fixed_token_id too big for predict", set_(fixed_token_id=2**40), ValueError,
     r"fixed_token_id=1099511627776 does not fit torch.int32"),
    ("candidates missing", set_(candidates=None), TypeError,
     r"candidates must be a torch.Tensor, got NoneType"),
    ("target_predict missing", set_(target_predict=None), TypeError,
     r"target_predict must be a torch.Tensor"),
    ("float candidates", via("candidates", torch.Tensor.float), TypeError,
     r"candidates must have an integer dtype"),
    ("bool target_predict", via("target_predict", torch.Tensor.bool), TypeError,
     r"target_predict .*torch.bool"),
    ("candidates too narrow",
     lambda k: dict(k, candidates=k["candidates"][:, :2],
                    target_predict=k["target_predict"][:, :2]),
     ValueError, r"candidates with >= spec_steps \+ 1 = 3 columns, got shape \(2, 2\)"),
    ("candidates rows unlike bs", via("candidates", lambda t: t[:1]), ValueError,
     r"candidates must have shape \(2, '?\*'?\), got \(1, 3\)"),
    ("target_predict shape unlike candidates", via("target_predict", lambda t: t[:, :2]),
     ValueError, r"target_predict must have shape \(2, 3\), got \(2, 2\)"),
    ("candidates on another device", via("candidates", meta), ValueError, r"candidates on meta"),
    ("target_predict on another device", via("target_predict", meta), ValueError,
     r"target_predict on meta"),
    ("root past the end of predict", set_(accept_index=i32([[0, -1, -1], [4, -1, -1]])),
     ValueError, r"accept_index roots must lie in \[0, 3\] .*got \[0, 4\]"),
    ("negative root", set_(accept_index=i32([[-1, -1, -1], [3, -1, -1]])), ValueError,
     r"accept_index roots .*got \[-1, 3\]"),
]


def greedy_kwargs():
    candidates, target = chain(2, 3)
    return dict(
        candidates=candidates, target_predict=target,
        predict=-torch.arange(1, 7, dtype=torch.int32),
        accept_index=i32([[-1] * 3] * 2), accept_token_num=i32([9, 9]),
    )


GREEDY_ERRORS = [
    ("1-D candidates", via("candidates", lambda t: t[0]), ValueError, r"candidates must be 2-D"),
    ("target_predict shape", via("target_predict", lambda t: t[:1]), ValueError,
     r"target_predict must have shape \(2, 3\)"),
    ("accept_index rows", set_(accept_index=i32([[-1] * 3] * 3)), ValueError,
     r"accept_index must have shape \(2, '?\*'?\)"),
    ("accept_index narrower than D", set_(accept_index=i32([[-1] * 2] * 2)), ValueError,
     r"accept_index must have >= D = 3 columns"),
    ("predict shorter than bs*D", via("predict", lambda t: t[:5]), ValueError,
     r"predict must hold >= bs \* D = 6 slots, got 5"),
    ("2-D predict", via("predict", lambda t: t.reshape(2, 3)), ValueError,
     r"predict must be 1-D"),
    ("float target_predict", via("target_predict", torch.Tensor.float), TypeError,
     r"target_predict .*integer dtype"),
    ("bool accept_token_num", via("accept_token_num", torch.Tensor.bool), TypeError,
     r"accept_token_num .*torch.bool"),
    ("accept_token_num shape", set_(accept_token_num=i32([9])), ValueError,
     r"accept_token_num must have shape \(2,\)"),
    ("predict on another device", via("predict", meta), ValueError, r"predict on meta"),
    ("accept_index on another device", via("accept_index", meta), ValueError,
     r"accept_index on meta"),
]


def kernel_kwargs(real):
    candidates, target = chain(2, 3)
    return dict(
        accept_indices=i32([[0, -1, -1], [3, -1, -1]]), predict_tokens=-torch.arange(1, 7, dtype=torch.int32),
        num_correct_drafts=i32([9, 9]), candidate_tokens=candidates, target_tokens=target, width=3,
        num_accept_tokens=2, real_tokens=real,
    )


KERNEL_ERRORS = [  # the kernel op, both modes
    ("zero width", set_(width=0), ValueError, r"width must be >= 1, got 0"),
    ("float width", set_(width=3.0), TypeError, r"width must be an int, got float"),
    ("zero length", set_(num_accept_tokens=0), ValueError, r"num_accept_tokens must be >= 1, got 0"),
    ("length above width", set_(num_accept_tokens=4), ValueError,
     r"num_accept_tokens must be <= width = 3, got 4"),
    ("int real_tokens", lambda k: dict(k, real_tokens=int(k["real_tokens"])), TypeError,
     r"real_tokens must be a bool, got int"),
    ("1-D accept_indices", via("accept_indices", lambda t: t[:, 0]), ValueError,
     r"accept_indices must be 2-D, got shape \(2,\)"),
    ("no root column", via("accept_indices", lambda t: t[:, :0]), ValueError,
     r"accept_indices must have a root column, got shape \(2, 0\)"),
    ("2-D predict_tokens", via("predict_tokens", lambda t: t.reshape(2, 3)), ValueError,
     r"predict_tokens must be 1-D"),
    ("float predict_tokens", via("predict_tokens", torch.Tensor.float), TypeError,
     r"predict_tokens must have an integer dtype"),
    ("num_correct_drafts rows unlike accept_indices", set_(num_correct_drafts=i32([9])), ValueError,
     r"num_correct_drafts must have shape \(2,\), got \(1,\)"),
    ("predict_tokens on another device", via("predict_tokens", meta), ValueError,
     r"one device.*predict_tokens on meta"),
    ("num_correct_drafts on another device", via("num_correct_drafts", meta), ValueError,
     r"num_correct_drafts on meta"),
]

KERNEL_REAL_ERRORS = [  # the kernel op with real_tokens=True only
    ("candidate_tokens missing", set_(candidate_tokens=None), TypeError,
     r"candidate_tokens must be a torch.Tensor, got NoneType"),
    ("candidate_tokens rows unlike accept_indices", via("candidate_tokens", lambda t: t[:1]), ValueError,
     r"candidate_tokens must have shape \(2, '?\*'?\), got \(1, 3\)"),
    ("target_tokens shape unlike candidate_tokens", via("target_tokens", lambda t: t[:, :2]), ValueError,
     r"target_tokens must have shape \(2, 3\), got \(2, 2\)"),
    ("candidate_tokens narrower than width",
     lambda k: dict(k, candidate_tokens=k["candidate_tokens"][:, :2], target_tokens=k["target_tokens"][:, :2]),
     ValueError, r"real_tokens needs candidate_tokens with >= width = 3 columns, got shape \(2, 2\)"),
    ("candidate_tokens on another device", via("candidate_tokens", meta), ValueError,
     r"candidate_tokens on meta"),
    ("target_tokens on another device", via("target_tokens", meta), ValueError, r"target_tokens on meta"),
    ("root past the end of predict_tokens", set_(accept_indices=i32([[0, -1, -1], [4, -1, -1]])),
     ValueError, r"roots must lie in \[0, 3\] .*got \[0, 4\]"),
]


def call_kernel(real):
    return lambda change: sa.simulated_accept(**change(kernel_kwargs(real)))


def call_generate(mode):
    return lambda change: sa.generate_simulated_accept_index(**change(eagle_kwargs(mode)))


def call_legacy(change):
    kwargs = change(eagle_kwargs("fixed"))
    for name in ("candidates", "target_predict", "simulate_acc_token_mode"):
        del kwargs[name]
    return sa.legacy_generate_simulated_accept_index(**kwargs)


def call_greedy(change):
    return sa.verify_chain_greedy(**change(greedy_kwargs()))


ERRORS = (  # (function, call, description, change, error, match)
    [("generate, real", call_generate("real-draft-token"), *c)
     for c in SHARED_ERRORS + REAL_ERRORS]
    + [("generate, fixed", call_generate("fixed"), *c) for c in SHARED_ERRORS]
    + [("legacy", call_legacy, *c) for c in SHARED_ERRORS]
    + [("greedy", call_greedy, *c) for c in GREEDY_ERRORS]
    + [("kernel, real", call_kernel(True), *c) for c in KERNEL_ERRORS + KERNEL_REAL_ERRORS]
    + [("kernel, fixed", call_kernel(False), *c) for c in KERNEL_ERRORS]
)


@pytest.mark.parametrize(
    "call, change, error, match", [(c[1], *c[3:]) for c in ERRORS],
    ids=[f"{c[0]}: {c[2]}" for c in ERRORS],
)
def test_bad_inputs_raise_naming_the_argument_and_leave_everything_untouched(
    call, change, error, match
):
    seen = {}

    def recording(kwargs):
        kwargs = change(kwargs)
        for name, value in kwargs.items():
            if isinstance(value, torch.Tensor) and not value.is_meta:
                seen[name] = (value, value.clone())
        return kwargs

    torch.manual_seed(0)
    state = torch.get_rng_state()
    with pytest.raises(error, match=match):
        call(recording)
    assert torch.equal(torch.get_rng_state(), state), "the generator moved before the error"
    for name, (tensor, before) in seen.items():
        assert_tensor(name, tensor, before)
