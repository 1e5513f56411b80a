"""The acceptance length and the generator (SPEC.md, "Length sampling" and step 1).

The statistical properties run the implementation under test on one-request cases with
seeds ``0..RUNS-1`` (fixed seeds: the same verdict on every run) and compare the empirical
distribution of ``L`` with the documented one through the Dvoretzky-Kiefer-Wolfowitz-Massart
inequality: for ``n`` independent draws from the documented distribution,
``P(max_k |F_emp(k) - F(k)| > eps) <= 2 exp(-2 n eps^2)``. Setting that to ``FALSE_ALARM``
gives ``eps = sqrt(ln(2 / FALSE_ALARM) / (2 n))``, about 0.085 for n = 1000: an
implementation with the documented distribution fails with probability <= 1e-6 (whatever
stream it draws from), and one whose CDF is off by well over 0.085 somewhere (truncating
instead of rounding, swapped weights, a wrong clamp or std) fails almost surely.
"""

import math

import pytest
import torch
from hypothesis import given

from properties import support
from simacc.harness.assertions import check, check_equal

pytestmark = pytest.mark.contracts("eagle", "legacy")

RUNS = 1000  # one call each, ~1 ms in the harness: ~1 s per parametrization
FALSE_ALARM = 1e-6
SPEC_STEPS = 3  # max_len 4: room below, inside and above the range
MAX_LEN = SPEC_STEPS + 1
# below 1, an integer (for match-expected a draw with weights [1, 0]), fractions, above max_len
MATCH_EXPECTED_LENGTHS = [0.4, 2.0, 2.25, 3.7, 6.5]
MULTINOMIAL_LENGTHS = [0.4, 1.0, 2.5, 3.7, 6.5]


@given(case=support.eagle_cases(min_bs=1))
def test_length_is_within_one_and_width(impl, device, case):
    outcome = impl.run(case, device)
    lengths = support.observed_lengths(outcome)
    low, high = int(lengths.min()), int(lengths.max())
    what = "L (num_correct_drafts + 1 and index entries != -1, per row) spans"
    check(1 <= low and high <= case.max_len, what, (low, high), f"within [1, {case.max_len}]", case)


@given(case=support.eagle_cases(min_bs=1))
def test_length_is_one_value_for_the_whole_batch(impl, device, case):
    lengths = support.observed_lengths(impl.run(case, device))
    low, high = int(lengths.min()), int(lengths.max())
    what = "L (num_correct_drafts + 1 and index entries != -1, per row) spans"
    check(low == high, what, (low, high), "one value for every row and both outputs", case)


@pytest.mark.levels("exact")
@given(case=support.eagle_cases(min_bs=1))
def test_length_matches_the_documented_draw(impl, device, case):
    lengths = support.observed_lengths(impl.run(case, device))
    expected = torch.full_like(lengths, case.expected_length())
    check_equal("L (num_correct_drafts + 1, then index entries != -1, per row)", lengths, expected, case)


@pytest.mark.levels("exact")
@given(case=support.eagle_cases())
def test_generator_consumes_exactly_the_documented_draws(impl, device, case):
    outcome = impl.run(case, device)
    state, draws = support.state_after_documented_draws(case)
    got = "advanced by other draws" if outcome.draws_consumed else "unchanged (no draw)"
    want = f"advanced by exactly the {draws} documented draw(s)" if draws else "unchanged (no draw)"
    check(torch.equal(outcome.rng_after, state), "CPU generator state", got, want, case)


@pytest.mark.levels("exact")
@given(case=support.eagle_cases())
def test_same_generator_state_gives_identical_outputs(impl, device, case):
    first, second = impl.run(case, device), impl.run(case, device)
    support.check_same_outputs("(second run)", second, first, case)


def match_expected_probabilities(x):
    """P(L = k), k = 1..MAX_LEN, under ``match-expected`` (SPEC.md)."""
    clamped = max(1.0, min(MAX_LEN, x))
    lo = math.floor(clamped)
    probabilities = [0.0] * MAX_LEN
    probabilities[lo - 1] = 1 - (clamped - lo)
    if lo < MAX_LEN:
        probabilities[lo] = clamped - lo
    return probabilities


def gaussian_probabilities(x):
    """P(L = k), k = 1..MAX_LEN, for round(clamp(N(x, 1), 1, MAX_LEN)): the rounding cells
    ``(k - 1/2, k + 1/2]`` with the two ends open (ties have probability 0)."""
    cdf = lambda z: 0.5 * (1 + math.erf((z - x) / math.sqrt(2)))  # noqa: E731
    edges = [-math.inf] + [k + 0.5 for k in range(1, MAX_LEN)] + [math.inf]
    return [cdf(b) - cdf(a) for a, b in zip(edges, edges[1:])]


@pytest.mark.parametrize("x", MATCH_EXPECTED_LENGTHS)
def test_match_expected_has_the_documented_mean_and_support(impl, device, x):
    lengths = support.sampled_lengths(impl, device, x, "match-expected", RUNS, SPEC_STEPS)
    clamped = max(1.0, min(MAX_LEN, x))
    support_ = sorted(set(lengths))
    allowed = sorted({math.floor(clamped), math.ceil(clamped)})
    what = f"match-expected L support (x={x}, max_len={MAX_LEN}, seeds 0..{RUNS - 1})"
    check(set(support_) <= set(allowed), what, support_, f"within {allowed}", None)
    mean = sum(lengths) / RUNS
    k, gap = support.largest_cdf_gap(lengths, match_expected_probabilities(x))
    eps = support.dkw_epsilon(RUNS, FALSE_ALARM)  # for two values: |mean - E[L]| <= eps too
    what = f"match-expected mean L (x={x}, max_len={MAX_LEN}, seeds 0..{RUNS - 1})"
    check(gap <= eps, what, mean, f"{clamped} within {eps:.3f} (CDF off by {gap:.3f} at {k})", None)


@pytest.mark.parametrize("x", MULTINOMIAL_LENGTHS)
def test_multinomial_matches_the_rounded_clamped_gaussian(impl, device, x):
    lengths = support.sampled_lengths(impl, device, x, "multinomial", RUNS, SPEC_STEPS)
    counts = [lengths.count(k) for k in range(1, MAX_LEN + 1)]
    outside = RUNS - sum(counts)
    what = f"multinomial L outside [1, {MAX_LEN}] (x={x}, seeds 0..{RUNS - 1})"
    check(outside == 0, what, outside, 0, None)
    probabilities = gaussian_probabilities(x)
    k, gap = support.largest_cdf_gap(lengths, probabilities)
    eps = support.dkw_epsilon(RUNS, FALSE_ALARM)
    expected = [round(p * RUNS) for p in probabilities]
    what = f"multinomial L counts for 1..{MAX_LEN} (x={x}, seeds 0..{RUNS - 1})"
    check(gap <= eps, what, counts, f"about {expected} (CDF off by {gap:.3f} at L={k}, allowed {eps:.3f})", None)
