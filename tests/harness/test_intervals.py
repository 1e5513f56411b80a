"""The statistics ``simacc observe`` adds to ``simacc.harness.judging.statistics``: the mean's
empirical Bernstein interval, the count limit of independent trials, the DKW band; and the CDF
band's ends, which a few draws reach."""

import math
import random

import pytest

from simacc.harness.judging import statistics


def test_the_mean_interval_is_the_empirical_bernstein_bound_on_each_side():
    values = [1, 2, 2, 3] * 250
    low, high = statistics.mean_interval(values, 1, 4, 1e-6)
    variance = sum((v - 2) ** 2 for v in values) / 999
    half = math.sqrt(2 * variance * math.log(4e6) / 1000) + 7 * 3 * math.log(4e6) / (3 * 999)
    assert (low, high) == pytest.approx((2 - half, 2 + half))


def test_the_mean_interval_of_a_constant_sample_is_narrow_and_of_one_draw_the_whole_range():
    low, high = statistics.mean_interval([3] * 10_000, 1, 5, 1e-6)
    assert 3 - 0.02 < low < 3 < high < 3 + 0.02
    assert statistics.mean_interval([3], 1, 5) == (1.0, 5.0)


def test_the_mean_interval_covers_the_mean_of_skewed_and_spread_laws_at_a_loose_rate():
    """At a false-alarm rate of 0.05 the interval should miss in at most 5% of runs (it is
    conservative: here none of 200)."""
    rng = random.Random(5)
    for law in ([0.97, 0.01, 0.01, 0.01], [0.25, 0.25, 0.25, 0.25], [0.5, 0, 0, 0.5]):
        mean = sum((a + 1) * p for a, p in enumerate(law))
        misses = 0
        for _ in range(200):
            values = rng.choices([1, 2, 3, 4], weights=law, k=300)
            low, high = statistics.mean_interval(values, 1, 4, 0.05)
            misses += not low <= mean <= high
        assert misses <= 10, (law, misses)


def test_the_count_limit_is_the_chernoff_bound_at_the_trials_mean():
    assert statistics.count_limit([0.0] * 50) == 0
    assert statistics.count_limit([1.0] * 50) == 50
    assert statistics.count_limit([]) == 0
    limit = statistics.count_limit([0.5] * 100, 1e-6)
    kl = lambda m: statistics.bernoulli_kl(m / 100, 0.5)  # noqa: E731
    assert 100 * kl(limit) <= math.log(1e6) < 100 * kl(limit + 1)


def test_the_count_limit_holds_for_trials_of_unequal_chances():
    """The exact tail of 40 trials of chances 0.05..0.95 past the limit at 1e-3, summed over
    every outcome count by dynamic programming, is at most 1e-3; the exact limit is 28, the
    bound's 31."""
    chances = [0.05 + 0.9 * i / 39 for i in range(40)]
    limit = statistics.count_limit(chances, 1e-3)
    law = [1.0]
    for p in chances:
        law = [a * (1 - p) + b * p for a, b in zip([*law, 0.0], [0.0, *law])]
    exact = next(c for c in range(41) if sum(law[c + 1:]) <= 1e-3)
    assert sum(law[limit + 1:]) <= 1e-3 and (exact, limit) == (28, 31)


def test_the_dkw_band_is_its_formula():
    assert statistics.dkw_epsilon(1000, 1e-6) == pytest.approx(math.sqrt(math.log(2e6) / 2000))


def test_the_cdf_band_reaches_0_and_1_when_few_draws_allow_them():
    """Twenty draws all above 2 from a law with P(L <= 2) = 0.4 happen with probability
    0.6^20 = 3.7e-5: far more than 1e-6, so the test must pass them (it failed them while its
    band stopped just short of 0)."""
    assert statistics.band(20, 0.4, 1)[0] == 0.0 and statistics.band(1, 0.283, 1) == (0.0, 1.0)
    assert statistics.cdf_test([3] * 20, [0, 0.4, 0.6, 0]).passed
    assert not statistics.cdf_test([3] * 40, [0, 0.4, 0.6, 0]).passed  # 0.6^40 = 1.3e-9
