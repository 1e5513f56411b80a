"""Example tests that pin hand-computed outputs of the DFLASH block layout (CONTRACT.md §7).

As in ``test_reference.py``: ``L`` is forced with ``match-expected`` and an integer (or
out-of-range) ``x``; ``candidates[i, j] = 10*(i+1) + j`` and ``target_predict[i, j] =
10*(i+1) + j + 5``; outputs start as -1 (tokens) and 9 (lengths) so untouched cells show.
"""

import math

import pytest
import torch
from tests.contract.literals import assert_tensor, i32, i64, meta, set_, via

import simacc as sa


def dflash_kwargs(bs, block, x, mode, token_dtype=torch.int64):
    base = 10 * torch.arange(1, bs + 1)[:, None] + torch.arange(block)
    return dict(
        candidates=base, target_predict=base + 5,
        accept_len=torch.full((bs,), 9, dtype=torch.int32),
        commit_lens=torch.full((bs,), 9, dtype=torch.int32),
        bonus=torch.full((bs,), -1, dtype=torch.int64),
        out_tokens=torch.full((bs, block), -1, dtype=token_dtype),
        simulate_acc_len=x, simulate_acc_method="match-expected", simulate_acc_token_mode=mode,
    )


REAL_CASES = [  # id, bs, B, x, L, expected out_tokens, expected bonus
    ("L 1", 2, 4, 1, 1, [[15, 0, 0, 0], [25, 0, 0, 0]], [15, 25]),
    ("L 2", 2, 4, 2, 2, [[11, 16, 0, 0], [21, 26, 0, 0]], [16, 26]),
    ("L 3", 2, 4, 3, 3, [[11, 12, 17, 0], [21, 22, 27, 0]], [17, 27]),
    ("L = B", 2, 4, 4, 4, [[11, 12, 13, 18], [21, 22, 23, 28]], [18, 28]),
    ("x > B", 2, 4, 9, 4, [[11, 12, 13, 18], [21, 22, 23, 28]], [18, 28]),
    ("x = 0 acts as 1", 2, 4, 0, 1, [[15, 0, 0, 0], [25, 0, 0, 0]], [15, 25]),
    ("x < 0 acts as 1", 2, 4, -2.5, 1, [[15, 0, 0, 0], [25, 0, 0, 0]], [15, 25]),
    ("NaN gives B", 2, 4, math.nan, 4, [[11, 12, 13, 18], [21, 22, 23, 28]], [18, 28]),
    ("B 1", 2, 1, 3, 1, [[15], [25]], [15, 25]),
    ("bs 3, B 2", 3, 2, 2, 2, [[11, 16], [21, 26], [31, 36]], [16, 26, 36]),
    ("bs 0", 0, 3, 2, 2, [], []),
]


@pytest.mark.parametrize("token_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize(
    "bs, block, x, length, tokens, bonus", [c[1:] for c in REAL_CASES],
    ids=[c[0] for c in REAL_CASES],
)
def test_real_mode_writes_drafts_then_the_bonus_and_zeroes_the_rest(
    bs, block, x, length, tokens, bonus, token_dtype
):
    kwargs = dflash_kwargs(bs, block, x, "real-draft-token", token_dtype)
    assert sa.apply_dflash_simulated_acceptance(**kwargs, fixed_token_id=3) is None
    expected = torch.tensor(tokens, dtype=token_dtype).reshape(bs, block)
    assert_tensor("out_tokens", kwargs["out_tokens"], expected)
    assert_tensor("bonus", kwargs["bonus"], i64(bonus))
    assert_tensor("accept_len", kwargs["accept_len"], i32([length - 1] * bs))
    assert_tensor("commit_lens", kwargs["commit_lens"], i32([length] * bs))


@pytest.mark.parametrize(
    "bs, block, x, length, token",
    [(2, 4, 2, 2, 100), (2, 4, 9, 4, 100), (3, 1, 1, 1, 100), (2, 3, 0, 1, 7), (0, 2, 1, 1, 100)],
)
def test_fixed_mode_fills_bonus_and_every_out_token_with_the_fixed_id(bs, block, x, length, token):
    kwargs = dflash_kwargs(bs, block, x, "fixed")
    kwargs["target_predict"] = None  # fixed mode never needs it
    extra = {} if token == 100 else {"fixed_token_id": token}
    sa.apply_dflash_simulated_acceptance(**kwargs, **extra)
    assert_tensor("out_tokens", kwargs["out_tokens"], i64([[token] * block] * bs, (bs, block)))
    assert_tensor("bonus", kwargs["bonus"], i64([token] * bs))
    assert_tensor("accept_len", kwargs["accept_len"], i32([length - 1] * bs))
    assert_tensor("commit_lens", kwargs["commit_lens"], i32([length] * bs))


LOGITS = torch.tensor(  # (bs * B, V) = (4, 4); argmax per row 3, 1, 0, 2
    [[0.0, 0.1, 0.2, 0.9], [0.0, 5.0, 1.0, 2.0], [7.0, 1.0, 0.5, 0.2], [-3.0, -2.0, -1.0, -4.0]]
)


def test_real_mode_without_target_predict_uses_the_logits_argmax():
    kwargs = dflash_kwargs(2, 2, 2, "real-draft-token")
    kwargs.update(target_predict=None, next_token_logits=LOGITS)
    sa.apply_dflash_simulated_acceptance(**kwargs)  # target_predict becomes [[3, 1], [0, 2]]
    assert_tensor("out_tokens", kwargs["out_tokens"], i64([[11, 1], [21, 2]]))
    assert_tensor("bonus", kwargs["bonus"], i64([1, 2]))


def test_a_given_target_predict_wins_over_the_logits():
    kwargs = dict(dflash_kwargs(2, 2, 2, "real-draft-token"), next_token_logits=LOGITS)
    sa.apply_dflash_simulated_acceptance(**kwargs)
    assert_tensor("out_tokens", kwargs["out_tokens"], i64([[11, 16], [21, 26]]))


def test_fixed_mode_never_looks_at_target_predict_or_the_logits():
    junk = torch.empty(5, dtype=torch.float32, device="meta")
    kwargs = dict(dflash_kwargs(2, 3, 2, "fixed"), target_predict=junk, next_token_logits=junk)
    sa.apply_dflash_simulated_acceptance(**kwargs)
    assert_tensor("out_tokens", kwargs["out_tokens"], i64([[100] * 3] * 2))


@pytest.mark.parametrize(
    "mode, tokens, bonus",
    [("fixed", [[100, 100], [100, 100], [100, 100]], [100, -7, 100, -7]),
     ("real-draft-token", [[11, 21], [16, 26], [0, 0]], [16, -7, 26, -7])],
)
def test_strided_and_transposed_views_are_read_and_written_through(mode, tokens, bonus):
    out_buf, bonus_buf = i64([[-1, -1]] * 3), i64([-1, -7, -1, -7])  # out_tokens is out_buf.t()
    len_buf, commit_buf = i32([9, 8, 9, 8]), i32([9, 8, 9, 8])
    cand_buf = i64([[10, 20], [11, 21], [12, 22]])
    target_buf = cand_buf + 5
    sa.apply_dflash_simulated_acceptance(
        candidates=cand_buf.t(), target_predict=target_buf.t(), accept_len=len_buf[::2],
        commit_lens=commit_buf[::2], bonus=bonus_buf[::2], out_tokens=out_buf.t(),
        simulate_acc_len=2, simulate_acc_method="match-expected", simulate_acc_token_mode=mode,
    )
    assert_tensor("out_tokens buffer", out_buf, i64(tokens))
    assert_tensor("bonus buffer", bonus_buf, i64(bonus))
    assert_tensor("accept_len buffer", len_buf, i32([1, 8, 1, 8]))
    assert_tensor("commit_lens buffer", commit_buf, i32([2, 8, 2, 8]))
    assert_tensor("candidates buffer", cand_buf, i64([[10, 20], [11, 21], [12, 22]]))
    assert_tensor("target_predict buffer", target_buf, i64([[15, 25], [16, 26], [17, 27]]))


def test_every_parameter_is_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        sa.apply_dflash_simulated_acceptance(*dflash_kwargs(1, 2, 1, "fixed").values())


def narrow_block(width):
    names = ("candidates", "target_predict", "out_tokens")
    return lambda kwargs: dict(kwargs, **{name: kwargs[name][:, :width] for name in names})


ERRORS = [  # description, change to a valid real-mode call, error type, message pattern
    ("string length", set_(simulate_acc_len="2"), TypeError, r"simulate_acc_len .*got str"),
    ("bool length", set_(simulate_acc_len=False), TypeError, r"simulate_acc_len .*got bool"),
    ("None length", set_(simulate_acc_len=None), TypeError, r"simulate_acc_len .*NoneType"),
    ("unknown method", set_(simulate_acc_method="uniform"), ValueError,
     r"simulate_acc_method 'uniform'"),
    ("unknown token mode", set_(simulate_acc_token_mode="draft"), ValueError,
     r"simulate_acc_token_mode 'draft'"),
    ("non-int fixed_token_id", set_(fixed_token_id="100"), TypeError,
     r"fixed_token_id must be an int"),
    ("fixed_token_id too big for bonus", set_(fixed_token_id=2**70), ValueError,
     r"fixed_token_id=1180591620717411303424 does not fit torch.int64"),
    ("1-D out_tokens", via("out_tokens", lambda t: t[0]), ValueError, r"out_tokens must be 2-D"),
    ("float out_tokens", via("out_tokens", torch.Tensor.float), TypeError,
     r"out_tokens .*integer dtype"),
    ("candidates narrower than out_tokens", via("candidates", lambda t: t[:, :3]), ValueError,
     r"candidates must have shape \(2, 4\), got \(2, 3\)"),
    ("float candidates", via("candidates", torch.Tensor.double), TypeError,
     r"candidates .*torch.float64"),
    ("accept_len too long", set_(accept_len=i32([9, 9, 9])), ValueError,
     r"accept_len must have shape \(2,\)"),
    ("2-D commit_lens", set_(commit_lens=i32([[9], [9]])), ValueError,
     r"commit_lens must have shape \(2,\)"),
    ("bool bonus", via("bonus", torch.Tensor.bool), TypeError, r"bonus .*torch.bool"),
    ("target_predict shape", via("target_predict", lambda t: t[:1]), ValueError,
     r"target_predict must have shape \(2, 4\)"),
    ("no target_predict and no logits", set_(target_predict=None), ValueError,
     r"needs target_predict or next_token_logits"),
    ("logits with the wrong rows", set_(target_predict=None, next_token_logits=LOGITS),
     ValueError, r"next_token_logits must be 2-D with bs \* B = 8 rows, got shape \(4, 4\)"),
    ("B = 0", narrow_block(0), ValueError, r"out_tokens must have at least one column"),
    ("candidates on another device", via("candidates", meta), ValueError,
     r"one device.*candidates on meta"),
    ("target_predict on another device", via("target_predict", meta), ValueError,
     r"target_predict on meta"),
    ("accept_len on another device", via("accept_len", meta), ValueError, r"accept_len on meta"),
    ("bonus on another device", via("bonus", meta), ValueError, r"bonus on meta"),
    ("out_tokens on another device", via("out_tokens", meta), ValueError, r"out_tokens on meta"),
    ("logits on another device",
     set_(target_predict=None, next_token_logits=torch.zeros(8, 3, device="meta")),
     ValueError, r"next_token_logits on meta"),
]


@pytest.mark.parametrize(
    "change, error, match", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_bad_inputs_raise_naming_the_argument_and_leave_everything_untouched(
    change, error, match
):
    kwargs = change(dflash_kwargs(2, 4, 2.5, "real-draft-token"))
    before = {
        name: value.clone()
        for name, value in kwargs.items()
        if isinstance(value, torch.Tensor) and not value.is_meta
    }
    torch.manual_seed(0)
    state = torch.get_rng_state()
    with pytest.raises(error, match=match):
        sa.apply_dflash_simulated_acceptance(**kwargs)
    assert torch.equal(torch.get_rng_state(), state), "the generator moved before the error"
    for name, old in before.items():
        assert_tensor(name, kwargs[name], old)
