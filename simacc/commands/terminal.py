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


class StatusLine:
    """A status line on ``stream`` (None: nothing), the way pytest keeps one: on a terminal one
    line rewritten in place, the lines that matter printed above it; on a log (``log``) only
    those lines."""

    def __init__(self, stream):
        self.stream = stream
        self.live = stream is not None and isatty(stream)
        self.log = stream is not None and not self.live
        self.width = columns(stream) - 1 if self.live else 0
        self._shown = 0  # the length of the line on the terminal now

    def show(self, text, plain=None):
        """Rewrite the line as ``text`` (on a terminal). ``plain`` is ``text`` without its colour
        codes: what its width is measured by, and what is shown, cut, when it is too wide (a
        cut must not split an escape code)."""
        if not self.live:
            return
        plain = text if plain is None else plain
        if len(plain) > self.width:
            text = plain = plain[: self.width]
        self.stream.write("\r" + text + " " * max(0, self._shown - len(plain)))
        self.stream.flush()
        self._shown = len(plain)

    def line(self, text):
        """Print ``text`` on a line of its own (above the status line, which the next
        :meth:`show` draws again)."""
        if self.stream is not None:
            self.clear()
            self.stream.write(text + "\n")
            self.stream.flush()

    def clear(self):
        """Take the status line off the terminal."""
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def end(self):
        """Leave the status line as it is, ended, so that what follows starts on a line of its own."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = 0
