"""The outcome of one property on one device, as every part of simacc names it: the pytest
plugin carries it in each report's structured data, the in-process runs return it, and the
verdict counts it. Never recovered from message text. One :class:`Result` is what both
engines say of a test: the in-process runs return it, the plugin's event stream carries it."""

import dataclasses
import enum


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "FAIL"
    XFAIL = "expected failure"  # failed, as the xfails file says it would
    XPASS = "unexpected pass"  # listed in the xfails file, and passed: a failure of the check
    HUNG = "hung"  # a call outlasted the time limit: interrupted, or its process ended (watchdog, supervisor)
    CRASHED = "crashed"  # the process running it died under it (a segfault, os._exit, a kill for memory)
    ERROR = "internal error"  # pytest or simacc failed while running it: no verdict on the implementation
    NOT_RUN = "not run"  # never run: the implementation hangs, the workers kept dying, or the run ended first
    SKIPPED = "skipped"  # could not run here (a missing device or package)
    NOT_APPLICABLE = "not applicable"  # does not apply to this implementation's contract or level

    def __str__(self):
        return self.value

    @property
    def severity(self):
        """Its place in :data:`SEVERITY`: of several results of one property (its devices and
        parameters, or fuzz's passes), the one with the highest severity is what the property shows."""
        return _SEVERITY[self]


CHECKED = frozenset({Status.PASS, Status.FAIL, Status.XFAIL, Status.XPASS, Status.HUNG, Status.CRASHED})  # it ran
FAILED = frozenset({Status.FAIL, Status.XPASS, Status.HUNG, Status.CRASHED, Status.ERROR})
INCOMPLETE = frozenset({Status.NOT_RUN})  # no failure of its own, but a check with such a row never passes
# From what says least about the implementation to what says most against it: a property that
# passed in one fuzzing pass and crashed in another crashed; one never run anywhere was not run.
SEVERITY = (Status.NOT_APPLICABLE, Status.SKIPPED, Status.NOT_RUN, Status.PASS, Status.XFAIL, Status.ERROR,
            Status.XPASS, Status.HUNG, Status.CRASHED, Status.FAIL)
_SEVERITY = {status: rank for rank, status in enumerate(SEVERITY)}


def worst(statuses):
    """The status of highest :attr:`Status.severity` among ``statuses`` (None for none)."""
    return max(statuses, key=_SEVERITY.__getitem__, default=None)


def failures_first(status):
    """A sort key for rows: the failures first, the most serious first, then the rest in the order they came."""
    return -status.severity if status in FAILED else 0


@dataclasses.dataclass
class Result:
    """One test of a property (one parametrization on one device, in one grad mode), named as
    pytest names it (``id[parameters-device-mode]``, without ``test_``): its status, the
    examples Hypothesis ran up to the outcome (None when not a Hypothesis test), its seconds,
    and for a failure the message and the summary of the (shrunk) case it failed on, with
    the case's size as it says it (``"bs=1 W=2"``, or ``"B="`` for a DFLASH block)."""

    id: str
    device: str
    status: Status
    examples: int | None
    seconds: float
    message: str = ""
    case: str | None = None
    size: str = ""

    def to_json(self):
        return {**dataclasses.asdict(self), "status": self.status.value}
