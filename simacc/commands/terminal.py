"""What the commands need to know about the stream they print to: whether it is a terminal,
how wide it is, and whether to colour it, the way pytest decides: ``NO_COLOR`` (set and not
empty) turns colour off, ``FORCE_COLOR`` turns it on, otherwise a terminal (not ``TERM=dumb``)
gets colour and a log does not."""

import os
import shutil

_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1"}


def isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def columns(stream):
    """The terminal's width: a status line longer than that would wrap, and ``\\r`` only
    returns to the start of the last row."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def colours(stream, environ=None):
    """Whether text printed to ``stream`` is coloured."""
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return isatty(stream) and environ.get("TERM") != "dumb"


def painter(enabled):
    """``paint(text, colour)``: ``text`` in ``colour`` (red, green, yellow, bold) when
    ``enabled``, else unchanged."""
    if not enabled:
        return lambda text, colour: text
    return lambda text, colour: f"\x1b[{_CODES[colour]}m{text}\x1b[0m"
