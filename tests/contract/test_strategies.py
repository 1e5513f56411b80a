"""Self-tests of the strategies: they keep their own rules (the contract's domain of valid cases, CONTRACT.md §4.7),
reject bad arguments by quoting them, and shrink where their docstrings say."""

import math

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import simacc as sa
from simacc import strategies as sx
from simacc.harness.config import contracts
from simacc.harness.model.cases import LAYOUTS, TensorArg
from simacc.strategies import scalars
from simacc.strategies import tensors as tn


def minimal(strategy, fails=lambda value: True):
    """The example Hypothesis shrinks to when the examples for which ``fails`` holds fail:
    by default every example, so the simplest one."""
    seen = []

    @settings(database=None, derandomize=True, max_examples=300)
    @given(strategy)
    def check(value):
        if fails(value):
            seen.append(value)
            raise ValueError

    with pytest.raises(ValueError):
        check()
    return seen[-1]  # Hypothesis replays the shrunk example last


class Reached(Exception):
    pass


def reaches(strategy, predicate, examples=300):
    """Whether ``strategy`` generates an example that satisfies ``predicate`` within
    ``examples`` draws (no shrinking: cheap)."""

    @settings(database=None, derandomize=True, max_examples=examples, phases=[Phase.generate])
    @given(strategy)
    def look(value):
        if predicate(value):
            raise Reached

    try:
        look()
    except Reached:
        return True
    return False


def samples(strategy, examples=300):
    """The values ``strategy`` generates in ``examples`` draws (no shrinking)."""
    values = []

    @settings(database=None, derandomize=True, max_examples=examples, phases=[Phase.generate])
    @given(strategy)
    def collect(value):
        values.append(value)

    collect()
    return values


def kinds(strategy, classify, examples=300):
    """Every kind that ``classify`` (a generator of kinds for one value) names in ``examples`` draws."""
    return {kind for value in samples(strategy, examples) for kind in classify(value)}


def slot_ranges(case, length):
    """The half-open ``predict`` ranges ``[root, root + length)`` of every request."""
    return sorted((root, root + length) for root in case.roots)


def draft_token_num(case):
    return case.predict.values.shape[0] if case.candidates is None else case.candidates.values.shape[1]


@given(
    bs=st.integers(0, 40),
    d=st.integers(1, 20),
    data=st.data(),
)
def test_roots_give_every_request_its_own_slots_inside_predict(bs, d, data):
    roots, predict_len = data.draw(sx.roots(bs, d))
    spans = sorted((r, r + d) for r in roots)
    assert len(roots) == bs
    assert all(0 <= lo and hi <= predict_len for lo, hi in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans


@pytest.mark.parametrize("layout", sx.ROOT_LAYOUTS)
def test_each_root_layout_can_be_forced(layout):
    roots, _ = minimal(sx.roots(3, 4, layout=layout))
    assert (roots == [0, 4, 8]) is (layout in ("sglang", "permuted"))


def test_roots_reach_layouts_other_than_sglang():
    assert reaches(sx.roots(3, 4), lambda r: r[0] != [0, 4, 8])


def test_permuted_roots_reach_a_shuffled_order_and_shrink_to_a_swap():
    assert reaches(sx.roots(3, 4, layout="permuted"), lambda r: r[0] != [0, 4, 8])
    roots, _ = minimal(sx.roots(2, 4, layout="permuted"), lambda r: r[0] != [0, 4])
    assert roots == [4, 0]


@given(case=sx.eagle_cases())
def test_eagle_cases_keep_accepted_ranges_disjoint_and_inside_predict(case):
    spans = slot_ranges(case, case.max_len)
    assert all(0 <= lo and hi <= case.predict.values.shape[0] for lo, hi in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@given(case=sx.eagle_cases())
def test_eagle_cases_have_the_documented_shapes_and_dtypes(case):
    w = case.max_len
    assert case.accept_index.values.shape == (case.bs, w)
    assert case.accept_index.values.dtype == torch.int32
    assert case.num_correct_drafts.values.shape == (case.bs,)
    assert case.predict.values.dtype == case.num_correct_drafts.values.dtype == torch.int32
    if case.candidates is not None:
        assert case.candidates.values.shape == case.target_predict.values.shape == (case.bs, draft_token_num(case))
        assert case.candidates.values.dtype in (torch.int32, torch.int64)
        assert case.target_predict.values.dtype == torch.int64


@given(case=sx.eagle_cases(modes=("real-draft-token",)))
def test_real_mode_cases_are_chains_with_draft_token_num_equal_to_width(case):
    assert case.simulate_acc_token_mode == "real-draft-token"
    assert case.candidates is not None
    assert draft_token_num(case) == case.max_len


@given(case=sx.eagle_cases(modes=("fixed",)))
def test_fixed_mode_cases_have_at_least_width_nodes_and_may_omit_candidates(case):
    assert case.simulate_acc_token_mode == "fixed"
    if case.candidates is not None:
        assert draft_token_num(case) >= case.max_len


def test_fixed_mode_cases_reach_trees_and_missing_candidates():
    cases = sx.eagle_cases(modes=("fixed",))
    assert reaches(cases, lambda c: c.candidates is not None and draft_token_num(c) > c.max_len)
    assert reaches(cases, lambda c: c.candidates is None)


@given(case=sx.eagle_cases())
def test_prefilled_buffers_are_never_all_zeros(case):
    for arg in (case.predict, case.num_correct_drafts):
        if arg.values.numel():
            assert arg.values.any(), case


@given(case=sx.eagle_cases(min_bs=1))
def test_every_tensor_of_a_case_has_contents_of_its_own(case):
    """One seed per case, but not one stream: two buffers of the same range differ."""
    assert not torch.equal(case.predict.values[: case.bs], case.num_correct_drafts.values)


def eagle_kinds(case):
    yield case.simulate_acc_token_mode, case.simulate_acc_method
    yield "bs", min(case.bs, 9)
    block = case.predict.values.shape[0] // max(case.bs, 1)
    yield "roots", "sglang" if case.roots == [i * block for i in range(case.bs)] else "other"
    for name, arg in case.tensors().items():
        yield name, arg.layout
    if case.candidates is None:
        yield "candidates", None
    else:
        yield "candidates", case.candidates.values.dtype
        yield "tree", draft_token_num(case) > case.max_len
        yield "ids", "large" if case.candidates.values.numel() and case.candidates.values.max() >= 2**30 else "small"


def test_eagle_cases_reach_every_kind_of_case():
    found = kinds(sx.eagle_cases(), eagle_kinds, examples=600)
    expected = {(mode, method) for mode in sa.TOKEN_MODES for method in sa.METHODS}
    expected |= {("bs", n) for n in range(10)} | {("roots", "sglang"), ("roots", "other")}
    for name, ndim in [("accept_index", 2), ("predict", 1), ("num_correct_drafts", 1), ("candidates", 2), ("target_predict", 2)]:
        expected |= {(name, layout) for layout in LAYOUTS if ndim == 2 or layout != "transposed"}
    expected |= {("candidates", None), ("candidates", torch.int32), ("candidates", torch.int64)}
    expected |= {("tree", True), ("tree", False), ("ids", "large"), ("ids", "small")}
    assert expected <= found, sorted(map(str, expected - found))


def test_dflash_cases_reach_logits_nan_lengths_a_passed_fixed_id_and_every_layout():
    def dflash_kinds(case):
        yield "logits", case.next_token_logits is not None
        yield "nan", math.isnan(case.simulate_acc_len)
        yield "fixed id passed", ("fixed_token_id" in case.args("cpu"), case.fixed_token_id is not None)
        for name, arg in case.tensors().items():
            yield name, arg.layout

    found = kinds(sx.dflash_cases(), dflash_kinds)
    expected = {("logits", True), ("logits", False), ("nan", True), ("nan", False)}
    expected |= {("fixed id passed", (True, True)), ("fixed id passed", (False, False))}  # the call has it iff the case
    expected |= {("out_tokens", layout) for layout in LAYOUTS} | {("bonus", "strided"), ("bonus", "offset")}
    assert expected <= found, sorted(map(str, expected - found))


@given(case=sx.eagle_cases())
def test_token_ids_fit_in_int32_and_are_nonnegative(case):
    for arg in (case.candidates, case.target_predict):
        if arg is not None and arg.values.numel():
            assert 0 <= int(arg.values.min()) and int(arg.values.max()) < 2**31


@given(case=sx.chain_cases())
def test_chain_targets_agree_with_exactly_the_first_k_drafts(case):
    k = int(case.simulate_acc_len) - 1
    cand, target = case.candidates.values.long(), case.target_predict.values
    agree = cand[:, 1:] == target[:, :-1]  # draft j+1 against the target at node j
    accepted = agree.long().cumprod(dim=1).sum(dim=1)
    assert accepted.tolist() == [k] * case.bs


@given(case=sx.chain_cases())
def test_chain_cases_are_sglang_laid_out_with_minus_one_beyond_the_root(case):
    width = case.max_len
    assert case.roots == [i * width for i in range(case.bs)]
    assert (case.accept_index.values[:, 1:] == -1).all()
    assert case.expected_length() == int(case.simulate_acc_len)


@given(case=sx.chain_cases())
def test_chain_cases_tell_fixed_mode_from_greedy_verification(case):
    """The companion of ``real_mode_equals_greedy_verification``: fixed mode's ``predict``
    is not greedy's whenever greedy writes a token other than the fixed id (always here:
    the root's target token is written, and ids equal to 100 are avoided below)."""
    target = case.target_predict.values
    written = target[:, : int(case.simulate_acc_len)]
    if (written == sa.FIXED_TOKEN_ID).all():
        return  # greedy would write only 100s: the modes could agree
    fixed = case.args("cpu")
    sa.generate_simulated_accept_index(**{**fixed, "simulate_acc_token_mode": "fixed"})
    greedy = case.args("cpu")
    sa.verify_chain_greedy(
        greedy["candidates"], greedy["target_predict"], greedy["predict"],
        greedy["accept_index"], greedy["num_correct_drafts"],
    )
    assert not torch.equal(fixed["predict"], greedy["predict"])


@given(case=sx.dflash_cases())
def test_dflash_cases_have_matching_block_shapes(case):
    bs, block = case.out_tokens.values.shape
    assert block >= 1
    assert case.candidates.values.shape == (bs, block)
    for arg in (case.accept_len, case.commit_lens, case.bonus):
        assert arg.values.shape == (bs,)
    if case.target_predict is not None:
        assert case.target_predict.values.shape == (bs, block)


@given(case=sx.dflash_cases(modes=("real-draft-token",)))
def test_dflash_real_mode_cases_have_a_target_or_logits_with_a_unique_maximum(case):
    if case.target_predict is not None:
        return
    logits = case.next_token_logits.values
    bs, block = case.out_tokens.values.shape
    assert logits.shape[0] == bs * block and logits.dtype == torch.float32
    if logits.numel():
        top = logits.max(dim=1, keepdim=True).values
        assert ((logits == top).sum(dim=1) == 1).all()


@given(x=sx.acc_lens(5))
def test_acc_lens_are_positive(x):
    assert x > 0


@given(x=sx.acc_lens(5, positive=False))
def test_acc_lens_without_positive_are_real_numbers(x):
    assert not math.isnan(x)


def test_acc_lens_reach_every_kind_of_length():
    kinds = {
        "integer in range": lambda x: x in (1.0, 2.0, 3.0),
        "fraction in range": lambda x: 1 < x < 3 and x != int(x),
        "below one": lambda x: 0 < x < 1,
        "above width": lambda x: 3 < x < math.inf,
        "infinite": lambda x: x == math.inf,
    }
    for kind, holds in kinds.items():
        assert reaches(sx.acc_lens(3), holds), kind


@given(x=sx.bad_acc_lens())
def test_bad_acc_lens_fail_the_eagle_check(x):
    assert not x > 0


@given(method=sx.bad_methods())
def test_bad_methods_are_not_methods(method):
    assert method not in sa.METHODS


@given(mode=sx.bad_token_modes())
def test_bad_token_modes_are_not_token_modes(mode):
    assert mode not in sa.TOKEN_MODES


@given(bs=sx.batch_sizes(3, 20))
def test_batch_sizes_stay_in_their_bounds(bs):
    assert 3 <= bs <= 20


@pytest.mark.parametrize("layout", [x for x in LAYOUTS if x != "contiguous"])
def test_non_contiguous_layouts_are_really_non_contiguous(layout):
    t = TensorArg(torch.arange(12).reshape(3, 4), layout).on("cpu")
    assert torch.equal(t, torch.arange(12).reshape(3, 4))
    assert not t.is_contiguous() or t.storage_offset() != 0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: sx.batch_sizes(5, 2), "max_bs=2 < min_bs=5"),
        (lambda: sx.batch_sizes(-1, 2), "min_bs=-1"),
        (lambda: sx.spec_steps(0, -3), "max_steps=-3 < min_steps=0"),
        (lambda: sx.acc_lens(0), "max_len=0"),
        (lambda: sx.token_modes(("greedy",)), "modes=('greedy',)"),
        (lambda: sx.token_modes(()), "modes=()"),
        (lambda: tn.layout_codes(0), "count=0"),
        (lambda: sx.roots(2, 0), "draft_token_num=0"),
        (lambda: sx.roots(2, 3, layout="diagonal"), "layout='diagonal'"),
        (lambda: sx.eagle_cases(max_bs=-1), "max_bs=-1"),
        (lambda: sx.eagle_cases(modes=("real",)), "modes=('real',)"),
        (lambda: sx.eagle_cases(root_layout="diagonal"), "layout='diagonal'"),
        (lambda: sx.chain_cases(max_spec_steps=-1), "max_steps=-1"),
        (lambda: sx.dflash_cases(max_block=0), "max_block=0"),
    ],
)
def test_bad_strategy_arguments_are_rejected_up_front_quoting_the_argument(make, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_eagle_cases_shrink_to_one_request_width_one_length_one():
    case = minimal(sx.eagle_cases())
    assert (case.bs, case.spec_steps, case.simulate_acc_len, case.seed) == (1, 0, 1.0, 0)
    assert (case.simulate_acc_method, case.simulate_acc_token_mode) == ("match-expected", "fixed")
    assert case.roots == [0]
    assert {arg.layout for arg in case.tensors().values()} == {"contiguous"}


def test_real_eagle_cases_shrink_to_small_token_ids():
    case = minimal(sx.eagle_cases(modes=("real-draft-token",)))
    assert (case.bs, case.spec_steps) == (1, 0)
    assert int(case.candidates.values.max()) < 16 and case.candidates.values.dtype == torch.int64


@pytest.mark.parametrize("name, layout", [("predict", "strided"), ("accept_index", "offset"), ("candidates", "transposed")])
def test_a_failure_that_needs_one_layout_shrinks_to_that_tensor_alone_off_contiguous(name, layout):
    case = minimal(sx.eagle_cases(), lambda c: getattr(c, name) is not None and getattr(c, name).layout == layout)
    assert {n: a.layout for n, a in case.tensors().items() if a.layout != "contiguous"} == {name: layout}
    assert (case.bs, case.spec_steps, case.seed) == (1, 0, 0)


def test_a_failure_that_needs_int32_tokens_keeps_small_token_ids():
    case = minimal(sx.eagle_cases(modes=("real-draft-token",)), lambda c: c.candidates.values.dtype == torch.int32)
    assert (case.bs, case.spec_steps) == (1, 0)
    assert int(case.candidates.values.max()) < 16


def test_eagle_and_kernel_cases_reach_widths_past_17_and_such_a_failure_shrinks_to_18():
    assert reaches(sx.kernel_cases(), lambda c: c.width > sx.MAX_SPEC_STEPS + 1)
    wide = minimal(sx.eagle_cases(), lambda c: c.spec_steps > sx.MAX_SPEC_STEPS)
    assert (wide.spec_steps, wide.bs) == (scalars.LONG_SPEC_STEPS[0], 1)


def test_chain_cases_shrink_to_k_zero():
    case = minimal(sx.chain_cases())
    assert (case.bs, case.spec_steps, case.simulate_acc_len) == (1, 0, 1.0)


def test_dflash_cases_shrink_to_one_request_one_column_fixed_mode():
    case = minimal(sx.dflash_cases())
    assert case.out_tokens.values.shape == (1, 1)
    assert case.simulate_acc_token_mode == "fixed" and case.simulate_acc_len == 1.0


def test_batch_sizes_shrink_to_one_and_reach_zero():
    assert minimal(sx.batch_sizes()) == 1
    assert reaches(sx.batch_sizes(), lambda b: b == 0)


def test_batch_sizes_shrink_to_the_smallest_size_a_failure_needs():
    assert minimal(sx.batch_sizes(), lambda b: b > 1) == 2
    assert minimal(sx.batch_sizes(), lambda b: b > 8) == 9
    assert minimal(sx.batch_sizes(), lambda b: b < 1) == 0
    assert minimal(sx.batch_sizes(12, 40), lambda b: b > 20) == 21


def test_batch_sizes_draw_small_zero_and_large_each_often():
    # a loose bound: Hypothesis biases generation with constants from the modules loaded in
    # the process, so the exact counts differ between a lone run and the whole suite
    groups = ["zero" if b == 0 else "small" if b <= 8 else "large" for b in samples(sx.batch_sizes())]
    assert all(groups.count(g) > len(groups) / 10 for g in ("zero", "small", "large")), groups


def test_batch_sizes_reach_a_servers_sizes_and_shrink_to_the_smallest_one_a_failure_needs():
    assert minimal(sx.batch_sizes(), lambda b: b > 256) == 257
    assert minimal(sx.batch_sizes(), lambda b: b > 512 and b % 512) % 512 == 1  # a tail of one row
    assert minimal(sx.batch_sizes(), lambda b: b > 4096) == 4097
    # one past each power of two up to the largest batch the contract covers (§11.3), rarer still
    assert minimal(sx.batch_sizes(4098), lambda b: b > 4097) == 8193
    assert minimal(sx.batch_sizes(4098), lambda b: b > 8193) == 16385
    assert all(b <= 600 for b in samples(sx.batch_sizes(0, 600)))


def test_cases_of_every_in_place_contract_draw_a_tail_block_past_512_rows_in_the_ci_profiles_examples():
    for strategy in (sx.eagle_cases(), sx.kernel_cases(), sx.dflash_cases()):
        sizes = [case.bs for case in samples(strategy, 200)]
        assert any(b > 512 and b % 512 for b in sizes), sizes
        assert sum(b > 256 for b in sizes) <= 200 / 8  # rare enough to keep the suite's time


@pytest.mark.parametrize("name", contracts.NAMES)
def test_each_contract_registers_a_strategy_of_cases_its_record_accepts_and_a_reference_can_run(name):
    record, (strategy, takes) = contracts.get(name), sx.BY_CONTRACT[name]
    chosen = {"modes": record.modes, "fixed_token_id": 100}
    for case in samples(strategy(**{key: chosen[key] for key in takes}), 20):
        assert record.accepts(case) and case.problem() is None, case


def test_acc_lens_shrink_to_one_and_to_the_plainest_fraction():
    assert minimal(sx.acc_lens(5)) == 1.0
    assert minimal(sx.acc_lens(5), lambda x: math.isfinite(x) and x != int(x)) == 1.5


def test_layout_codes_name_every_layout_and_shrink_to_contiguous():
    assert tn.decode_layouts(0, (2, 1)) == ("contiguous", "contiguous")
    assert {tn.decode_layouts(code, (2,))[0] for code in range(len(LAYOUTS))} == set(LAYOUTS)
    assert tn.decode_layouts(len(LAYOUTS), (2, 1)) == ("contiguous", "strided")  # 1-D: no transposed view
    assert minimal(tn.layout_codes(3)) == 0
