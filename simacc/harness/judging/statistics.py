"""The statistical tests behind every claim about a distribution, each with its false-alarm
rate stated and its power computable, so that a verdict on a law means what it says.

The distribution of a length (or any value on a small support ``1..W``) is judged through its
CDF, point by point: at each of the ``m`` points ``k`` where the documented CDF ``F(k)`` lies
strictly between 0 and 1, the empirical ``F_n(k)`` of ``n`` independent draws is a binomial
proportion, and the Chernoff bound gives ``P(F_n(k) >= F(k) + d) <= exp(-n KL(F(k) + d || F(k)))``
(``KL`` between two Bernoulli laws), and the same below. Rejecting when
``n KL(F_n(k) || F(k)) > log(2 m / false_alarm)`` at any point therefore fails a conforming
implementation with probability at most ``false_alarm``, whatever stream it draws from (a
union over ``2 m`` one-sided events). Where ``F(k)`` is 0 or 1 any other value is impossible,
and is rejected outright. Against the DKW bound (one band ``sqrt(log(2 / a) / (2 n))`` for the
whole CDF) the bands are the same near ``F = 1/2`` (a little wider: ``log(2 m)`` for ``log 2``)
and much narrower in the tails, where a wrong spread shows: a Gaussian of standard deviation
0.8 instead of 1 is seen in 2,000 draws here where DKW needs about 4,000.

:func:`detectable_gap` is the power: the smallest shift of ``F(k)`` that the test sees with
probability at least ``power``, computed from the exact binomial law at the test's own bounds.
"""

import dataclasses
import math
from dataclasses import dataclass

FALSE_ALARM = 1e-6  # per property run: a property that makes several checks gives each a share (CONTRACT.md §9.4)


def bernoulli_kl(a, b):
    """``KL(Bernoulli(a) || Bernoulli(b))``, infinite where ``a`` is possible and ``b`` is not."""
    if not 0.0 < b < 1.0:
        return 0.0 if a == b else math.inf
    total = 0.0
    if a > 0.0:
        total += a * math.log(a / b)
    if a < 1.0:
        total += (1.0 - a) * math.log((1.0 - a) / (1.0 - b))
    return total


def budget(points, false_alarm=FALSE_ALARM):
    """``log(2 m / false_alarm)``: what ``n KL`` may reach at one of ``m`` points."""
    return math.log(2 * max(points, 1) / false_alarm)


def band(n, expected, points, false_alarm=FALSE_ALARM):
    """``(low, high)``: the empirical CDF values at a point whose documented value is
    ``expected`` that the test accepts from ``n`` draws (``expected`` itself at 0 and 1)."""
    if not 0.0 < expected < 1.0:
        return expected, expected
    limit = budget(points, false_alarm) / n

    def edge(inside, outside):  # bisection on the monotone KL between expected and the bound
        if bernoulli_kl(outside, expected) <= limit:
            return outside  # the whole side is accepted (few draws)
        for _ in range(60):
            middle = (inside + outside) / 2
            inside, outside = (middle, outside) if bernoulli_kl(middle, expected) <= limit else (inside, middle)
        return inside

    return edge(expected, 0.0), edge(expected, 1.0)


@dataclass(frozen=True)
class CdfTest:
    """The outcome of :func:`cdf_test`: whether the draws pass, and at the worst point ``k``
    (the value whose CDF is judged) the empirical and documented CDFs and the accepted band."""

    passed: bool
    k: object
    observed: float
    expected: float
    low: float
    high: float
    runs: int

    @property
    def gap(self):
        return abs(self.observed - self.expected)


def cdf_points(probabilities):
    """The documented CDF at each value but the last (``F(k)`` for ``k = 1..W-1``, cut at 1)
    and how many of those points lie strictly between 0 and 1 (``m``: the union's size)."""
    cdf = [min(sum(probabilities[: i + 1]), 1.0) for i in range(len(probabilities) - 1)]
    return cdf, sum(0.0 < f < 1.0 for f in cdf)


def cdf_bands(runs, probabilities, false_alarm=FALSE_ALARM):
    """``[(low, high)]``: what the test accepts of the empirical CDF at each value of the
    support, the last included (where the CDF is 1 whatever the draws inside the support)."""
    cdf, points = cdf_points(probabilities)
    return [band(runs, f, points, false_alarm) if runs else (f, f) for f in cdf] + [(1.0, 1.0)]


def cdf_test(values, probabilities, false_alarm=FALSE_ALARM, support=None):
    """Test ``values`` (draws) against ``probabilities`` (``P(value = support[i])``; ``support``
    defaults to ``1..len(probabilities)``) at ``false_alarm`` (see the module). A value outside
    the support, or one the law gives probability 0, fails whatever its count. The result names
    the point furthest outside its band (the furthest in, when every point passes)."""
    support = list(range(1, len(probabilities) + 1)) if support is None else list(support)
    index = {value: i for i, value in enumerate(support)}
    counts = [0] * len(support)
    for value in values:
        if value not in index:
            return CdfTest(False, value, 1.0 / max(len(values), 1), 0.0, 0.0, 0.0, len(values))
        counts[index[value]] += 1
    return counts_test(counts, probabilities, false_alarm, support)


def counts_test(counts, probabilities, false_alarm=FALSE_ALARM, support=None):
    """:func:`cdf_test` of draws given as ``counts[i]``, the draws of ``support[i]``: what a
    histogram or a stream of draws too long to keep can be judged by."""
    support = list(range(1, len(probabilities) + 1)) if support is None else list(support)
    runs = sum(counts)
    for i, p in enumerate(probabilities):
        if p == 0.0 and counts[i]:
            return CdfTest(False, support[i], counts[i] / runs, 0.0, 0.0, 0.0, runs)
    cdf, _ = cdf_points(probabilities)
    judged = []
    for i, (expected, (low, high)) in enumerate(zip(cdf, cdf_bands(runs, probabilities, false_alarm))):
        observed = sum(counts[: i + 1]) / runs if runs else expected
        edge = low if observed < expected else high
        excess = bernoulli_kl(observed, expected) / max(bernoulli_kl(edge, expected), 1e-300)
        judged.append((excess, CdfTest(low <= observed <= high, support[i], observed, expected, low, high, runs)))
    if not judged:  # one value: nothing to judge but the support
        return CdfTest(True, support[0], 1.0, 1.0, 1.0, 1.0, runs)
    worst = max(judged, key=lambda pair: pair[0])[1]
    return dataclasses.replace(worst, passed=all(test.passed for _, test in judged))


def _binomial_tail_above(n, p, count):
    """``P(X > count)`` for ``X ~ Binomial(n, p)``: the terms from ``floor(count) + 1`` up, in
    log space, until past the mode they no longer add to the sum."""
    start = max(int(math.floor(count)) + 1, 0)
    if start > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    term = (math.lgamma(n + 1) - math.lgamma(start + 1) - math.lgamma(n - start + 1)
            + start * log_p + (n - start) * log_q)
    terms, top = [], term
    for j in range(start, n + 1):
        terms.append(term)
        top = max(top, term)
        if j > n * p and term < top - 50:  # the rest adds less than e^-50 of the largest term, each
            break
        term += math.log(n - j) - math.log(j + 1) + log_p - log_q if j < n else 0.0
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def detectable_gap(n, expected, points, false_alarm=FALSE_ALARM, power=0.999):
    """The smallest ``d`` such that, when the true CDF at a point is ``expected + d``, the test
    rejects with probability at least ``power`` from ``n`` draws (the exact binomial law at the
    test's upper bound; the gap below is the mirror image at ``1 - expected``)."""
    _, high = band(n, expected, points, false_alarm)
    low_d, high_d = 0.0, 1.0 - expected
    if _binomial_tail_above(n, 1.0, high * n) < power:
        return math.inf
    for _ in range(40):
        middle = (low_d + high_d) / 2
        if _binomial_tail_above(n, expected + middle, high * n) >= power:
            high_d = middle
        else:
            low_d = middle
    return high_d


def dkw_epsilon(n, false_alarm=FALSE_ALARM):
    """The Dvoretzky-Kiefer-Wolfowitz-Massart band: ``n`` independent draws from any law have
    ``max_k |F_n(k) - F(k)| > eps`` with probability at most ``2 exp(-2 n eps^2) = false_alarm``."""
    return math.sqrt(math.log(2 / false_alarm) / (2 * n))


def mean_interval(values, low, high, false_alarm=FALSE_ALARM):
    """``(lower, upper)``: an interval that misses the mean of the law of ``values`` (independent
    draws from one law on ``[low, high]``) with probability at most ``false_alarm``, whatever
    that law's variance: the empirical Bernstein bound (Maurer and Pontil 2009, Theorem 4) on
    each side at ``false_alarm / 2``, so that a law of small spread gets a narrow interval
    without its variance being known. Two draws at least, or the whole range."""
    n = len(values)
    if n < 2:
        return float(low), float(high)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    log_term = math.log(4 / false_alarm)
    half = math.sqrt(2 * variance * log_term / n) + 7 * (high - low) * log_term / (3 * (n - 1))
    return max(float(low), mean - half), min(float(high), mean + half)


def bernstein_limit(variance, bound, false_alarm=FALSE_ALARM):
    """The ``t`` that a sum of independent zero-mean terms, of summed variance ``variance`` and
    each at most ``bound`` in size, exceeds in size (``|S| >= t``) with probability at most
    ``false_alarm``: Bernstein's inequality ``2 exp(-t^2 / (2 V + 2 b t / 3))`` solved for ``t``."""
    log_term = math.log(2 / false_alarm)
    third = bound * log_term / 3
    return third + math.sqrt(third * third + 2 * variance * log_term)


def count_limit(probabilities, false_alarm=FALSE_ALARM):
    """The largest number of successes that independent trials with success probabilities
    ``probabilities`` exceed with probability at most ``false_alarm``: the Chernoff bound
    ``P(S >= m) <= exp(-n KL(m / n || p))`` at their mean ``p``, which holds for trials of unequal
    probabilities too (Hoeffding 1956). A count above it is an excess at that rate."""
    n = len(probabilities)
    mean = math.fsum(probabilities) / n if n else 0.0
    allowed = math.log(1 / false_alarm)
    lowest, highest = math.ceil(mean * n), n + 1  # the first m whose bound is small enough lies in between
    while lowest < highest:
        middle = (lowest + highest) // 2
        if middle > mean * n and n * bernoulli_kl(middle / n, mean) > allowed:
            highest = middle
        else:
            lowest = middle + 1
    return lowest - 1
