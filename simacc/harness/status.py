"""The outcome of one property on one device, as every part of simacc names it: the pytest
plugin carries it in each report's structured data, the in-process runs return it, and the
verdict counts it. Never recovered from message text."""

import enum


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "FAIL"
    XFAIL = "expected failure"  # failed, as the xfails file says it would
    XPASS = "unexpected pass"  # listed in the xfails file, and passed: a failure of the check
    SKIPPED = "skipped"  # could not run here (a missing device or package)
    NOT_APPLICABLE = "not applicable"  # does not apply to this implementation's contract or level

    def __str__(self):
        return self.value


CHECKED = frozenset({Status.PASS, Status.FAIL, Status.XFAIL, Status.XPASS})  # the implementation was run
FAILED = frozenset({Status.FAIL, Status.XPASS})
