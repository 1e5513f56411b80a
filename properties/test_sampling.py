"""The acceptance length and the generator (CONTRACT.md §3, §4.1).

The statistical properties run the implementation under test on a one-request case with the
CPU generator seeded ``0..n-1`` (fixed seeds: the same verdict on every run) and compare the
lengths with the documented law by :func:`~simacc.harness.judging.statistics.cdf_test`
(CONTRACT.md §9.4), each parametrization at its share of the property's false-alarm rate of
1e-6. They apply at the semantic level only: at the exact level
``length_matches_the_documented_draw`` holds every ``L`` to the documented draw, made by hand
from §3's words (``support.documented_draws``), whose law follows from them; ``tests/contract/test_sampler.py``
checks the law of simacc's own sampler with these designs too. The lengths ``x`` and the draws at each are chosen
where the law is most sensitive (§9.4 gives what each sees): for match-expected an integer
(one length only), fractions of 0.05 and 0.95 (an expected length off by 0.05 changes the
rarer length's share by its whole size), 0.5, and both sides of ``[1, W]``; for multinomial
the middle of the range (a wrong spread or mean moves the CDF most there) and both sides.
"""

import torch

from simacc import strategies as sx
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

CONTRACTS = sx.EAGLE_LAYOUTS
SPEC_STEPS = 3  # max_len 4: room below, inside and above the range
MAX_LEN = SPEC_STEPS + 1
# x: draws (one call each, about 0.1 ms in the harness)
MATCH_EXPECTED_DRAWS = {0.4: 500, 2.0: 500, 2.05: 2000, 2.5: 2000, 3.95: 2000, 6.5: 500}
MULTINOMIAL_DRAWS = {0.4: 1000, 1.0: 2500, 2.5: 12000, 3.7: 2500, 6.5: 1000}  # 2.5: a mean off by 0.1 (§9.4)
LENGTHS = "L (num_correct_drafts + 1 and index entries != -1, per row) spans"
batches = support.eagle_cases_for_impl(min_bs=1)
cases = support.eagle_cases_for_impl()


def designs():
    """Each statistical check of this module as :class:`~simacc.properties.support.Design`
    records: what the power figures (CONTRACT.md §9.4) and ``benchmarks/power.py`` read."""
    return [support.Design("match_expected_has_the_documented_mean_and_support", f"x={x}", runs,
                           tuple(support.match_expected_probabilities(x, MAX_LEN)),
                           statistics.FALSE_ALARM / len(MATCH_EXPECTED_DRAWS))
            for x, runs in MATCH_EXPECTED_DRAWS.items()] + [
            support.Design("multinomial_matches_the_rounded_clamped_gaussian", f"x={x}", runs,
                           tuple(support.gaussian_probabilities(x, MAX_LEN)),
                           statistics.FALSE_ALARM / len(MULTINOMIAL_DRAWS))
            for x, runs in MULTINOMIAL_DRAWS.items()]


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
    """L is exactly the documented draw from torch's CPU generator, made by hand as §3 says (§3.2, §3.3)."""
    lengths = support.observed_lengths(simacc.run(case))
    length = support.documented_draws(case)[0]
    expected = torch.full_like(lengths, length)

    def role(index):
        row = index[0] % max(case.bs, 1)
        return f"row {row}'s {'num_correct_drafts + 1' if index[0] < case.bs else 'index entries other than -1'}"

    check_equal("L (num_correct_drafts + 1, then index entries != -1, per row)", lengths, expected, case, length, role)


@claim(*CONTRACTS, levels=("exact",), case=cases)
def test_generator_consumes_exactly_the_documented_draws(simacc, case):
    """The CPU generator advances by exactly the draws §3 documents, none on other generators' behalf."""
    support.check_documented_draws(simacc.run(case), case)


@claim(*CONTRACTS, levels=("exact",), case=cases)
def test_same_generator_state_gives_identical_outputs(simacc, case):
    """Two calls from the same generator state give the same bytes (§3.1)."""
    first, second = simacc.run(case), simacc.run(case)
    support.check_same_outputs("(second run)", second, first, case)


@claim(*CONTRACTS, levels=("semantic",), params={"x": list(MATCH_EXPECTED_DRAWS)})
def test_match_expected_has_the_documented_mean_and_support(simacc, x):
    """match-expected draws floor(c) or floor(c) + 1 with mean c = clamp(x, 1, W) (§3.3, §9.2, §9.4)."""
    runs = MATCH_EXPECTED_DRAWS[x]
    lengths = support.sampled_lengths(simacc, x, "match-expected", runs, SPEC_STEPS)
    support.check_distribution(lengths, support.match_expected_probabilities(x, MAX_LEN),
                               f"match-expected L counts for 1..{MAX_LEN} (x={x}, seeds 0..{runs - 1})",
                               statistics.FALSE_ALARM / len(MATCH_EXPECTED_DRAWS))


@claim(*CONTRACTS, levels=("semantic",), params={"x": list(MULTINOMIAL_DRAWS)})
def test_multinomial_matches_the_rounded_clamped_gaussian(simacc, x):
    """multinomial is round(clamp(N(x, 1), 1, W)), the mean not clamped (§3.2, §9.3, §9.4)."""
    runs = MULTINOMIAL_DRAWS[x]
    lengths = support.sampled_lengths(simacc, x, "multinomial", runs, SPEC_STEPS)
    support.check_distribution(lengths, support.gaussian_probabilities(x, MAX_LEN),
                               f"multinomial L counts for 1..{MAX_LEN} (x={x}, seeds 0..{runs - 1})",
                               statistics.FALSE_ALARM / len(MULTINOMIAL_DRAWS))
