"""What stderr shows while ``simacc check`` runs, the way pytest shows it: on a
terminal one status line rewritten in place (tests done, pass / FAIL / skipped so far, the
test running), ended by a newline before the table; on a log (CI) one line per finished
test; with ``-q`` nothing."""

import os
import shutil
from collections import Counter

from simacc.commands import verdict
from simacc.harness.status import Status


class Progress:
    """The status of one check on ``stream`` (None or ``quiet``: nothing)."""

    def __init__(self, stream, quiet):
        self.stream = None if quiet else stream
        self.live = self.stream is not None and _isatty(self.stream)
        self.width = _columns(self.stream) - 1 if self.live else 0
        self.total = self.done = 0
        self.counts = Counter()
        self.current = ""
        self._shown = 0  # length of the status line on the terminal now

    def collected(self, total):
        self.total = max(self.total, total)

    def started(self, nodeid):
        self.current = verdict.split_nodeid(nodeid)[1]
        self._redraw()

    def finished(self, result):
        self.done += 1
        self.counts[_BUCKETS[result.status]] += 1
        name = verdict.split_nodeid(result.nodeid)[1]
        if self.current == name:
            self.current = ""
        if self.live:
            self._redraw()
        elif self.stream is not None:
            examples = "" if result.examples is None else f", {result.examples} examples"
            self._line(f"{self._position()} {name}: {result.status.value} ({result.seconds:.1f} s{examples})")

    def warn(self, message):
        if self.stream is not None:
            self._clear()
            self._line(f"warning: {message}")
            self._redraw()

    def close(self):
        """End the status line, so that what follows starts on a line of its own."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = 0

    def _position(self):
        return f"[{self.done}/{self.total}]" if self.total else f"[{self.done}]"

    def _redraw(self):
        if not self.live:
            return
        counts = ", ".join(f"{self.counts[b]} {b}" for b in ("pass", "FAIL", "skipped") if self.counts[b])
        running = f"- {self.current}" if self.current else ""
        line = " ".join(part for part in (self._position(), counts, running) if part)[: self.width]
        self.stream.write("\r" + line.ljust(self._shown))
        self.stream.flush()
        self._shown = len(line)

    def _clear(self):
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self._shown = 0

    def _line(self, text):
        self.stream.write(text + "\n")
        self.stream.flush()


_BUCKETS = {Status.PASS: "pass", Status.XFAIL: "pass", Status.FAIL: "FAIL", Status.XPASS: "FAIL",
            Status.HUNG: "FAIL", Status.CRASHED: "FAIL", Status.ERROR: "FAIL", Status.NOT_RUN: "skipped",
            Status.SKIPPED: "skipped", Status.NOT_APPLICABLE: "skipped"}  # the live line's three counts


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _columns(stream):
    """The terminal's width: a status line longer than that would wrap, and ``\\r`` only
    returns to the start of the last row."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns
