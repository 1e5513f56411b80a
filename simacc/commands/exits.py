"""The exit codes of every simacc command, in one place (pytest's where they overlap)."""

import enum


class Exit(enum.IntEnum):
    OK = 0  # conformant; the case passes; nothing left to report
    FAILED = 1  # not conformant; the case still fails; a new failure was found
    USAGE = 2  # a bad argument, file or implementation: nothing was checked
    NOTHING_CHECKED = 5  # pytest's "no tests ran": nothing checked is never success
    INCONCLUSIVE = 6  # observe: every check passed, but the log is too small to see a shift of 0.1 in AL
    INTERRUPTED = 130  # Ctrl-C, or a SIGTERM (a CI's time limit)


class SessionError(Exception):
    """A session that could check nothing: the implementation would not load, pytest could not
    collect the properties, a process ended before it said what it loaded (exit 2, as a
    usage error). ``detail`` is the end of pytest's output, printed below the one line."""

    def __init__(self, message, detail=""):
        super().__init__(message)
        self.detail = detail
