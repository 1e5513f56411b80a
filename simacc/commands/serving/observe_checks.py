"""The verdict of ``simacc observe`` (CONTRACT.md §28): the checks judged on what
:mod:`simacc.commands.serving.observe_tally` kept of a log. Every statistical check is exact under the
law (independent draws from it) at its share of the verdict's false-alarm rate; those that a
run breaking another assumption would also trip fail only when a second, robust form of the
check agrees, so that each failure names what the run did:

* the joint law (independent laws): more steps whose requests all agree than the law allows,
  and more than the shares of the step's own stretch of the run allow (a drifting run's
  agreement is its stretch's, a lockstep run's is not);
* drift: the mean of the first half against the second's, and of each quarter against the rest
  (Bernstein at the law's variance), and again at the variance of the steps' own means (a
  lockstep run's steps swing more than the law's records);
* serial dependence: the lengths of a request's consecutive steps, paired (two steps, then the
  next two), multiplied as deviations from the law's mean, and again as deviations from their
  steps' means (a drift moves a step's requests together, and a lockstep run's requests are
  their step's mean).

The mean is judged by Bernstein's inequality at the law's variance (the law is the hypothesis:
under it the variance is known), and the power is the mean's: the smallest shift of AL that
fails the mean check in 99 runs of 100 at its rate.
"""

import math
from dataclasses import dataclass

from simacc.commands.serving.observe_tally import LogError
from simacc.contract import laws
from simacc.harness.judging import statistics

FALSE_ALARM = statistics.FALSE_ALARM  # for the whole verdict, split evenly over its statistical checks
POWER = 0.99  # the share of runs the stated shift fails
SHIFT = 0.1  # the shift of AL a conclusive verdict must see
BLOCK = 64  # steps per stretch whose own shares the joint law's robust form uses


@dataclass(frozen=True)
class Check:
    """One check of the verdict: whether it passed, a line saying so, on a failure what differs
    (in the terms of what the run did), and its numbers."""

    name: str
    passed: bool
    said: str
    difference: str
    data: dict


def check(name, passed, said, difference="", **data):
    return Check(name, passed, said, (difference or said) if not passed else "", data)


@dataclass(frozen=True)
class Power:
    """The smallest shift of AL the verdict sees in :data:`POWER` of runs, over ``units``."""

    shift: float
    units: int
    unit: str

    @property
    def conclusive(self):
        return self.shift <= SHIFT

    def said(self):
        shown = "no shift at all (too few draws)" if math.isinf(self.shift) else f"a shift of AL by {self.shift:.3f}"
        return f"it would see {shown} or more in {POWER:.0%} of runs, over {self.units} {self.unit}"


@dataclass(frozen=True)
class Verdict:
    law: object
    records: int
    steps: int
    requests: int
    observed_al: float
    interval: tuple
    checks: tuple
    fits: tuple  # the other laws the log passes, on a failure
    counts: tuple  # records (with K drafts) of each length 1..K+1
    outside: int
    step_means: tuple  # (step, mean length, requests) per step
    band: tuple  # (low, high) of the CDF at each length the test judged
    dkw: float
    power: Power
    supports: str
    fewer: int  # records with fewer drafts than K

    @property
    def passed(self):
        return all(c.passed for c in self.checks)

    @property
    def status(self):
        return "fail" if not self.passed else "pass" if self.power.conclusive else "inconclusive"

    @property
    def differences(self):
        return [c.difference for c in self.checks if not c.passed]


def judge(tally, law=None, false_alarm=FALSE_ALARM, candidates=()):
    """The :class:`Verdict` on ``tally`` under ``law`` (the tally's own by default; another only
    for a log with K drafts in every record); on a failure, ``fits`` names the laws among
    ``candidates`` that the log passes."""
    law = law or tally.law
    k, steps = tally.k, tally.steps
    own = law is tally.law
    groups = tally.laws if own else {k: (law.accepted, law.mean, law.sd ** 2, max(law.mean - 1, k + 1 - law.mean))}
    steps.derive(groups[k][1], groups[k][2])
    lockstep = law.engine.joint != laws.INDEPENDENT
    sized = _steps_of(tally)
    records = tally.supports == "records"
    sd = law.sd
    shared = records and not lockstep and any(n > 1 for n in sized)
    statistical = 1 if tally.supports == "mean" else 2 + shared + 2 * (records and sd > 0)
    each = false_alarm / statistical
    checks = [_lengths(tally) if tally.supports != "mean" else _mean_inside(tally)]
    if tally.drafts is not None:
        drafts, tokens = tally.drafts
        checks.append(check("K drafts each", tokens == k * drafts, f"{tokens} draft tokens over {drafts} drafts",
                            f"{tokens} draft tokens over {drafts} drafts, but K = {k} each gives {k * drafts}: "
                            "some steps drafted fewer, which the law does not cover", drafts=drafts, tokens=tokens))
    if records and lockstep:
        checks.append(_one_length(law, tally.mixed))
    elif shared:
        checks.append(_own_draws(tally, law, sized, each))
    units, unit = _units(tally, lockstep)
    if records and sd > 0:
        checks.append(_drift(tally, groups, lockstep, each))
        checks.append(_serial(tally, groups, lockstep, own, each))
    if tally.supports == "mean":
        mean, n, rounding = tally.mean_only
    else:
        n, rounding = sum(units), 0.0
        mean = math.fsum((a + 1) * c for a, c in enumerate(units)) / n if n else math.nan
    largest = groups[k][3]
    interval = _interval(mean, n, sd, largest, k, rounding, each)
    found = shift(n, sd, largest, k, rounding, each, tally.supports != "mean")
    power = Power(found if found <= k else math.inf, n, unit)  # no shift of AL is larger than K
    checks.append(_mean(law, mean, interval, power.units, unit, tally.supports == "mean"))
    if tally.supports != "mean":
        checks.append(_distribution(tally, law, groups, units, unit, each))
    if any(c.name == "no serial dependence" and not c.passed for c in checks):
        checks = [_qualified(c) if c.name in ("mean", "distribution") and not c.passed else c for c in checks]
    cdf = [min(math.fsum(law.accepted[: a + 1]), 1.0) for a in range(k)]
    points = sum(0 < f < 1 for f in cdf)
    n = sum(units)
    band = tuple(statistics.band(n, f, points, each) if n else (f, f) for f in cdf)
    passed = all(c.passed for c in checks)
    fewer = sum(sum(c) for d, c in tally.counts.items() if d != k)
    fits = () if passed or tally.outside or fewer else tuple(
        f"{other.engine.title} at AL {other.length:g}" for other in candidates
        if judge(tally, other, false_alarm).passed)
    means = tuple((steps.base + i, steps.total[i] / steps.count[i], steps.count[i])
                  for i in range(steps.size) if steps.count[i]) if records else ()
    return Verdict(law, tally.records, len(sized), len(tally.requests), mean, interval, tuple(checks), fits,
                   tuple(tally.counts[k]), tally.outside, means, band,
                   statistics.dkw_epsilon(n, each) if n else 1.0, power, tally.supports, fewer)


def _steps_of(tally):
    """The number of records with K drafts in each step (a :class:`LogError` for a step with no
    record at all, inside a log of records)."""
    steps = tally.steps
    if tally.supports != "records":
        return []
    last = steps.size
    while last and not steps.seen[last - 1]:
        last -= 1
    for i in range(last):
        if not steps.seen[i]:
            raise LogError(f"step {steps.base + i} has no request (the log's steps run from {steps.base} to "
                           f"{steps.base + last - 1}: number the steps that decoded one after another)")
    return list(steps.n[:last])


def _units(tally, lockstep):
    """The counts of each length the mean and distribution judge, and what a unit is: the
    records with K drafts, or for a lockstep log of records, its steps (one draw each)."""
    k, steps = tally.k, tally.steps
    if tally.supports == "records" and lockstep and tally.mixed is None:
        counts = [0] * (k + 1)
        for i in range(steps.size):
            if steps.n[i]:
                counts[steps.first[i] - 1] += 1
        return counts, "steps (one draw each)"
    unit = {"records": "records", "counts": "steps counted", "mean": "steps averaged"}[tally.supports]
    return tally.counts[k], unit


def _lengths(tally):
    k = tally.k
    if not tally.outside:
        return check("lengths", True, f"every accept_length in 1..{k + 1}" + (
            " (or 1..drafted + 1)" if len(tally.counts) > 1 else ""), outside=0)
    line, length, d = tally.first_outside
    where = f"line {line}: " if line is not None else ""
    return check("lengths", False, f"{tally.outside} lengths outside 1..{d + 1} ({'K' if d == k else 'drafted'}={d}): "
                 f"{where}accept_length={length}", outside=tally.outside)


def _mean_inside(tally):
    mean, k = tally.mean_only[0], tally.k
    return check("lengths", 1 <= mean <= k + 1, f"the mean length {mean:g} lies in 1..{k + 1}",
                 f"the mean length {mean:g} lies outside 1..{k + 1} (K={k})", outside=0)


def _one_length(law, mixed):
    """A lockstep law: no step with two lengths (no statistics)."""
    if mixed is None:
        return check("one length per step", True, "every step's requests share one length")
    step, line, length, other_line, other = mixed
    if other_line is None:  # a log line's mean over the step's requests
        return check("one length per step", False,
                     f"line {line}: accept len {length} at step {step}, a mean over requests of different lengths, "
                     f"but {law.engine.title} draws one length for the whole batch: these requests drew their own")
    return check("one length per step", False,
                 f"step {step} has lengths {sorted({length, other})} (lines {line}, {other_line}), but "
                 f"{law.engine.title} draws one length for the whole batch: these requests drew their own")


def _own_draws(tally, law, sized, false_alarm):
    """An independent law: no more steps whose requests all agree than the law's independent
    draws allow (step ``s`` of ``N_s`` requests agrees with chance ``sum_a P(a)^N_s``), and more
    than the shares of the step's stretch of ``BLOCK`` steps allow, before it is called lockstep."""
    steps = tally.steps
    shared = [i for i, n in enumerate(sized) if n > 1]
    agree = sum(1 for i in shared if not steps.mixed[i])
    chances = [math.fsum(p ** sized[i] for p in law.accepted) for i in shared]
    limit, expected = statistics.count_limit(chances, false_alarm), math.fsum(chances)
    local = []
    for start in range(0, len(sized), BLOCK):
        block = range(start, min(start + BLOCK, len(sized)))
        counts = [sum(column[i] for i in block) for column in steps.lengths]
        shares = [c / max(sum(counts), 1) for c in counts]
        local += [math.fsum(p ** sized[i] for p in shares) for i in block if sized[i] > 1]
    alike = statistics.count_limit(local, false_alarm) if local else 0
    lockstep = agree > limit and agree > alike
    return check("requests draw their own", not lockstep,
                 f"{agree} of {len(shared)} steps with two requests or more have every request at one length "
                 f"(about {expected:.1f} expected, at most {limit} allowed, {alike} by the run's own shares)",
                 f"in {agree} of {len(shared)} steps every request has the same length, but independent draws give "
                 f"about {expected:.1f} such steps (at most {limit}, and at most {alike} by the shares of each "
                 f"stretch of {BLOCK} steps): the requests move in lockstep (one draw per batch), but "
                 f"{law.engine.title} draws per request", agree=agree, steps=len(shared), expected=expected,
                 limit=limit, alike=alike)


SPLITS = (("the first half", "the second", 0, 2), *((f"quarter {q + 1}", "the rest", q, 4) for q in range(4)))


def _drift(tally, groups, lockstep, false_alarm):
    """The mean deviation from the law's mean in each half (and each quarter against the rest),
    at the law's variance and at the spread of the steps' own sums."""
    k, steps = tally.k, tally.steps
    _, mean, variance, _ = groups[k]
    if lockstep:
        xs = [steps.first[i] - mean for i in range(steps.size) if steps.n[i]]
        ns, vs = [1] * len(xs), [variance] * len(xs)
    else:
        kept = [i for i in range(steps.size) if steps.count[i]]
        ns = [steps.count[i] for i in kept]
        xs, vs = [steps.dev[i] for i in kept], [steps.var[i] for i in kept]
    each = false_alarm / len(SPLITS)
    bound = max(entry[3] for entry in groups.values())
    worst = None
    for first, second, part, parts in SPLITS:
        a = range(len(xs) * part // parts, len(xs) * (part + 1) // parts)
        if not a or len(a) == len(xs):
            continue
        b = [i for i in range(len(xs)) if i not in a] if parts > 2 else range(a.stop, len(xs))
        na, nb = sum(ns[i] for i in a), sum(ns[i] for i in b)
        gap = math.fsum(xs[i] for i in a) / na - math.fsum(xs[i] for i in b) / nb
        variance = math.fsum(vs[i] for i in a) / na ** 2 + math.fsum(vs[i] for i in b) / nb ** 2
        exact = statistics.bernstein_limit(variance, bound / min(na, nb), each)
        spread = _spread([xs[i] for i in a], na) + _spread([xs[i] for i in b], nb)
        robust = statistics.bernstein_limit(spread, bound / min(na, nb), each)
        score = abs(gap) / exact
        if worst is None or score > worst[0]:
            worst = (score, first, second, gap, exact, robust)
    if worst is None:
        return check("no drift", True, "too few steps to split", gap=0.0, limit=math.inf)
    _, first, second, gap, exact, robust = worst
    drifted = abs(gap) > exact and abs(gap) > robust
    said = (f"the mean length of {first} differs from {second}'s by {gap:+.4f} (at most {exact:.4f} allowed"
            + (f"; beyond it, but within the {robust:.4f} the swing of the run's own steps allows)"
               if abs(gap) > exact and not drifted else ")"))
    return check("no drift", not drifted, said,
                 f"the mean length of {first} differs from {second}'s by {gap:+.4f}, but a run drawn from the law "
                 f"keeps it within {exact:.4f}: the acceptance length drifts within the run", gap=gap, limit=exact)


def _spread(sums, n):
    """The variance, over ``n`` records, of a part's mean, from its steps' own sums."""
    if len(sums) < 2:
        return math.inf
    mean = math.fsum(sums) / len(sums)
    return math.fsum((x - mean) ** 2 for x in sums) * len(sums) / (len(sums) - 1) / n ** 2


def _serial(tally, groups, lockstep, own, false_alarm):
    """A request's consecutive lengths, paired, as deviations from the law's mean (exact), and
    from their steps' means (robust to drift and to a lockstep run)."""
    k, steps = tally.k, tally.steps
    _, mean, variance, largest = groups[k]
    if lockstep:  # one series: the steps' lengths
        us = [steps.first[i] for i in range(steps.size) if steps.n[i]]
        pairs = [(us[j], us[j + 1]) for j in range(0, len(us) - 1, 2)]
        total = math.fsum((a - mean) * (b - mean) for a, b in pairs)
        limit = statistics.bernstein_limit(len(pairs) * variance ** 2, largest ** 2, false_alarm)
        quarters = [us[len(us) * q // 4: len(us) * (q + 1) // 4] for q in range(4)]
        centred = []
        for part in quarters:
            m = math.fsum(part) / len(part) if part else mean
            centred += [(part[j] - m) * (part[j + 1] - m) for j in range(0, len(part) - 1, 2)]
        robust, count = math.fsum(centred), len(pairs)
    else:
        pairs = sum(steps.pairs)
        total, var_sum, bound, count = tally.serial if own else (0.0, 0.0, 0.0, 0)  # the pairs of fewer drafts
        total += math.fsum(steps.pab[i] - mean * (steps.pa[i] + steps.pb[i]) + mean * mean * steps.pairs[i]
                           for i in range(steps.size) if steps.pairs[i])
        var_sum += pairs * variance ** 2
        limit = statistics.bernstein_limit(var_sum, max(bound, largest ** 2), false_alarm)
        robust, count = 0.0, count + pairs
        for i in range(steps.size - 1):
            if steps.pairs[i]:
                a, ca = _centre(steps, i, mean)
                b, cb = _centre(steps, i + 1, mean)
                robust += ca * cb * (steps.pab[i] - b * steps.pa[i] - a * steps.pb[i] + a * b * steps.pairs[i])
    if not count:
        return check("no serial dependence", True, "no request has two consecutive steps", total=0.0, limit=math.inf)
    dependent = abs(total) > limit and abs(robust) > limit and (total > 0) == (robust > 0)
    sign = "alike" if total > 0 else "unlike"
    said = (f"{count} pairs of a request's consecutive lengths: their deviations from the law's mean multiply to "
            f"{total:+.1f} (within ±{limit:.1f} allowed"
            + (f"; beyond it, but {robust:+.1f} from their steps' means, as their steps move together)"
               if abs(total) > limit and not dependent else ")"))
    return check("no serial dependence", not dependent, said,
                 f"a request's consecutive lengths are {sign}: over {count} pairs their deviations from the mean "
                 f"multiply to {total:+.1f} ({robust:+.1f} from their steps' means), but independent draws keep it "
                 f"within ±{limit:.1f}: a request's length depends on its earlier lengths", total=total, limit=limit,
                 robust=robust, pairs=count)


def _centre(steps, i, mean):
    """``(centre, scale)`` of step ``i``'s records: the leave-one-out mean of its records, as the
    step mean ``m`` and the factor ``n / (n - 1)``; the law's mean for a step of one record."""
    n = steps.count[i]
    return (steps.total[i] / n, n / (n - 1)) if n > 1 else (mean, 1.0)


def _interval(mean, n, sd, largest, k, rounding, false_alarm):
    """The interval around the run's mean that holds the law's mean but in ``false_alarm`` of
    runs: Bernstein at the law's variance (each length at most ``largest`` from the law's mean),
    widened by the rounding of a printed mean."""
    if not n:
        return 1.0, float(k + 1)
    half = statistics.bernstein_limit(n * sd * sd, largest, false_alarm) / n + rounding
    return max(1.0, mean - half), min(float(k + 1), mean + half)


def shift(n, sd, largest, k, rounding, false_alarm, counted=True):
    """The smallest shift of AL the mean check fails in :data:`POWER` of runs of ``n`` draws:
    the interval's half-width plus the draws' own deviation at ``1 - POWER`` (Bernstein one-sided,
    at the law's spread). For a law of one length (sd 0) whose draws are ``counted``, a shift puts
    ``shift / K`` of the draws at a length it never gives, which ``n`` draws show with chance
    ``1 - (1 - shift / K)^n``."""
    if not n:
        return math.inf
    variance = n * sd * sd
    found = (statistics.bernstein_limit(variance, largest, false_alarm)
             + statistics.bernstein_limit(variance, largest, 2 * (1 - POWER))) / n + 2 * rounding
    if sd == 0 and counted:
        found = min(found, k * (1 - (1 - POWER) ** (1 / n)))
    return found


def _mean(law, mean, interval, units, unit, alone):
    """The law's mean inside the run's interval; a run a whole token off says which unit slip
    would explain it."""
    low, high = interval
    hint = ""
    if low <= law.mean + 1 <= high:
        hint = ": that is AL + 1, as when the knob is given AL where it counts accepted drafts (AL - 1)"
    elif low <= law.mean - 1 <= high:
        hint = ": that is AL - 1, as when the knob is given AL - 1 where it takes AL"
    how = " (the law's spread, and the printed rounding)" if alone else ""
    return check("mean", low <= law.mean <= high,
                 f"observed AL {mean:.4f}, interval [{low:.4f}, {high:.4f}] over {units} {unit}{how}; the law delivers "
                 f"{law.mean:.4f}",
                 f"observed AL {mean:.4f} [{low:.4f}, {high:.4f}], but {law.engine.title}'s law at AL "
                 f"{law.length:g} delivers {law.mean:.4f}{hint}", observed=mean, low=low, high=high,
                 expected=law.mean)


def _distribution(tally, law, laws_of, units, unit, false_alarm):
    """The CDF test, of the K-draft units and of each group of records with fewer drafts (its
    own walk); a failure names a length the law never gives, or the point furthest out and
    whether the run's spread is wider or narrower than the law's."""
    k = tally.k
    groups = [(k, units)] + [(d, c) for d, c in sorted(tally.counts.items()) if d != k and sum(c)]
    each = false_alarm / len(groups)
    tests = [(d, counts, statistics.counts_test(counts, list(laws_of[d][0]), each)) for d, counts in groups]
    d, counts, test = next((t for t in tests if not t[2].passed), tests[0])
    n = sum(counts)
    among = "" if d == k else f" among the {n} records with drafted={d}"
    if test.expected == 0.0 and not test.passed:
        possible = [a + 1 for a, p in enumerate(laws_of[d][0]) if p > 0]
        said = (f"accept_length={test.k} on {counts[test.k - 1]} {unit if d == k else 'records'}{among}, which "
                f"{law.engine.title}'s law at AL {law.length:g} never gives (only {possible})")
    else:
        mean = math.fsum((a + 1) * c for a, c in enumerate(counts)) / n if n else math.nan
        sd = math.sqrt(math.fsum(c * (a + 1 - mean) ** 2 for a, c in enumerate(counts)) / n) if n else math.nan
        law_sd = math.sqrt(laws_of[d][2])
        spread = "" if test.passed or abs(sd - law_sd) < 0.05 else \
            f"; its spread (sd {sd:.3f}) is {'wider' if sd > law_sd else 'narrower'} than the law's ({law_sd:.3f})"
        said = (f"P(accept_length <= {test.k}) = {test.observed:.4f}{among}, {'within' if test.passed else 'outside'} "
                f"{test.low:.4f}..{test.high:.4f} around the law's {test.expected:.4f}{spread}")
    if test.passed and len(groups) > 1:
        said += f" (and the {sum(sum(c) for _, c in groups[1:])} records with fewer drafts within their walks' bands)"
    return check("distribution", test.passed, said, observed=test.observed, expected=test.expected, low=test.low,
                 high=test.high, at=test.k, drafted=d)


def _qualified(c):
    return Check(c.name, c.passed, c.said, c.difference + " (a band that assumes independent draws, which the serial "
                 "check refutes)", c.data)
