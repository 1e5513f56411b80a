"""The verdict of ``simacc observe`` (CONTRACT.md §28): what a log's records are gathered into,
one record at a time, and the checks judged on that.

Memory goes per step and per request, never per record (a 10^7-record log passes in a few
tens of MB): a step keeps its count, first length, sums and the sums of the pairs that start
there in compact arrays; a request its last record. Every statistical check is exact under the
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
from array import array
from dataclasses import dataclass

from simacc.contract import laws
from simacc.harness.judging import statistics

FALSE_ALARM = statistics.FALSE_ALARM  # for the whole verdict, split evenly over its statistical checks
POWER = 0.99  # the share of runs the stated shift fails
SHIFT = 0.1  # the shift of AL a conclusive verdict must see
BLOCK = 64  # steps per stretch whose own shares the joint law's robust form uses
WALKS = ("vllm", "atom", "atom-1850", "llama.cpp")  # laws that are a walk over the drafts (§15.1)


class LogError(ValueError):
    """An unreadable LOG: one line that names the line of the file at fault."""


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


def drafted_law(law, drafted):
    """``P(accepted = a)``, ``a = 0..drafted``: the walk of ``law`` over ``drafted`` drafts (its
    tail from ``drafted`` on lumped there)."""
    return (*law.accepted[:drafted], math.fsum(law.accepted[drafted:]))


class Steps:
    """Compact per-step arrays, indexed from the lowest step seen: what every record adds
    (``seen``, ``total``, the count of each length among those of K drafts), what only some do
    (a length outside the law's range, fewer drafts), the first K-draft length and whether
    another followed, and the sums of the pairs of K-draft records that start at the step."""

    FIELDS = {"seen": "l", "out": "l", "first": "b", "line": "q", "mixed": "b", "total": "q",
              "short_mean": "d", "short_var": "d", "pairs": "l", "pa": "q", "pb": "q", "pab": "q"}

    def __init__(self, lengths):
        self.base = None
        self.size = 0
        self.fields = dict(self.FIELDS, **{f"length{a}": "l" for a in range(lengths)})
        for name, code in self.fields.items():
            setattr(self, name, array(code))
        self.lengths = [getattr(self, f"length{a}") for a in range(lengths)]  # records with K drafts of each length

    def slot(self, step, records):
        """The index of ``step``, the arrays grown to hold it (``records``: those read so far,
        which bound how far a log of consecutive steps can reach)."""
        if self.base is None:
            self.base = step
        i = step - self.base
        if i < 0:
            if -i > records + (1 << 20):
                raise LogError(f"step {step} lies {-i} steps before step {self.base}: number the steps that decoded "
                               "one after another")
            for name, code in self.fields.items():
                setattr(self, name, array(code, bytes(array(code, [0]).itemsize * -i)) + getattr(self, name))
            self.lengths = [getattr(self, f"length{a}") for a in range(len(self.lengths))]
            self.base, self.size, i = step, self.size - i, 0
        elif i >= self.size:
            if i > 4 * records + (1 << 20):
                raise LogError(f"step {step} lies {i} steps after step {self.base}: number the steps that decoded "
                               "one after another")
            grow = max(i + 1 - self.size, self.size // 2, 1024)
            for name, code in self.fields.items():
                getattr(self, name).frombytes(bytes(array(code, [0]).itemsize * grow))
            self.size += grow
        return i

    def derive(self, mean, variance):
        """``n`` (records of K drafts), ``count`` (records inside the law's range), and under the
        law of K drafts of ``mean`` and ``variance`` (the groups of fewer drafts at their own),
        ``dev`` (their summed deviation from their means) and ``var`` (their summed variance)."""
        import numpy as np

        lengths = sum(np.frombuffer(column, dtype=column.typecode) for column in self.lengths)
        count = np.frombuffer(self.seen, dtype="l") - np.frombuffer(self.out, dtype="l")
        self.n, self.count = lengths.tolist(), count.tolist()
        dev = np.frombuffer(self.total, dtype="q") - lengths * mean - np.frombuffer(self.short_mean, dtype="d")
        var = lengths * variance + np.frombuffer(self.short_var, dtype="d")
        self.dev, self.var = dev.tolist(), var.tolist()


class Tally:
    """What the checks need of a log, gathered record by record (:meth:`add`), or given whole as
    a histogram (:meth:`add_counts`) or a mean (:meth:`set_mean`); ``supports`` says which
    checks the input can carry."""

    def __init__(self, law):
        self.law = law
        self.k = law.steps
        self.walk = law.engine.id in WALKS
        self.laws = {}  # drafted -> (P(accepted = a), mean length, variance of a length, largest deviation)
        self.counts = {}  # drafted -> records of each length 1..drafted + 1
        self.outside = 0
        self.first_outside = None  # (line, length, drafted)
        self.records = 0
        self.steps = Steps(self.k + 1)
        self.requests = {}  # request -> [step, line, length, drafted, paired]
        self.mixed = None  # (step, line of its first record, its length, line, other length)
        self.serial = [0.0, 0.0, 0.0, 0]  # pairs with fewer drafts: products' sum, its variance, largest term, count
        self.supports = "records"  # or "counts" (distribution and mean) or "mean"
        self.mean_only = None  # (mean, units, rounding) for "mean"
        self.drafts = None  # (drafts, draft tokens) where the input counts them
        self._of(self.k)

    def _of(self, drafted):
        found = self.laws.get(drafted)
        if found is None:
            accepted = self.law.accepted if drafted == self.k else drafted_law(self.law, drafted)
            mean, sd = laws.spread(accepted)
            found = self.laws[drafted] = (accepted, mean, sd * sd, max(mean - 1, drafted + 1 - mean))
            self.counts[drafted] = [0] * (drafted + 1)
        return found

    def add(self, line, step, request, length, drafted=None):
        """One record; a :class:`LogError` for a request out of step order (or twice in a step)
        or a draft count the law has no walk for. The path of a record of K drafts is kept short:
        it runs once per record."""
        k = self.k
        d = k if drafted is None else drafted
        if d != k and (d > k or not self.walk):
            title = self.law.engine.title
            why = f"more than K = {k}" if d > k else \
                f"{title}'s law over fewer drafts than K is not a walk simacc knows: leave such steps out"
            raise LogError(f"drafted={d}, {why}")
        self.records += 1
        steps = self.steps
        i = step - steps.base if steps.base is not None else -1
        if not 0 <= i < steps.size:
            i = steps.slot(step, self.records)
        steps.seen[i] += 1
        previous = self.requests.get(request)
        if previous is not None and previous[0] >= step:
            if previous[0] == step:
                raise LogError(f"request {_name(request)} twice in step {step} (first on line {previous[1]})")
            raise LogError(f"request {_name(request)} at step {step} after its step {previous[0]} (line "
                           f"{previous[1]}): a request's records must come in step order")
        if not 0 < length <= d + 1:
            self.outside += 1
            steps.out[i] += 1
            if self.first_outside is None:
                self.first_outside = (line, length, d)
            self.requests[request] = [step, line, None, d, True]
            return
        if d != k and d not in self.laws:
            self._of(d)
        self.counts[d][length - 1] += 1
        steps.total[i] += length
        if d == k:
            steps.lengths[length - 1][i] += 1
            first = steps.first[i]
            if not first:
                steps.first[i], steps.line[i] = length, line
            elif first != length and not steps.mixed[i]:
                steps.mixed[i] = 1
                if self.mixed is None or step < self.mixed[0]:
                    self.mixed = (step, steps.line[i], first, line, length)
        else:
            _, mean, variance, _ = self.laws[d]
            steps.short_mean[i] += mean - self.laws[k][1]
            steps.short_var[i] += variance - self.laws[k][2]
        paired = False
        if previous is not None and previous[0] == step - 1 and not previous[4] and previous[2] is not None:
            before, their = previous[2], previous[3]
            if their == k and d == k:
                j = i - 1
                steps.pairs[j] += 1
                steps.pa[j] += before
                steps.pb[j] += length
                steps.pab[j] += before * length
            else:  # a pair with fewer drafts: its exact terms, at each record's own walk
                a, b = self.laws[their], self.laws[d]
                self.serial[0] += (before - a[1]) * (length - b[1])
                self.serial[1] += a[2] * b[2]
                self.serial[2] = max(self.serial[2], a[3] * b[3])
                self.serial[3] += 1
            paired = True
        if previous is None:
            self.requests[request] = [step, line, length, d, paired]
        else:
            previous[0], previous[1], previous[2], previous[3], previous[4] = step, line, length, d, paired

    def add_block(self, lines, steps, requests, lengths):
        """Records of K drafts given as numpy arrays (line numbers, steps, integer requests,
        lengths), in file order: :meth:`add`'s sums for a block at once. False, with nothing
        changed, where a record needs :meth:`add`'s own care (a length outside the law's range, a
        request out of step order or twice in a step, a step far off): its error names the line."""
        import numpy as np

        k, tally_steps, n = self.k, self.steps, len(lines)
        if lengths.min() < 1 or lengths.max() > k + 1:
            return False
        order = np.lexsort((np.arange(n), requests))  # by request, then as they came
        ordered_requests, ordered_steps = requests[order], steps[order]
        same = ordered_requests[1:] == ordered_requests[:-1]
        if np.any(same & (ordered_steps[1:] <= ordered_steps[:-1])):
            return False
        starts = np.flatnonzero(np.r_[True, ~same])  # each request's first record here, in order
        carried = [self.requests.get(r) for r in ordered_requests[starts].tolist()]
        if any(c is not None and c[0] >= s for c, s in zip(carried, ordered_steps[starts].tolist())):
            return False
        for c, s in zip(carried, ordered_steps[starts].tolist()):
            if c is not None and c[0] == s - 1 and not c[4] and c[2] is not None and c[3] != k:
                return False  # a pair with a record of fewer drafts: add's exact terms
        low, high = int(steps.min()), int(steps.max())
        base, reach = tally_steps.base, self.records + n
        if base is not None and (base - low > reach + (1 << 20) or high - base > 4 * reach + (1 << 20)):
            return False
        self.records += n
        tally_steps.slot(low, self.records)
        tally_steps.slot(high, self.records)
        at = steps - tally_steps.base
        first_at = max(int(at.min()) - 1, 0)  # and the step before: a pair may start there
        span = int(at.max()) - first_at + 1
        view = {name: np.frombuffer(getattr(tally_steps, name), dtype=code)[first_at:first_at + span]
                for name, code in tally_steps.fields.items()}
        local = at - first_at
        view["seen"] += np.bincount(local, minlength=span)
        view["total"] += np.bincount(local, weights=lengths, minlength=span).astype(np.int64)
        by_length = [np.bincount(local[lengths == a + 1], minlength=span) for a in range(k + 1)]
        for a, counted in enumerate(by_length):
            view[f"length{a}"] += counted
            self.counts[k][a] += int(counted.sum())
        here, first_index = np.unique(local, return_index=True)
        old = view["first"][here].astype(np.int64)
        present = np.stack(by_length)[:, here]  # (lengths, steps here)
        kinds = (present > 0).sum(axis=0)
        own = np.where(old > 0, old, lengths[first_index])
        others = present.sum(axis=0) - present[own - 1, np.arange(len(here))]
        fresh = old == 0
        view["first"][here[fresh]] = lengths[first_index[fresh]]
        view["line"][here[fresh]] = lines[first_index[fresh]]
        mixing = (others > 0) & (kinds > 0) & (view["mixed"][here] == 0)
        if mixing.any():
            view["mixed"][here[mixing]] = 1
            i = int(here[mixing][0])
            step = tally_steps.base + first_at + i
            if self.mixed is None or step < self.mixed[0]:
                length = int(view["first"][i])
                other = int(np.flatnonzero((local == i) & (lengths != length))[0])
                self.mixed = (step, int(view["line"][i]), length, int(lines[other]), int(lengths[other]))
        ordered_lengths = lengths[order]
        follows = np.r_[False, same & (ordered_steps[1:] == ordered_steps[:-1] + 1)]
        before = np.r_[0, ordered_lengths[:-1]]
        offset = np.zeros(n, dtype=np.int64)
        for start, c, s in zip(starts.tolist(), carried, ordered_steps[starts].tolist()):
            if c is not None and c[0] == s - 1 and c[2] is not None:
                follows[start], before[start] = True, c[2]
                offset[start] = 0 if c[4] else 1
        run_start = ~follows | np.isin(np.arange(n), starts)
        begun = np.maximum.accumulate(np.where(run_start, np.arange(n), 0))
        paired = follows & ((np.arange(n) - begun + offset[begun]) % 2 == 1)
        if paired.any():
            where = ordered_steps[paired] - 1 - tally_steps.base - first_at
            view["pairs"] += np.bincount(where, minlength=span)
            for name, values in (("pa", before[paired]), ("pb", ordered_lengths[paired]),
                                 ("pab", before[paired] * ordered_lengths[paired])):
                view[name] += np.bincount(where, weights=values, minlength=span).astype(np.int64)
        del view
        ends = np.r_[starts[1:], n] - 1
        ordered_lines = lines[order]
        for r, j in zip(ordered_requests[ends].tolist(), ends.tolist()):
            self.requests[r] = [int(ordered_steps[j]), int(ordered_lines[j]), int(ordered_lengths[j]), k,
                                bool(paired[j])]
        return True

    def add_mean(self, line, step, printed):
        """A step whose one line is a mean over its requests, ``printed`` (not a whole length):
        under a lockstep law its requests drew more than one length."""
        self.records += 1
        self.steps.seen[self.steps.slot(step, self.records)] += 1
        if self.mixed is None:
            self.mixed = (step, line, printed, None, None)

    def add_counts(self, counts):
        """A histogram: ``counts[a]``, the steps that accepted ``a`` drafts (lengths ``a + 1``)."""
        self.supports = "counts"
        for a, c in enumerate(counts):
            if a > self.k:
                if c:
                    self.outside += c
                    self.first_outside = self.first_outside or (None, a + 1, self.k)
                continue
            self.counts[self.k][a] += c
        self.records += sum(counts)

    def set_mean(self, mean, units, rounding):
        """A mean length over ``units`` draws, printed to within ``rounding``."""
        self.supports = "mean"
        self.mean_only = (mean, units, rounding)
        self.records = units


def _name(request):
    return f'"{request}"' if isinstance(request, str) else str(request)


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
