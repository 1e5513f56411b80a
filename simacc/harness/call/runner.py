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

Around each call the runner also protects the process and the harness from the code it
calls (``_protected``; what it defends against is in ``docs/trust.md``): torch's global state,
the working directory and the signal handlers are restored (what changed goes into the
outcome, for the property that judges it), the implementation's output is kept up to a
bound, the harness's own functions are checked, results are read as plain tensors, a
``KeyboardInterrupt`` the code raised is its error (only a real Ctrl-C interrupts), and a
heartbeat tells a supervising command that a call is in progress, so that it can enforce a
deadline of its own whatever the call does to its signals. A call that outlasts the limit
is counted (:mod:`simacc.harness.processes.watch`): after a few, the session stops calling it.

A runner belongs to one test: it knows the implementation, the device and the grad mode the
test runs in (:mod:`simacc.harness.config.grad_modes`) and the Hypothesis settings its properties
run under. A case's tensors are made, and the call runs, in the grad mode, as a server makes
and calls them; the mode is entered in the thread that calls (grad modes are per thread).
The last case run is remembered for the repro file.
"""

import faulthandler
import random
import signal
import threading
import time
import traceback
from dataclasses import dataclass

import torch

from simacc.harness.call import process_state, tamper
from simacc.harness.call.capture import Capture
from simacc.harness.call.impl import in_environment, server_environment
from simacc.harness.call.tamper import HarnessModified  # noqa: F401 - raised from attempt(), named here with its kin
from simacc.harness.config import devices, grad_modes
from simacc.harness.config.settings import DEFAULT_TIMEOUT
from simacc.harness.config.status import Status
from simacc.harness.model import cases, explain
from simacc.harness.processes import watch
from simacc.harness.processes.interrupts import Recorder
from simacc.harness.processes.stream import clip
from simacc.harness.processes.watch import WATCHDOG_GRACE, WATCHDOG_ROOM

# the server's variables (impl.server_environment) that a case passes as its own arguments
_PASSED_AS = {"SGLANG_SIMULATE_ACC_LEN": "simulate_acc_len", "SGLANG_SIMULATE_ACC_METHOD": "simulate_acc_method",
              "SGLANG_SIMULATE_ACC_TOKEN_MODE": "simulate_acc_token_mode"}


class ImplementationFailed(AssertionError):
    """The implementation raised where the contract wants a result."""


class ProcessChanged(AssertionError):
    """A call changed the process's global state (CONTRACT.md §11.4); the runner restored it."""


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
    arguments as they were before the call, from the case, when a property asks.
    ``changed`` lists the process state the call changed (and the runner restored)."""

    returned: object
    error: BaseException | None
    args: dict
    rng_before: torch.Tensor
    rng_after: torch.Tensor
    case: object
    device: str
    changed: tuple = ()

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
        self.overtime = False  # the limit of the call in progress went off (it may catch it and return anyway)

    def cover(self, seconds):
        """Make sure the timer fires no sooner than ``seconds`` from now."""
        now = time.monotonic()
        if self.until - now < seconds:
            self._arm(seconds + WATCHDOG_ROOM)

    def tighten(self):
        """The call in progress has outlasted its limit: end the process if it is still
        running :data:`~simacc.harness.processes.watch.INTERRUPTED_GRACE` seconds from now (it caught the
        interrupt, or it is stuck in C code that the interrupt cannot reach)."""
        self._arm(watch.INTERRUPTED_GRACE)

    def _arm(self, seconds):
        where = watch.watchdog_file()
        if where is not None:  # it needs a real file
            faulthandler.dump_traceback_later(seconds, exit=True, file=where)
            self.until = time.monotonic() + seconds

    def release(self):
        self.users -= 1
        if self.users == 0 and self.until:
            faulthandler.cancel_dump_traceback_later()
            self.until = 0.0


_WATCHDOG = _Watchdog()


def _alarm(signum, frame):
    _WATCHDOG.overtime = True
    _WATCHDOG.tighten()
    raise ImplementationHung


class Runner:
    """Calls one :class:`~simacc.harness.call.impl.Implementation` on ``device`` with a time limit
    per call, in the grad mode ``context`` (None: the caller's own); ``hypothesis`` (a
    Hypothesis settings object) and ``seed`` are what the properties it serves run under
    (None: simacc's ``default`` profile, a random seed).

    Use it as a context manager (the ``simacc`` fixture does): leaving it disarms the
    watchdog once no other runner needs it. ``capture`` False lets the implementation's
    output through instead of keeping it (``output``) up to a bound.
    """

    def __init__(self, impl, device="cpu", timeout=DEFAULT_TIMEOUT, hypothesis=None, seed=None, capture=True,
                 context=None):
        self.impl = impl
        self.device = device
        self.context = context
        self.timeout = timeout
        self.hypothesis = hypothesis
        self.seed = seed
        self.last = None  # (case, device) of the most recent call: what a repro records
        self.examples = None  # examples the last property run to an outcome (Property.run)
        self._previous_handler = None  # SIGALRM's handler before this runner installed its own
        self._capture = Capture(capture)
        self._interrupts = Recorder()
        self._changed = ()
        self._settled = None  # the process state the last call left (after its restore)
        self.closing = []  # what ends with the runner (a test's ranks), called as it exits
        self.changes = []  # (what a call changed in the process, its case), for every call that changed it
        self._generators_on = {}  # device: the generators a call there has seeded (_generators)
        self._environment = server_environment((impl.record,))  # a server's, set for its life: its calls' too

    def __enter__(self):
        _WATCHDOG.users += 1
        if _can_alarm():  # installing a handler costs microseconds: once per runner, not per call
            self._previous_handler = signal.signal(signal.SIGALRM, _alarm)
        self._interrupts.__enter__()
        return self

    def __exit__(self, *exc):
        while self.closing:
            self.closing.pop()()
        self._interrupts.__exit__()
        if self._previous_handler is not None:
            signal.signal(signal.SIGALRM, self._previous_handler)
            self._previous_handler = None
        self._capture.close()
        _WATCHDOG.release()

    @property
    def output(self):
        """What the implementation printed in this runner's calls, up to a bound."""
        return self._capture.text

    def attempt(self, case, device=None, reseed=True):
        """Run ``case`` on ``device`` (default: the runner's) from its seed (``reseed`` False:
        from the CPU generator as the calls before left it, as a server seeded once draws);
        never raises for the implementation's own errors (they land in ``Outcome.error``),
        only :class:`ImplementationHung` and :class:`HarnessModified`."""
        device = self.device if device is None else device
        self.check_import()
        self.last = (case, device)
        with grad_modes.entered(self.context):
            args = case.args(device)
        if reseed:
            self._seed(case.seed, self._generators(device))
        rng_before = torch.get_rng_state()
        interrupts = self._interrupts.count
        try:
            returned = self._call(args, self._environment_of(case))
        except ImplementationHung:
            raise self._hung(case, device) from None
        except HarnessModified:
            raise
        except KeyboardInterrupt as e:
            if self._interrupts.real(e, interrupts):
                raise  # Ctrl-C stops the run; it is not the implementation's result
            return self._outcome(None, e, args, rng_before, case, device)  # raised by the code itself: its error
        except BaseException as e:  # noqa: BLE001 - reported, never swallowed
            # returned from here, so that this frame (which the error's traceback keeps) no longer holds it
            return self._outcome(None, e, args, rng_before, case, device)
        return self._outcome(returned, None, args, rng_before, case, device)

    def _generators(self, device):
        """torch's generators a call on ``device`` may draw from unasked, which the runner seeds
        from the case: the CPU's, and a CUDA device's own where the contract draws from torch
        (vLLM's V1 draws on its tensors' device, §16.2). Unseeded, a CUDA call's draws would
        follow the process's earlier calls: two ranks, or a replay, would not draw alike."""
        found = self._generators_on.get(device)
        if found is None:
            found = (torch.default_generator,)
            if "torch" in self.impl.record.draws and devices.is_cuda(device):
                found += (devices.default_generator(device),)
            self._generators_on[device] = found
        return found

    def _seed(self, seed, generators):
        """Seed the generators the contract draws from with ``seed``, then draw from them as a
        server's have drawn (:func:`~simacc.harness.model.cases.seeded`)."""
        for generator in generators:
            cases.seeded(generator, seed)
        if "random" in self.impl.record.draws:
            random.seed(seed)

    def _hung(self, case, device):
        watch.note_hang()
        return ImplementationHung(explain.message(
            f"{self.impl.spec} did not return within {self.timeout:g} s on {device} (the per-call time limit)", case))

    def _failed(self, error, case, device):
        """The property's failure for the implementation's ``error``, and the cause to chain."""
        said = " ".join(_said(error).split())  # one line: the message's first line is its summary
        return ImplementationFailed(explain.message(f"{self.impl.spec} raised {said} on {device}", case)), _bounded(error)

    def _outcome(self, returned, error, args, rng_before, case, device):
        error = None if error is None else _released(error)
        if self._changed:
            self.changes.append((self._changed, case))
        return Outcome(tamper.plain(returned), error, tamper.plain_args(args), rng_before, torch.get_rng_state(), case,
                       device, self._changed)

    def run(self, case, device=None, reseed=True):
        """Like :meth:`attempt`, but an error from the implementation fails the property."""
        outcome = self.attempt(case, device, reseed)
        if outcome.error is not None:
            failure, cause = self._failed(outcome.error, case, outcome.device)
            del outcome  # this frame stays in the failure's traceback: it must not hold the error's message
            raise failure from cause
        return outcome

    def sample(self, case, seeds, read):
        """``[read(result)]`` of ``case`` called once from each seed of ``seeds`` (the generators
        its contract draws from seeded with it): the statistical properties' thousands of small calls, about
        three times cheaper than as many :meth:`run` calls. The case's tensors are made once (a
        call may write into them: ``read`` reads only what it returned, at once, and must not
        raise: what it raises is reported as the implementation's error), and the
        process, the output and the harness are protected around the whole stretch instead of
        each call (a change to the process fails the property, :meth:`check_process`); every
        call keeps its time limit. An error of the implementation fails the property, as in
        :meth:`run`."""
        device = self.device
        self.check_import()
        self.last = (case, device)
        with grad_modes.entered(self.context):
            args = case.args(device)
        call, found, generators = self._entry(args), [], self._generators(device)

        def stretch(kwargs):
            for seed in seeds:
                self._seed(seed, generators)
                watch.beat(self.timeout)
                found.append(read(tamper.plain(self._limited(call, kwargs))))
            return found

        interrupts = self._interrupts.count
        try:
            return self._protected(stretch, args, self._environment_of(case), limited=False)
        except ImplementationHung:
            raise self._hung(case, device) from None
        except HarnessModified:
            raise
        except KeyboardInterrupt as e:
            if self._interrupts.real(e, interrupts):
                raise
            error = _released(e)
        except BaseException as e:  # noqa: BLE001 - reported, never swallowed
            error = _released(e)
        finally:
            if self._changed:
                self.changes.append((self._changed, case))
        failure, cause = self._failed(error, case, device)
        raise failure from cause

    def check_process(self):
        """Raise :class:`ProcessChanged` when any call this runner made changed the process
        (CONTRACT.md §11.4; each change was restored after its call)."""
        if self.changes:
            changed, case = self.changes[0]
            more = len(self.changes) - 1
            raise ProcessChanged(explain.message(
                f"{self.impl.spec} changed the process (restored after the call): {'; '.join(changed)}"
                + (f" (and {more} later call{'s' if more > 1 else ''} changed it too)" if more else ""), case))

    def check_import(self):
        """Raise :class:`HarnessModified` when importing the implementation changed the harness."""
        if self.impl.modified_at_import:
            raise HarnessModified(tamper.describe(self.impl.modified_at_import, f"when {self.impl.spec} was imported"))

    def _call(self, args, environment):
        return self._protected(self._entry(args), args, environment)

    def _environment_of(self, case):
        """The server's variables as they stand when it makes ``case``'s call: what the case
        passes for the length, the method and the token mode, as a server passes what its
        variables say (an argument the case leaves out: the variable's default)."""
        given = {name: getattr(case, field) for name, field in _PASSED_AS.items()
                 if name in self._environment and hasattr(case, field) and field not in getattr(case, "omitted", ())}
        return {**self._environment, **{name: str(value) for name, value in given.items() if "\0" not in str(value)}}

    def _entry(self, args):
        """The call of the implementation on ``args``: in the runner's grad mode, and on a CUDA
        input's device with a synchronisation after it, when there is one."""
        cuda = next((v.device for v in args.values() if isinstance(v, torch.Tensor) and v.is_cuda), None)
        if cuda is None:
            return self._in_mode

        def on_device(kwargs):
            with torch.cuda.device(cuda):
                returned = self._in_mode(kwargs)
                torch.cuda.synchronize(cuda)
            return returned

        return on_device

    def _in_mode(self, kwargs):
        with grad_modes.entered(self.context):
            return self.impl.call(kwargs)

    def _limited(self, fn, args):
        _WATCHDOG.cover(self.timeout + WATCHDOG_GRACE)
        if not _can_alarm():
            return _in_thread(fn, args, self.timeout)
        previous = signal.signal(signal.SIGALRM, _alarm) if self._previous_handler is None else None
        _WATCHDOG.overtime = False
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            returned = fn(args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if previous is not None:
                signal.signal(signal.SIGALRM, previous)
            if _WATCHDOG.overtime:
                _WATCHDOG.cover(self.timeout + WATCHDOG_GRACE)  # the next call gets its whole limit again
        if _WATCHDOG.overtime:
            raise ImplementationHung  # it caught the interrupt and returned: late all the same
        return returned

    # -- protecting the process and the harness from the call (docs/trust.md) ----------------

    def _protected(self, fn, args, environment, limited=True):
        """``fn(args)`` under the time limit (``limited`` False: ``fn`` limits each call it
        makes), with the process state restored afterwards (what changed kept for the
        outcome), the output kept up to a bound, a heartbeat for a supervisor while it runs,
        and the harness checked once it is over, in the ``environment`` its server gives the call
        (:meth:`_environment_of`). What a thread changed in the state since the last call (a thread
        that call started, still at work) is put back first, and kept too."""
        between = process_state.restore_shared(self._settled) if self._settled is not None else ()
        before = self._settled = process_state.snapshot()
        self._capture.start()
        watch.beat(self.timeout)
        try:
            with in_environment(environment):
                return self._limited(fn, args) if limited else fn(args)
        finally:
            watch.rest()
            self._capture.stop()
            self._changed = tuple(f"{change} (between two calls)" for change in between) + process_state.restore(before)
            tamper.check(full=False)


def status_of(error):
    """The :class:`~simacc.harness.config.status.Status` of a property that raised ``error``
    (both engines judge with it): a skip, a hang, or a failure."""
    import pytest

    if isinstance(error, pytest.skip.Exception):
        return Status.SKIPPED
    return Status.HUNG if isinstance(error, ImplementationHung) else Status.FAIL


def check_the_end(impl, start):
    """Raise :class:`ProcessChanged` when, at a session's end, the state any thread can change
    differs from what it was at ``start`` (:func:`process_state.started`, before its first call),
    once the threads started since have ended: a thread a call started may change it after the
    last call, or between two tests, where no call's check sees it (CONTRACT.md §11.4)."""
    changed = process_state.settle(start)
    if changed:
        raise ProcessChanged(f"{impl.spec} changed the process outside its calls, found at the session's end once the "
                             f"threads started during it had ended (restored): {'; '.join(changed)} "
                             "(CONTRACT.md §11.4: a thread a call started acts for the call)")


def _released(error):
    """``error`` without the frame that caught it at the top of its traceback, and with the locals of
    the implementation's finished frames cleared: a reference cycle through them would keep
    each failed call's arguments and message (megabytes, in a hostile case) alive until a
    full garbage collection, call after call."""
    tb = error.__traceback__
    error.__traceback__ = tb.tb_next if tb is not None else None
    traceback.clear_frames(error.__traceback__)
    return error


def _said(error):
    """``Type: message`` of the implementation's error, cut to a bound (its message may be
    megabytes; it would be copied into every report)."""
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a message that cannot be printed is reported as such
        text = "(its message could not be printed)"
    return f"{type(error).__name__}: {clip(text)}" if text else type(error).__name__


class ImplementationError(Exception):
    """What the implementation raised, as its type and bounded message, with its traceback."""


def _bounded(error):
    """The implementation's error with its traceback but its message cut to a bound: the
    cause a failure is reported with."""
    return ImplementationError(_said(error)).with_traceback(error.__traceback__)


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
