"""Running the implementation under test on a case, safely, and recording what it did.

This is the one place where the implementation is called. Whatever goes wrong inside it
(an exception, an asynchronous CUDA error) becomes an :class:`ImplementationFailed`
assertion, so a property fails with a clear message instead of the harness crashing.

A call runs in a thread with a time limit. A call past it raises :class:`ImplementationHung`,
which stops Hypothesis at once: shrinking would call the hanging implementation again and
again, one time limit each. The stuck thread cannot be killed; it is left behind as a
daemon. If it holds the GIL so that the test cannot even regain control, a watchdog
(``faulthandler``) ends the process a little later, which xdist reports as a crashed
worker: a failed property either way, never a hung run (issue #4).

The last case run is remembered for the repro file.
"""

import faulthandler
import sys
import threading
from dataclasses import dataclass

import torch

DEFAULT_TIMEOUT = 30.0
WATCHDOG_GRACE = 5.0  # seconds past the time limit before the watchdog ends the process


class ImplementationFailed(AssertionError):
    """The implementation raised where the contract wants a result."""


class ImplementationHung(BaseException):
    """The implementation did not return within the time limit.

    A ``BaseException`` on purpose: Hypothesis treats an ``Exception`` as a failure to
    shrink, which here would mean more hanging calls; this one it lets through at once, and
    pytest still reports it as the property's failure.
    """


@dataclass
class Outcome:
    """What one call did: its return value (or error), every tensor argument after the
    call (``args``) and a copy from before (``before``), and the CPU generator state."""

    returned: object
    error: BaseException | None
    args: dict
    before: dict
    rng_before: torch.Tensor
    rng_after: torch.Tensor

    @property
    def draws_consumed(self):
        return not torch.equal(self.rng_before, self.rng_after)


class Runner:
    """Calls one :class:`~simacc.impl.Implementation` with a time limit per call."""

    def __init__(self, impl, timeout=DEFAULT_TIMEOUT):
        self.impl = impl
        self.timeout = timeout
        self.last = None  # (case, device) of the most recent call: what a repro records

    def attempt(self, case, device):
        """Run ``case`` on ``device`` from its seed; never raises for the implementation's
        own errors (they land in ``Outcome.error``), only :class:`ImplementationHung`."""
        self.last = (case, device)
        args = case.args(device)
        before = {k: v.clone() for k, v in args.items() if isinstance(v, torch.Tensor)}
        torch.default_generator.manual_seed(case.seed)  # the CPU generator only: seeding CUDA lazily costs ~1 ms a call
        rng_before = torch.get_rng_state()
        result = {}

        def target():
            try:
                result["returned"] = self.impl.call(args)
                if torch.device(device).type == "cuda":
                    torch.cuda.synchronize()
            except BaseException as e:  # noqa: BLE001 - reported, never swallowed
                result["error"] = e

        thread = threading.Thread(target=target, daemon=True, name="simacc-call")
        watchdog = sys.__stderr__ is not None  # faulthandler needs a real file to write to
        if watchdog:
            faulthandler.dump_traceback_later(self.timeout + WATCHDOG_GRACE, exit=True, file=sys.__stderr__)
        try:
            thread.start()
            thread.join(self.timeout)
        finally:
            if watchdog:
                faulthandler.cancel_dump_traceback_later()
        if thread.is_alive():
            raise ImplementationHung(
                f"{self.impl.spec} did not return within {self.timeout:g} s on {device} "
                f"(the per-call time limit) [{case.summary()}]"
            )
        return Outcome(
            returned=result.get("returned"),
            error=result.get("error"),
            args=args,
            before=before,
            rng_before=rng_before,
            rng_after=torch.get_rng_state(),
        )

    def run(self, case, device):
        """Like :meth:`attempt`, but an error from the implementation fails the property."""
        outcome = self.attempt(case, device)
        if outcome.error is not None:
            e = outcome.error
            raise ImplementationFailed(
                f"{self.impl.spec} raised {type(e).__name__}: {e} on {device} [{case.summary()}]"
            ) from e
        return outcome
