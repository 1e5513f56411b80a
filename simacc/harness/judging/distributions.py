"""What a failing distribution property hands the reports: how often each length came up against
the share the contract documents, and where the check let the observed CDF lie, as data.

A property attaches a :class:`Distribution` to the ``AssertionError`` it raises
(:func:`simacc.harness.judging.assertions.check`); the plugin puts it in the report's structured data
(``simacc_distribution``), the event stream carries it as JSON to ``simacc check``, and each
front end draws it: a text chart in the failure block and in ``simacc repro`` (:meth:`chart`),
a plot in the HTML report (:mod:`simacc.commands.checking.report_html`). Nothing is read back from the
message text.

The statistical properties compare CDFs (:func:`simacc.harness.judging.statistics.cdf_test`: at
each length the observed CDF must lie in a band around the documented one, narrower where the
documented CDF is near 0 or 1), so the record holds each length's band; the chart shows the
shares of each length (what a person reads at a glance) and, per length, the observed CDF and its
band (what the check judged).
"""

from dataclasses import dataclass

from simacc.harness.judging import statistics

BAR = 24  # characters of the longest bar in a chart
KEY = "simacc_distribution"  # its attribute on the error, and its name in a report's user_properties


@dataclass(frozen=True)
class Distribution:
    """``observed[i]`` draws gave the length ``labels[i]``, whose documented probability is
    ``expected[i]``; the check accepts an observed CDF in ``[low[i], high[i]]`` there (both the
    documented CDF where it is 0 or 1: no other length). ``what`` says what was counted.
    Lengths outside ``[1, W]`` are two buckets, ``<1`` and ``>W``, so the record stays small
    whatever an implementation returns."""

    what: str
    labels: tuple
    observed: tuple
    expected: tuple
    low: tuple
    high: tuple

    @classmethod
    def of(cls, lengths, probabilities, what, false_alarm=statistics.FALSE_ALARM):
        """From the lengths drawn and ``probabilities`` (``P(L = k)``, ``k = 1..W``), with the
        bands of the test at ``false_alarm``."""
        width = len(probabilities)
        below = sum(n < 1 for n in lengths)
        above = sum(n > width for n in lengths)
        labels = [str(k) for k in range(1, width + 1)]
        observed = [lengths.count(k) for k in range(1, width + 1)]
        expected = [float(p) for p in probabilities]
        bands = statistics.cdf_bands(len(lengths), expected, false_alarm)
        if below:
            labels, observed, expected = ["<1", *labels], [below, *observed], [0.0, *expected]
            bands = [(0.0, 0.0), *bands]
        if above:
            labels, observed, expected = [*labels, f">{width}"], [*observed, above], [*expected, 0.0]
            bands = [*bands, (1.0, 1.0)]
        return cls(what, tuple(labels), tuple(observed), tuple(expected), tuple(float(lo) for lo, _ in bands),
                   tuple(float(hi) for _, hi in bands))

    @property
    def runs(self):
        return sum(self.observed)

    def shares(self):
        """The observed share of each length."""
        return [n / self.runs if self.runs else 0.0 for n in self.observed]

    def cdfs(self):
        """``(observed CDF, expected CDF)`` at each length, in order."""
        observed, expected, o, e = [], [], 0.0, 0.0
        for share, p in zip(self.shares(), self.expected):
            o, e = o + share, e + p
            observed.append(o)
            expected.append(e)
        return observed, expected

    def outside(self):
        """Whether the observed CDF lies outside its band, at each length."""
        return [not lo - 1e-12 <= o <= hi + 1e-12 for o, lo, hi in zip(self.cdfs()[0], self.low, self.high)]

    def chart(self):
        """The text chart: a line per length with its observed and expected shares as bars
        (``#`` and ``=``, one scale), the observed CDF there and the band the check accepts
        for it, marked where it lies outside. It follows the failure's message, which says
        what was counted."""
        shares = self.shares()
        top = max([*shares, *self.expected, 1e-12])
        width = max(len("L"), *(len(label) for label in self.labels))
        lines = [f"L over {self.runs} draws, observed (#) against expected (=); the observed CDF must lie in its band",
                 f"  {'L':>{width}}  {'observed':<{BAR + 7}}  {'expected':<{BAR + 7}}  CDF    band"]
        observed_cdf, outside = self.cdfs()[0], self.outside()
        for i, (label, n, share, p) in enumerate(zip(self.labels, self.observed, shares, self.expected)):
            mark = "  <- outside the band" if outside[i] else ""
            lines.append(f"  {label:>{width}}  {_bar(share, top, '#', n)} {share:6.1%}  {_bar(p, top, '=')} {p:6.1%}  "
                         f"{observed_cdf[i]:.3f}  {_band(self.low[i], self.high[i])}{mark}")
        return lines

    def to_json(self):
        return {"what": self.what, "labels": list(self.labels), "observed": list(self.observed),
                "expected": list(self.expected), "low": list(self.low), "high": list(self.high)}

    @classmethod
    def from_json(cls, data):
        return cls(data["what"], tuple(data["labels"]), tuple(data["observed"]), tuple(data["expected"]),
                   tuple(float(v) for v in data["low"]), tuple(float(v) for v in data["high"]))


def _band(low, high):
    """A band as the chart prints it: ``0.801-0.917``, or the one value allowed."""
    return f"{low:.3f}" + ("" if high == low else f"-{high:.3f}")


def _bar(share, top, char, seen=0):
    """A bar of ``share`` on a scale where ``top`` fills :data:`BAR` characters; a length
    ``seen`` at all shows at least one character (a single draw of a forbidden length is
    the bug)."""
    n = round(share / top * BAR)
    return (char * (n or int(seen > 0))).ljust(BAR)


def attach(error, distribution):
    """``error`` (an exception about to be raised) carrying ``distribution``."""
    setattr(error, KEY, distribution)
    return error


def carried(error):
    """The :class:`Distribution` a failure carries, or None."""
    found = getattr(error, KEY, None)
    return found if isinstance(found, Distribution) else None


def report(report_, error):
    """(the plugin) Put the distribution ``error`` carries, if any, into a pytest report: as
    structured data for simacc's commands, and as a chart in the failure text (the terminal
    and JUnit show it)."""
    shown = carried(error)
    if shown is None:
        return
    from simacc.harness.model.recording import section

    report_.user_properties.append((KEY, shown.to_json()))
    section(report_, "\n".join(shown.chart()), "simacc distribution")
