"""Running the implementation under test on a case, safely, and recording what it did.

This is the one place where the implementation is called. Whatever goes wrong inside it
(an exception, an asynchronous CUDA error) becomes an :class:`ImplementationFailed`
assertion, so a property fails with a clear message instead of the harness crashing.

Each call has a time limit, and costs microseconds, not a thread. In the main
thread a ``SIGALRM`` timer interrupts a call that runs past the limit with
:class:`ImplementationHung`, which stops Hypothesis at once: shrinking would call the
hanging implementation again and again, one time limit each. A call stuck in C code that
never lets the interpreter run the signal handler is ended by a watchdog (``faulthandler``)
a little later, which kills the process: xdist reports a crashed worker, a failed property
either way, never a hung run. The watchdog is armed with room to spare and
re-armed only when the room runs out, so it costs nothing per call. Outside the main thread
(or without ``SIGALRM``) the call runs in a helper thread that is abandoned if it hangs.

On CUDA the call runs with the inputs' device as the current one (as a serving process
does) and is followed by a synchronisation of that device, so asynchronous errors belong to
the call that caused them.

A runner belongs to one test: it knows the implementation, the device and the grad mode the
test runs in (:mod:`simacc.harness.grad_modes`) and the Hypothesis settings its properties
run under. A case's tensors are made, and the call runs, in the grad mode, as a server makes
and calls them; the mode is entered in the thread that calls (grad modes are per thread).
The last case run is remembered for the repro file.
"""

import faulthandler
import signal
import sys
import threading
import time
from dataclasses import dataclass

import torch

from simacc.harness import grad_modes
from simacc.harness.settings import DEFAULT_TIMEOUT

WATCHDOG_GRACE = 5.0  # seconds past the time limit before the watchdog ends the process
WATCHDOG_ROOM = 20.0  # extra seconds the watchdog is armed with, so that it is re-armed rarely


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
    """What one call did: its return value (or error), every argument after the call
    (``args``) and the CPU generator state before and after. ``before`` rebuilds the
    arguments as they were before the call, from the case, when a property asks."""

    returned: object
    error: BaseException | None
    args: dict
    rng_before: torch.Tensor
    rng_after: torch.Tensor
    case: object
    device: str

    @property
    def draws_consumed(self):
        return not torch.equal(self.rng_before, self.rng_after)

    @property
    def before(self):
        return {k: v for k, v in self.case.args(self.device).items() if isinstance(v, torch.Tensor)}


class _Watchdog:
    """faulthandler's one process-ending timer, shared by every runner of the process."""

    def __init__(self):
        self.until = 0.0
        self.users = 0

    def cover(self, seconds):
        """Make sure the timer fires no sooner than ``seconds`` from now."""
        now = time.monotonic()
        if self.until - now < seconds and sys.__stderr__ is not None:  # it needs a real file
            faulthandler.dump_traceback_later(seconds + WATCHDOG_ROOM, exit=True, file=sys.__stderr__)
            self.until = now + seconds + WATCHDOG_ROOM

    def release(self):
        self.users -= 1
        if self.users == 0 and self.until:
            faulthandler.cancel_dump_traceback_later()
            self.until = 0.0


_WATCHDOG = _Watchdog()


def _alarm(signum, frame):
    raise ImplementationHung


class Runner:
    """Calls one :class:`~simacc.harness.impl.Implementation` on ``device`` with a time limit
    per call, in the grad mode ``context`` (None: the caller's own); ``hypothesis`` (a
    Hypothesis settings object) and ``seed`` are what the properties it serves run under
    (None: simacc's ``default`` profile, a random seed).

    Use it as a context manager (the ``simacc`` fixture does): leaving it disarms the
    watchdog once no other runner needs it.
    """

    def __init__(self, impl, device="cpu", timeout=DEFAULT_TIMEOUT, hypothesis=None, seed=None, context=None):
        self.impl = impl
        self.device = device
        self.context = context
        self.timeout = timeout
        self.hypothesis = hypothesis
        self.seed = seed
        self.last = None  # (case, device) of the most recent call: what a repro records
        self.examples = None  # examples the last property run to an outcome (Property.run)
        self._previous_handler = None  # SIGALRM's handler before this runner installed its own

    def __enter__(self):
        _WATCHDOG.users += 1
        if _can_alarm():  # installing a handler costs microseconds: once per runner, not per call
            self._previous_handler = signal.signal(signal.SIGALRM, _alarm)
        return self

    def __exit__(self, *exc):
        if self._previous_handler is not None:
            signal.signal(signal.SIGALRM, self._previous_handler)
            self._previous_handler = None
        _WATCHDOG.release()

    def attempt(self, case, device=None):
        """Run ``case`` on ``device`` (default: the runner's) from its seed; never raises for
        the implementation's own errors (they land in ``Outcome.error``), only
        :class:`ImplementationHung`."""
        device = self.device if device is None else device
        self.last = (case, device)
        with grad_modes.entered(self.context):
            args = case.args(device)
        torch.default_generator.manual_seed(case.seed)  # the CPU generator only: seeding CUDA lazily costs ~1 ms a call
        rng_before = torch.get_rng_state()
        try:
            returned, error = self._call(args), None
        except ImplementationHung:
            raise ImplementationHung(
                f"{self.impl.spec} did not return within {self.timeout:g} s on {device} "
                f"(the per-call time limit) [{case.summary()}]"
            ) from None
        except KeyboardInterrupt:
            raise  # Ctrl-C stops the run; it is not the implementation's result
        except BaseException as e:  # noqa: BLE001 - reported, never swallowed
            returned, error = None, e
        return Outcome(returned, error, args, rng_before, torch.get_rng_state(), case, device)

    def run(self, case, device=None):
        """Like :meth:`attempt`, but an error from the implementation fails the property."""
        outcome = self.attempt(case, device)
        if outcome.error is not None:
            e = outcome.error
            raise ImplementationFailed(
                f"{self.impl.spec} raised {type(e).__name__}: {e} on {outcome.device} [{case.summary()}]"
            ) from e
        return outcome

    def _call(self, args):
        cuda = next((v.device for v in args.values() if isinstance(v, torch.Tensor) and v.is_cuda), None)
        if cuda is None:
            return self._limited(self._in_mode, args)

        def on_device(kwargs):
            with torch.cuda.device(cuda):
                returned = self._in_mode(kwargs)
                torch.cuda.synchronize(cuda)
            return returned

        return self._limited(on_device, args)

    def _in_mode(self, kwargs):
        with grad_modes.entered(self.context):
            return self.impl.call(kwargs)

    def _limited(self, fn, args):
        _WATCHDOG.cover(self.timeout + WATCHDOG_GRACE)
        if not _can_alarm():
            return _in_thread(fn, args, self.timeout)
        previous = signal.signal(signal.SIGALRM, _alarm) if self._previous_handler is None else None
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            return fn(args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if previous is not None:
                signal.signal(signal.SIGALRM, previous)


def _can_alarm():
    """Whether a ``SIGALRM`` timer can interrupt calls here (only in the main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _in_thread(fn, args, timeout):
    """``fn(args)`` in a helper thread, abandoned (a daemon) if it outlasts ``timeout``."""
    result = {}

    def target():
        try:
            result["returned"] = fn(args)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = e

    thread = threading.Thread(target=target, daemon=True, name="simacc-call")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ImplementationHung
    if "error" in result:
        raise result["error"]
    return result["returned"]
