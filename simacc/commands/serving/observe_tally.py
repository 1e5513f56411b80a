"""What ``simacc observe`` keeps of a log (CONTRACT.md §28): its records gathered one at a time
(or a block at once, by numpy), or given whole as a histogram or a mean, in memory that grows
with the steps and the requests, never with the records: a step keeps its counts, its first
length and whether another followed, its sums and the sums of the pairs of a request's
consecutive records that start there, in compact arrays (about 100 bytes); a request its last
record. :mod:`simacc.commands.serving.observe_checks` judges what is kept.
"""

import math
from array import array

from simacc.contract import laws

WALKS = ("vllm", "atom", "atom-1850", "llama.cpp")  # laws that are a walk over the drafts (§15.1)


class LogError(ValueError):
    """An unreadable LOG: one line that names the line of the file at fault."""


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
