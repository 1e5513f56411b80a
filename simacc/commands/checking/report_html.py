"""``simacc check --html REPORT``: the verdict as one self-contained HTML page, for a person
opening a CI artifact: the header, the summary, the verdict table, and each failure with its
message, case and replay command; a failing distribution property also gets a picture of what
it observed against what the contract documents, with the band the check allowed.

Self-contained means no network: the style is inline and each plot is a PNG in a data URI.
The plots need matplotlib (``pip install matplotlib``, or simacc's ``plots`` extra); without it
the page shows the text chart the terminal shows, and says how to get the plots. matplotlib is
used through its object API (a ``Figure`` and its own canvas), never pyplot, so nothing global
changes in this process.
"""

import base64
import html
import io

from simacc.commands import html_pages
from simacc.commands.checking import verdict
from simacc.harness.config.status import CHECKED, FAILED
from simacc.harness.judging.distributions import Distribution

RED, GREY = html_pages.RED, html_pages.GREY


def page(result):
    """The HTML page of a :class:`~simacc.commands.checking.verdict.Verdict`."""
    header = result.header
    title = f"simacc check {header.get('impl') or ''}".strip()
    colour = {"conformant": "green", "not conformant": "red"}.get(result.outcome, "yellow")
    parts = [f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{_e(title)}: {_e(result.outcome)}"
             f"</title><style>{html_pages.STYLE}</style></head><body>", f"<h1>{_e(title)}</h1>"]
    if header.get("contract"):  # the child said what it loaded
        parts.append("<table class=header>" + "".join(f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>"
                                                      for name, value in verdict.header_rows(header)) + "</table>")
    parts.append(f"<p class='summary {colour}'>{_e(verdict.summary(result))}</p>")
    parts += [f"<p class=note>note: {_e(note)}</p>" for note in result.notes]
    failed = [r for r in result.results if r.status in FAILED]
    if failed:
        parts.append(f"<h2>Failures ({len(failed)})</h2>")
        parts += [_failure(r) for r in failed]
    parts.append("<h2>Verdict</h2>" + _table(result.results))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _e(text):
    return html.escape(str(text), quote=True)


def _colour(status):
    return "red" if status in FAILED else "green" if status in CHECKED else "yellow"


def _table(rows):
    if not rows:
        return "<p>no property ran</p>"
    body = []
    for r in sorted(rows, key=lambda r: r.status not in FAILED):
        examples = "-" if r.examples is None else r.examples
        detail = (r.message.splitlines() or [""])[0] if r.status not in CHECKED else ""
        body.append(f"<tr><td><code>{_e(r.id)}</code></td><td class={_colour(r.status)}>{_e(r.status.value)}</td>"
                    f"<td>{_e(', '.join(dict.fromkeys(r.devices)))}</td><td class=num>{_e(examples)}</td>"
                    f"<td class=num>{r.seconds:.1f} s</td><td>{_e(detail)}</td></tr>")
    return ("<table class=verdict><tr><th>property</th><th>status</th><th>devices</th><th class=num>examples</th>"
            "<th class=num>time</th><th></th></tr>" + "".join(body) + "</table>")


def _failure(r):
    message, case = verdict.failure_parts(r)
    parts = [f"<div class=failure><h3><span class=red>{_e(r.status.value)}</span> {_e(r.id)}</h3>",
             f"<pre>{_e(message)}</pre>"]
    if r.distribution:
        parts.append(_picture(Distribution.from_json(r.distribution)))
    if case:
        parts.append(f"<pre>{_e(case)}</pre>")
    if r.replay:
        parts.append(f"<p>replay: <code class=replay>{_e(r.replay)}</code></p>")
    return "\n".join([*parts, "</div>"])


def _picture(distribution):
    """The plot of ``distribution`` as an inline image, or its text chart without matplotlib."""
    if html_pages.plots_available():
        return (f"<img alt='{_e(distribution.what)}: observed against expected' "
                f"src='data:image/png;base64,{plot(distribution)}'>")
    return (f"<pre>{_e(chr(10).join(distribution.chart()))}</pre><p class=note>(pip install matplotlib for a "
            "plot here)</p>")


def plot(distribution):
    """Two panels as a base64 PNG: the share of each length, observed beside expected; and at
    each length the observed CDF against the band the check allowed around the expected one,
    a length outside it marked."""
    from matplotlib.figure import Figure

    d = distribution
    x = list(range(len(d.labels)))
    observed_cdf, expected_cdf = d.cdfs()
    fig = Figure(figsize=(10, 3.4), dpi=100, layout="constrained")
    shares, cdf = fig.subplots(1, 2)
    shares.bar([i - 0.2 for i in x], d.shares(), width=0.4, label=f"observed ({d.runs} draws)", color=RED)
    shares.bar([i + 0.2 for i in x], d.expected, width=0.4, label="expected", color=GREY)
    top = max([*d.shares(), *d.expected, 0.01])
    shares.set(xticks=x, xticklabels=d.labels, xlabel="L", ylabel="share of the draws", title="each length",
               ylim=(0, top * 1.3))  # room above the bars for the legend, which must not hide one
    shares.legend(frameon=False, fontsize="small", loc="upper center", ncols=2)
    low, high = d.low, d.high
    cdf.bar(x, [h - lo for h, lo in zip(high, low)], bottom=low, width=0.5, color=GREY, alpha=0.35,
            label="allowed: the band at each length")
    cdf.hlines(expected_cdf, [i - 0.25 for i in x], [i + 0.25 for i in x], color="#3a3a3c", label="expected")
    cdf.plot(x, observed_cdf, "o-", color=RED, linewidth=1, markersize=4, label="observed")
    outside = [i for i, out in enumerate(d.outside()) if out]
    cdf.plot(outside, [observed_cdf[i] for i in outside], "o", markersize=11, markerfacecolor="none",
             markeredgecolor=RED, label="outside the band")
    cdf.set(xticks=x, xticklabels=d.labels, xlabel="L", ylabel="P(length <= L)", ylim=(-0.03, 1.08),
            title="CDF, and the band the check allows")
    cdf.legend(frameon=False, fontsize="small", loc="best")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return base64.b64encode(out.getvalue()).decode("ascii")
