"""The acceptance length and the generator (CONTRACT.md §3, §4.1).

The statistical properties run the implementation under test on one-request cases with
seeds ``0..RUNS-1`` (fixed seeds: the same verdict on every run) and compare the empirical
distribution of ``L`` with the documented one through the Dvoretzky-Kiefer-Wolfowitz-Massart
inequality: for ``n`` independent draws from the documented distribution,
``P(max_k |F_emp(k) - F(k)| > eps) <= 2 exp(-2 n eps^2)``. Setting that to
``support.FALSE_ALARM`` (1e-6) gives ``eps = sqrt(ln(2 / 1e-6) / (2 n))``, about 0.085 for
n = 1000: an implementation with the documented distribution fails with probability <= 1e-6
(whatever stream it draws from), and one whose CDF is off by well over 0.085 somewhere
(truncating instead of rounding, swapped weights, a wrong clamp or std) fails almost surely.
"""

import math

import pytest
import torch

from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.judging.distributions import Distribution
from simacc.properties import support

CONTRACTS = ("eagle", "legacy")
RUNS = 1000  # one call each, ~1 ms in the harness: ~1 s per parametrization
SPEC_STEPS = 3  # max_len 4: room below, inside and above the range
MAX_LEN = SPEC_STEPS + 1
# below 1, an integer (for match-expected a draw with weights [1, 0]), fractions, above max_len
MATCH_EXPECTED_LENGTHS = [0.4, 2.0, 2.25, 3.7, 6.5]
MULTINOMIAL_LENGTHS = [0.4, 1.0, 2.5, 3.7, 6.5]
LENGTHS = "L (num_correct_drafts + 1 and index entries != -1, per row) spans"
batches = support.eagle_cases_for_impl(min_bs=1)
cases = support.eagle_cases_for_impl()


@claim(*CONTRACTS, case=batches)
def test_length_is_within_one_and_width(simacc, case):
    """1 <= L <= W, as both num_correct_drafts and the index show it (§3.1)."""
    lengths = support.observed_lengths(simacc.run(case))
    low, high = int(lengths.min()), int(lengths.max())
    check(1 <= low and high <= case.max_len, LENGTHS, (low, high), f"within [1, {case.max_len}]", case)


@claim(*CONTRACTS, case=batches)
def test_length_is_one_value_for_the_whole_batch(simacc, case):
    """One L for every row of the batch, the same in num_correct_drafts and in the index (§3.1)."""
    lengths = support.observed_lengths(simacc.run(case))
    low, high = int(lengths.min()), int(lengths.max())
    check(low == high, LENGTHS, (low, high), "one value for every row and both outputs", case)


@claim(*CONTRACTS, levels=("exact",), case=batches)
def test_length_matches_the_documented_draw(simacc, case):
    """L is exactly the documented draw from torch's CPU generator (§3.2, §3.3)."""
    lengths = support.observed_lengths(simacc.run(case))
    expected = torch.full_like(lengths, case.expected_length())

    def role(index):
        row = index[0] % max(case.bs, 1)
        return f"row {row}'s {'num_correct_drafts + 1' if index[0] < case.bs else 'index entries other than -1'}"

    check_equal("L (num_correct_drafts + 1, then index entries != -1, per row)", lengths, expected, case,
                case.expected_length(), role)


@claim(*CONTRACTS, levels=("exact",), case=cases)
def test_generator_consumes_exactly_the_documented_draws(simacc, case):
    """The CPU generator advances by exactly the draws §3 documents, none on other generators' behalf."""
    support.check_documented_draws(simacc.run(case), case)


@claim(*CONTRACTS, levels=("exact",), case=cases)
def test_same_generator_state_gives_identical_outputs(simacc, case):
    """Two calls from the same generator state give the same bytes (§3.1)."""
    first, second = simacc.run(case), simacc.run(case)
    support.check_same_outputs("(second run)", second, first, case)


@pytest.mark.parametrize("x", MATCH_EXPECTED_LENGTHS)
@claim(*CONTRACTS)
def test_match_expected_has_the_documented_mean_and_support(simacc, x):
    """match-expected draws floor(c) or floor(c) + 1 with mean c = clamp(x, 1, W) (§3.3, DKW bound)."""
    lengths = support.sampled_lengths(simacc, x, "match-expected", RUNS, SPEC_STEPS)
    clamped = max(1.0, min(MAX_LEN, x))
    seen = sorted(set(lengths))
    allowed = sorted({math.floor(clamped), math.ceil(clamped)})
    probabilities = support.match_expected_probabilities(x, MAX_LEN)
    eps = support.dkw_epsilon(RUNS)  # for two values: |mean - E[L]| <= eps too
    shown = Distribution.of(lengths, probabilities, eps, f"match-expected L (x={x}, max_len={MAX_LEN})")
    what = f"match-expected L support (x={x}, max_len={MAX_LEN}, seeds 0..{RUNS - 1})"
    check(set(seen) <= set(allowed), what, seen, f"within {allowed}", None, distribution=shown)
    mean = sum(lengths) / RUNS
    k, gap = support.largest_cdf_gap(lengths, probabilities)
    what = f"match-expected mean L (x={x}, max_len={MAX_LEN}, seeds 0..{RUNS - 1})"
    check(gap <= eps, what, mean, f"{clamped} within {eps:.3f} (CDF off by {gap:.3f} at {k})", None,
          distribution=shown)


@pytest.mark.parametrize("x", MULTINOMIAL_LENGTHS)
@claim(*CONTRACTS)
def test_multinomial_matches_the_rounded_clamped_gaussian(simacc, x):
    """multinomial is round(clamp(N(x, 1), 1, W)), the mean not clamped (§3.2, DKW bound)."""
    lengths = support.sampled_lengths(simacc, x, "multinomial", RUNS, SPEC_STEPS)
    probabilities = support.gaussian_probabilities(x, MAX_LEN)
    outside = sum(not 1 <= n <= MAX_LEN for n in lengths)
    what = f"multinomial L outside [1, {MAX_LEN}] (x={x}, seeds 0..{RUNS - 1})"
    shown = Distribution.of(lengths, probabilities, support.dkw_epsilon(RUNS), f"multinomial L (x={x})")
    check(outside == 0, what, outside, 0, None, distribution=shown)
    what = f"multinomial L counts for 1..{MAX_LEN} (x={x}, seeds 0..{RUNS - 1})"
    support.check_distribution(lengths, probabilities, what)
