"""``simacc laws --html`` and ``simacc observe --html``: each as one self-contained page (the
style of :mod:`simacc.commands.html_pages`, each plot a PNG in a data URI, matplotlib through its
object API; without matplotlib, the text charts the terminal would show).

The laws page draws every engine's law of one request's length, a panel each, and the spread of a
step's mean over the batch. The observe page draws the run against the law: the share of each
length; the CDF with the band the verdict allowed (the per-point Chernoff band of
:mod:`simacc.harness.judging.statistics`, the one judged) and, dashed, the DKW band at the same
rate (wider near 0 and 1, a little narrower near 1/2); and each step's mean length against the
law's mean and two standard deviations of a step's mean (a lockstep run swings by one request's,
an independent one by ``1 / sqrt(batch)`` of it).
"""

import base64
import html
import io
import math

from simacc.commands import html_pages
from simacc.contract import laws
from simacc.harness.judging.distributions import Distribution

RED, GREY, DARK = html_pages.RED, html_pages.GREY, "#3a3a3c"


def _e(text):
    return html.escape(str(text), quote=True)


def _page(title, body, summary="", colour=""):
    said = f"<p class='summary {colour}'>{_e(summary)}</p>\n" if summary else ""
    full = f"{title}: {summary}" if summary else title
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{_e(full)}</title>"
            f"<style>{html_pages.STYLE}</style></head><body>\n<h1>{_e(title)}</h1>\n{said}{body}\n</body></html>\n")


def _png(fig):
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return base64.b64encode(out.getvalue()).decode("ascii")


def _image(alt, png):
    return f"<img alt='{_e(alt)}' src='data:image/png;base64,{png}'>"


def _no_plots(text):
    return f"<pre>{_e(text)}</pre><p class=note>(pip install matplotlib for a plot here)</p>"


def laws_page(table, length, steps, batch, text):
    """The page of ``simacc laws``: a plot of the laws, and ``text``, the table as printed."""
    shown = [r for r in table if not r.law.cannot]
    if html_pages.plots_available():
        picture = _image(f"each engine's law at AL {length:g}, K = {steps}", plot_laws(shown, steps, batch))
    else:
        picture = _no_plots("\n".join(
            f"{r.law.engine.title:<24} " + " ".join(f"{p:5.3f}" for p in r.accepted) for r in shown))
    body = (f"<h2>The laws</h2>\n{picture}\n<h2>The table</h2>\n<pre>{_e(text)}"
            "</pre>")
    return _page(f"simacc laws: AL {length:g}, K = {steps}, {batch} requests per step", body)


def plot_laws(rows, steps, batch):
    """A panel per engine: the share of each acceptance length, the mean marked; and a panel of
    the spread of a step's mean over ``batch`` requests."""
    from matplotlib.figure import Figure

    columns = 4
    panels = len(rows) + 1
    fig = Figure(figsize=(12, 2.6 * math.ceil(panels / columns)), dpi=100, layout="constrained")
    axes = fig.subplots(math.ceil(panels / columns), columns, squeeze=False).flatten()
    lengths = list(range(1, steps + 2))
    for ax, r in zip(axes, rows):
        ax.bar(lengths, r.accepted, color=RED if r.law.engine.joint != laws.INDEPENDENT else GREY, width=0.7)
        ax.axvline(r.mean, color=DARK, linewidth=1)
        ax.set(xticks=lengths, ylim=(0, 1.05), xlabel="acceptance length",
               title=f"{r.law.engine.title}\nmean {r.mean:.4g}, sd {r.sd:.3f}, {laws.JOINT[r.law.engine.joint]}")
        ax.title.set_fontsize("small")
    spread = axes[len(rows)]
    names = [r.law.engine.title for r in rows]
    spread.barh(names, [r.step_mean_sd(batch) for r in rows],
                color=[RED if r.law.engine.joint != laws.INDEPENDENT else GREY for r in rows])
    spread.invert_yaxis()
    spread.tick_params(labelsize="x-small")
    spread.set(title=f"sd of a step's mean over {batch} requests\n(red: lockstep or fixed)", xlabel="tokens")
    spread.title.set_fontsize("small")
    for ax in axes[panels:]:
        ax.set_visible(False)
    return _png(fig)


def observe_page(verdict, name, text):
    """The page of ``simacc observe``: the checks, the run against the law, and ``text``, the
    verdict as printed."""
    said = {"pass": "matches", "fail": "does not match", "inconclusive": "is inconclusive against"}[verdict.status]
    summary = f"{said} the law of {verdict.law.engine.title} at AL {verdict.law.length:g}, K = {verdict.law.steps}"
    if verdict.supports == "mean":
        picture = "<p class=note>(a mean alone: nothing to draw)</p>"
    elif html_pages.plots_available():
        picture = _image("the run against the law", plot_run(verdict))
    else:
        labels = tuple(str(a) for a in range(1, verdict.law.steps + 2))
        low, high = zip(*verdict.band, (1.0, 1.0))  # the CDF at the longest length is 1
        chart = Distribution("accept_length", labels, verdict.counts, verdict.law.accepted, low, high).chart()
        picture = _no_plots("\n".join(chart) + "\n(the band drawn: the per-point Chernoff band the verdict judged)")
    rows = "".join(f"<tr><td class={'green' if c.passed else 'red'}>{'pass' if c.passed else 'FAIL'}</td>"
                   f"<td>{_e(c.name)}</td><td>{_e(c.said)}</td></tr>" for c in verdict.checks)
    body = (f"<table class=verdict>{rows}</table>\n{picture}\n<h2>The verdict</h2>\n<pre>{_e(text)}"
            "</pre>")
    colour = {"pass": "green", "fail": "red", "inconclusive": "yellow"}[verdict.status]
    return _page(f"simacc observe {name}", body, summary, colour)


def plot_run(verdict):
    """Three panels: the share of each length, the run's and the law's; the CDFs with the
    Chernoff band judged and the DKW band; each step's mean length against the law's."""
    from matplotlib.figure import Figure

    law = verdict.law
    x = list(range(1, law.steps + 2))
    total = max(sum(verdict.counts), 1)
    shares = [c / total for c in verdict.counts]
    fig = Figure(figsize=(13 if verdict.step_means else 9, 3.6), dpi=100, layout="constrained")
    share, cdf, *steps = fig.subplots(1, 3 if verdict.step_means else 2)  # a histogram has no steps
    share.bar([i - 0.2 for i in x], shares, width=0.4, color=RED, label=f"the run ({total} records)")
    share.bar([i + 0.2 for i in x], law.accepted, width=0.4, color=GREY, label="the law")
    share.set(xticks=x, xlabel="acceptance length", ylabel="share", ylim=(0, max([*shares, *law.accepted]) * 1.3),
              title="each length")
    share.legend(frameon=False, fontsize="small", loc="upper center", ncols=2)
    points = x[:-1]
    observed = [sum(shares[: i + 1]) for i in range(len(points))]
    expected = [sum(law.accepted[: i + 1]) for i in range(len(points))]
    low, high = zip(*verdict.band) if verdict.band else ((), ())
    cdf.bar(points, [h - lo for h, lo in zip(high, low)], bottom=low, width=0.5, color=GREY, alpha=0.35,
            label="band judged (Chernoff)")
    cdf.hlines([min(1, e + verdict.dkw) for e in expected], [p - 0.3 for p in points], [p + 0.3 for p in points],
               color=DARK, linestyles="dashed", linewidth=0.8, label=f"DKW band (±{verdict.dkw:.3f})")
    cdf.hlines([max(0, e - verdict.dkw) for e in expected], [p - 0.3 for p in points], [p + 0.3 for p in points],
               color=DARK, linestyles="dashed", linewidth=0.8)
    cdf.hlines(expected, [p - 0.25 for p in points], [p + 0.25 for p in points], color=DARK, label="the law")
    cdf.plot(points, observed, "o", color=RED, label="the run")
    cdf.set(xticks=points, xlabel="acceptance length L", ylabel="P(length <= L)", ylim=(-0.03, 1.08),
            title="CDF, and the band the verdict allows")
    cdf.legend(frameon=False, fontsize="small", loc="best")
    if not steps:
        return _png(fig)
    steps = steps[0]
    numbers, means, sizes = zip(*verdict.step_means)
    spread = [2 * laws.step_mean_sd(law.sd, law.engine.joint, n) for n in sizes]
    steps.fill_between(numbers, [law.mean - s for s in spread], [law.mean + s for s in spread], color=GREY,
                       alpha=0.35, step="mid", label="the law's mean ± 2 sd of a step's mean")
    steps.plot(numbers, means, ".", color=RED, markersize=3, label="the run")
    steps.axhline(law.mean, color=DARK, linewidth=1)
    steps.set(xlabel="step", ylabel="mean length over the step's requests", ylim=(0.8, law.steps + 1.4),
              title=f"each step ({laws.JOINT[law.engine.joint]} under the law)")
    steps.legend(frameon=False, fontsize="small", loc="upper center", ncols=2)
    return _png(fig)
