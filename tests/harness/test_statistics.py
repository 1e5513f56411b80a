"""The CDF test behind every distribution claim (CONTRACT.md §9.4): its bands are the Chernoff
bound's at the stated false-alarm rate, a side the bound never reaches is accepted whole, a
value the law rules out fails at once, and its power is the exact binomial law's. The repeat
test (§9.1: consecutive draws independent) fails blocks repeated at any lag up to half the draws."""

import math
import random

from simacc.harness.judging import statistics


def test_a_band_edge_is_where_n_kl_reaches_the_budget_of_its_points():
    low, high = statistics.band(1000, 0.3, 3, 1e-6)
    budget = math.log(2 * 3 / 1e-6)
    for edge in (low, high):
        assert abs(1000 * statistics.bernoulli_kl(edge, 0.3) - budget) < 1e-6
    assert low < 0.3 < high


def test_a_side_the_bound_never_reaches_is_accepted_whole():
    assert statistics.band(100, 3e-7, 1)[0] == 0.0 and statistics.band(100, 1 - 3e-7, 1)[1] == 1.0
    assert statistics.cdf_test([2] * 100, [3e-7, 1 - 3e-7]).passed  # no draw of 1 among 100: likely


def test_a_value_the_law_rules_out_fails_whatever_its_count():
    test = statistics.cdf_test([1] * 999 + [3], [0.5, 0.5, 0.0])
    assert not test.passed and (test.k, test.expected) == (3, 0.0)
    assert not statistics.cdf_test([1, 9], [1.0]).passed


def test_the_documented_law_passes_and_a_narrower_one_fails():
    law = [0.25, 0.5, 0.25]
    assert statistics.cdf_test([1] * 250 + [2] * 500 + [3] * 250, law).passed
    test = statistics.cdf_test([1] * 150 + [2] * 700 + [3] * 150, law)
    assert not test.passed and test.k in (1, 2) and not test.low <= test.observed <= test.high


def test_the_binomial_tail_is_the_sum_of_its_terms():
    n, p = 200, 0.3
    terms = [math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1)]
    for count in (-1, 0, 59.5, 60, 80, 199.5, 200):
        expected = sum(terms[j] for j in range(n + 1) if j > count)
        assert math.isclose(statistics._binomial_tail_above(n, p, count), expected, rel_tol=1e-9, abs_tol=1e-300)


def test_the_detectable_gap_is_seen_with_the_power_asked_and_a_smaller_one_is_not():
    n, f, points = 2000, 0.2, 2
    gap = statistics.detectable_gap(n, f, points)
    high = statistics.band(n, f, points)[1]
    assert statistics._binomial_tail_above(n, f + gap, high * n) >= 0.999
    assert statistics._binomial_tail_above(n, f + gap * 0.9, high * n) < 0.999


def test_repeated_blocks_fail_the_repeat_test_at_their_period_and_independent_draws_pass():
    law = [0.25, 0.5, 0.25]
    block = [1, 2, 3, 2, 2, 1, 3, 2, 2, 3, 1, 2, 2, 3, 2, 1]
    test = statistics.repeat_test(block * 4, law)
    assert not test.passed and (test.lag, test.matches, test.pairs) == (16, 48, 48) and math.isclose(test.chance, 0.5 ** 48)
    rng = random.Random(0)
    assert all(statistics.repeat_test(rng.choices([1, 2, 3], law, k=64), law).passed for _ in range(200))


def test_the_repeat_tests_bound_holds_for_a_lopsided_law():
    # one value of probability 0.9: most pairs match by chance, and the bound at max p allows it
    law = [0.9, 0.1]
    rng = random.Random(1)
    assert all(statistics.repeat_test(rng.choices([1, 2], law, k=64), law).passed for _ in range(200))
    assert statistics.repeat_test([1] * 64, [1.0]).passed  # a law of one value: every pair matches
