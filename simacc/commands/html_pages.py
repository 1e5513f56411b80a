"""What every HTML page of simacc shares (``check --html``, ``laws --html``, ``observe --html``):
the inline style, the two colours of a plot (the observed in red, the expected in grey), and
whether the plots can be drawn."""

import importlib.util

RED, GREY = "#c1121f", "#8e8e93"
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 2em; }
h3 { font-size: 1em; margin: 0 0 .5em; font-family: ui-monospace, monospace; }
table { border-collapse: collapse; } td, th { padding: .2em .8em .2em 0; text-align: left; vertical-align: top; }
.verdict td, .verdict th { border-bottom: 1px solid #e3e3e6; } .num { text-align: right; }
.header th { font-weight: normal; color: #6e6e73; }
pre { background: #f5f5f7; padding: .6em .8em; white-space: pre-wrap; margin: .4em 0; font-size: 12.5px; }
code { font-family: ui-monospace, monospace; font-size: 12.5px; }
.summary { font-weight: 600; font-size: 1.1em; }
.red { color: #c1121f; } .green { color: #2b8a3e; } .yellow { color: #a06000; }
.failure { border-left: 4px solid #c1121f; padding: .6em 1em; margin: 1.2em 0; background: #fffafa; }
.replay { user-select: all; } .verdict code { white-space: nowrap; } img { max-width: 100%; } .note { color: #6e6e73; }
"""


def plots_available():
    """Whether matplotlib is here to draw the plots (without it, each page shows text charts)."""
    return importlib.util.find_spec("matplotlib") is not None
