"""What stderr shows while ``simacc check`` runs, the way pytest shows it: on a terminal one
status line rewritten in place (tests done, pass / FAIL / skipped so far, the test running),
ended by a newline before the verdict; on a log (CI) one line per property once all its
tests (devices, parameters) are done, or one per test with ``-v``; with ``-q`` nothing."""

from collections import Counter

from simacc.commands import terminal
from simacc.commands.checking import verdict
from simacc.harness.config.status import FAILED, Status, worst


class Progress:
    """The status of one check on ``stream`` (None or ``quiet``: nothing); ``verbose``: a
    log line per test instead of per property."""

    def __init__(self, stream, quiet=False, verbose=False):
        self.stream = None if quiet else stream
        self.status = terminal.StatusLine(self.stream)
        self.live = self.status.live
        self.paint = terminal.painter(self.stream is not None and terminal.colours(self.stream))
        self.verbose = verbose
        self.total = self.done = 0
        self.collections = {}  # session (one per grad mode) -> its tests
        self.counts = Counter()
        self.tests = Counter()  # tests collected per property
        self.finished_tests = {}  # property -> its results so far
        self.properties_done = 0
        self.current = ""

    def collected(self, nodeids, session=0):
        """The tests a session collected (each of its xdist workers says it; any one is the
        whole list of that session's), or, as session ``"later"``, those the first session
        left to the later grad modes' sessions: counted from the start, so that a property
        checked in several modes has one line, once its tests in every mode are done."""
        if len(nodeids) >= len(self.collections.get(session, ())):
            self.collections[session] = nodeids
            every = list(dict.fromkeys(n for ids in self.collections.values() for n in ids))
            self.total = len(every)
            self.tests = Counter(verdict.split_nodeid(n)[0] for n in every)

    def started(self, nodeid):
        self.current = verdict.split_nodeid(nodeid)[1]
        self._redraw()

    def finished(self, result):
        self.done += 1
        self.counts[_bucket(result.status)] += 1
        name = verdict.split_nodeid(result.nodeid)[1]
        if self.current == name:
            self.current = ""
        if self.live:
            self._redraw()
        elif self.stream is not None and self.verbose:
            examples = "" if result.examples is None else f", {_examples(result.examples)}"
            self._line(f"[{self.done}/{self.total or '?'}] {name}: {self._status(result.status)} "
                       f"({result.seconds:.1f} s{examples})")
        elif self.stream is not None:
            self._property_line(result)

    def _property_line(self, result):
        """A line for the property of ``result`` once its last test is done."""
        pid = verdict.split_nodeid(result.nodeid)[0]
        results = self.finished_tests.setdefault(pid, [])
        results.append(result)
        if len(results) < self.tests.get(pid, 1):
            return
        self.properties_done += 1
        said = self._summary(results)
        examples = [r.examples for r in results if r.examples is not None]
        seconds = sum(r.seconds for r in results)
        self._line(f"[{self.properties_done}/{len(self.tests) or '?'}] {pid}: {said} ({seconds:.1f} s"
                   + (f", {_examples(sum(examples))})" if examples else ")"))

    def _summary(self, results):
        """A property's outcome over its tests: FAIL (how many), else pass (and how many were
        skipped), else the one status they share."""
        failed = [r for r in results if r.status in FAILED]
        if failed:
            return self._status(worst(r.status for r in failed)) + (f" in {len(failed)} of {len(results)} tests" if len(results) > 1
                                                      else "")
        others = Counter(r.status.value for r in results if r.status not in (Status.PASS, Status.XFAIL))
        if sum(others.values()) < len(results):  # some passed or failed as expected
            status = Status.PASS if any(r.status == Status.PASS for r in results) else Status.XFAIL
            return self._status(status) + "".join(f", {n} {s}" for s, n in others.items())
        return ", ".join(f"{n} {s}" for s, n in others.items()) if len(others) > 1 else self._status(results[0].status)

    def _status(self, status):
        return self.paint(status.value, "red" if status in FAILED else "green" if status == Status.PASS else "yellow")

    def warn(self, message):
        self.status.line(f"warning: {message}")
        self._redraw()

    def close(self):
        """End the status line, so that what follows starts on a line of its own."""
        self.status.end()

    def _position(self):
        return f"[{self.done}/{self.total}]" if self.total else f"[{self.done}]"

    def _redraw(self):
        if not self.live:
            return
        counts = [(b, self.counts[b]) for b in ("pass", "FAIL", "skipped") if self.counts[b]]
        parts = [self._position(), ", ".join(f"{n} {b}" for b, n in counts), f"- {self.current}" if self.current else ""]
        plain = " ".join(p for p in parts if p)
        parts[1] = ", ".join(f"{n} {self.paint(b, _COLOURS[b])}" for b, n in counts)
        self.status.show(" ".join(p for p in parts if p), plain)

    def _line(self, text):
        self.status.line(text)


_COLOURS = {"pass": "green", "FAIL": "red", "skipped": "yellow"}


def _examples(n):
    return f"{n} example{'' if n == 1 else 's'}"


def _bucket(status):
    """The live line's three counts: what passed, what failed, and the rest."""
    if status in FAILED:
        return "FAIL"
    return "pass" if status in (Status.PASS, Status.XFAIL) else "skipped"
