"""The process-wide state a call must leave as it found it (CONTRACT.md §11.4): torch's
default dtype and device, grad mode, inference mode, the deterministic-algorithms flag, autograd's
anomaly detection, the thread count and the float32 matmul precision, and the working directory,
every signal's handler and the calling thread's signal mask (a serving process has its own
handlers, a signal blocked never reaches them, and the harness relies on ``SIGALRM`` for the time
limit and ``SIGINT`` for Ctrl-C).

The runner takes a :func:`snapshot` before each call and :func:`restore`\\ s it after, keeping
what had changed for the property that judges it; the implementation's import is wrapped
the same way. So no change of global state outlives the call that made it: a default device
of ``meta`` cannot turn the next test into an internal error, a default dtype of float64
cannot change the next call's draws, and a change of directory cannot move a repro file.

Any thread can change the state a whole process shares (:data:`SHARED`), so a thread a call
started can change it after the call has returned: between two calls, or after the last. The
runner compares it between its calls too (:func:`restore_shared`), and a session compares it once
more at its end (:func:`settle`), after the threads started since its start have ended, so that
whether the change is seen does not depend on when the thread made it.

A snapshot costs about a microsecond: the default device is read as the depth of torch's
function-mode stack (where ``torch.set_default_device`` puts it), and in full only when that
depth is not zero.

A command's xdist worker runs torch on its share of the cores (:func:`share_the_cores`); the
property that judges a call's changes makes its calls at torch's own count (:func:`own_threads`).
"""

import contextlib
import os
import signal
import threading
import time
from typing import NamedTuple

try:
    from _signal import getsignal as _handler  # signal.getsignal's enum conversions cost microseconds
except ImportError:  # another interpreter
    _handler = signal.getsignal

import torch

# every signal a handler can be set for (SIGKILL and SIGSTOP cannot be caught)
_SIGNALS = tuple(sorted(set(signal.valid_signals()) - {getattr(signal, "SIGKILL", None), getattr(signal, "SIGSTOP", None)}))
_modes = getattr(torch._C, "_len_torch_function_stack", None)
_SIGMASK = hasattr(signal, "pthread_sigmask")
_PER_BACKEND = "set per backend (torch.backends.*.fp32_precision)"  # a precision torch's one name cannot say
_OWN_THREADS = []  # torch's thread count before share_the_cores changed it, where it did
# what any thread can change: the rest is the calling thread's own (grad and inference mode, the
# default device, the signal mask) or set from the main thread only (the handlers)
SHARED = ("dtype", "deterministic", "anomaly", "threads", "precision", "cwd")
SETTLE_S = 2.0  # how long a session's end waits, in all, for the threads started during the session


class Snapshot(NamedTuple):
    dtype: object
    modes: int  # the torch function modes active (a default device is one)
    device: object  # the default device when ``modes`` is not 0, else None (cpu)
    grad: bool
    inference: bool
    deterministic: tuple
    anomaly: tuple  # autograd's anomaly detection: on, and whether it checks for NaN (False while off: unseen)
    threads: int
    precision: str  # torch's float32 matmul precision
    cwd: str | None
    handlers: tuple
    blocked: set  # the calling thread's signal mask


def snapshot():
    """The process state now (a plain tuple in :class:`Snapshot`'s order: built a few times
    faster than the named one, and compared the same)."""
    modes = _modes() if _modes is not None else 1
    try:
        cwd = os.getcwd()
    except OSError:  # the folder was removed
        cwd = None
    return (torch.get_default_dtype(), modes, torch.get_default_device() if modes else None, torch.is_grad_enabled(),
            torch.is_inference_mode_enabled(),
            (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
            _anomaly_state(), torch.get_num_threads(), _precision(), cwd, tuple(map(_handler, _SIGNALS)), _mask())


def restore(before):
    """Put back what changed since ``before`` (a :func:`snapshot`); a tuple of one line per
    change, empty when nothing changed."""
    now = snapshot()
    if now == before:
        return ()
    now, before = Snapshot(*now), Snapshot(*before)
    changes = []
    if now.dtype != before.dtype:
        changes.append(f"default dtype {_name(before.dtype)} -> {_name(now.dtype)}")
        torch.set_default_dtype(before.dtype)
    if (now.modes, now.device) != (before.modes, before.device):
        changes.append(f"default device {before.device or 'cpu'} -> {torch.get_default_device()}")
        _restore_device(before)
    if now.grad != before.grad:
        changes.append(f"grad mode {_on(before.grad)} -> {_on(now.grad)}")
        torch.set_grad_enabled(before.grad)
    if now.inference != before.inference:  # a guard the implementation holds: only it can end it
        changes.append(f"inference mode {_on(before.inference)} -> {_on(now.inference)} (the one change not undone: "
                       "a guard the implementation holds)")
    if now.deterministic != before.deterministic:
        changes.append(f"deterministic algorithms {_deterministic(before)} -> {_deterministic(now)}")
        torch.use_deterministic_algorithms(before.deterministic[0], warn_only=before.deterministic[1])
    if now.anomaly != before.anomaly:
        changes.append(f"anomaly detection {_anomaly(before)} -> {_anomaly(now)}")
        torch.set_anomaly_enabled(*before.anomaly)
    if now.threads != before.threads:
        changes.append(f"thread count {before.threads} -> {now.threads}")
        torch.set_num_threads(before.threads)
    if now.precision != before.precision:
        changes.append(f"float32 matmul precision {before.precision} -> {now.precision}")
        if before.precision != _PER_BACKEND:  # a state no one name says cannot be put back by one (torch warns)
            torch.set_float32_matmul_precision(before.precision)
    if now.cwd != before.cwd:
        changes.append(f"working directory {before.cwd} -> {now.cwd or '(removed)'}")
        if before.cwd is not None:
            os.chdir(before.cwd)
    for number, old, new in zip(_SIGNALS, before.handlers, now.handlers):
        if new is not old:
            changes.append(f"{_signal_name(number)} handler replaced")
            try:
                signal.signal(number, old)
            except (ValueError, TypeError):  # outside the main thread, or not a handler Python set
                pass
    if now.blocked != before.blocked:
        names = ", ".join(sorted(map(_signal_name, now.blocked ^ before.blocked)))
        changes.append(f"signal mask: {names} {'blocked' if now.blocked > before.blocked else 'changed'}")
        signal.pthread_sigmask(signal.SIG_SETMASK, before.blocked)
    return tuple(changes)


def restore_shared(settled):
    """Put back what changed since ``settled`` (a :func:`snapshot`) in the state any thread can
    change (:data:`SHARED`), as :func:`restore` does: what a thread changed between two calls."""
    now = snapshot()
    if now == settled:
        return ()
    now, settled = Snapshot(*now), Snapshot(*settled)
    return restore(now._replace(**{name: getattr(settled, name) for name in SHARED}))


def started():
    """The state and the threads now: what :func:`settle` compares a session's end with."""
    return snapshot(), frozenset(threading.enumerate())


def settle(start, wait=SETTLE_S):
    """Once the threads started since ``start`` (a :func:`started`) have ended, ``wait`` seconds
    at most in all, put back what changed since in the state any thread can change, as
    :func:`restore` does: a session's last word on §11.4, whatever a call's thread did and
    when."""
    state, threads = start
    deadline = time.monotonic() + wait
    for thread in set(threading.enumerate()) - threads - {threading.current_thread()}:
        thread.join(max(0.0, deadline - time.monotonic()))
    return restore_shared(state)


def _precision():
    """torch's float32 matmul precision, or what says it was set per backend (its newer
    ``torch.backends.*.fp32_precision``) to values the one name cannot say: torch's getter then
    raises, and the harness never sets them so."""
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:
        return _PER_BACKEND


def _mask():
    """The calling thread's blocked signals (empty where the system has no ``pthread_sigmask``)."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, ()) if _SIGMASK else set()


def _restore_device(before):
    if before.modes:
        torch.set_default_device(before.device)
        return
    torch.set_default_device(None)
    pop = getattr(torch._C, "_pop_torch_function_stack", None)
    while pop is not None and _modes() > 0:  # a mode entered and never left
        pop()


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal past SIGRTMIN
        return f"signal {number}"


def _name(dtype):
    return str(dtype).removeprefix("torch.")


def _on(flag):
    return "on" if flag else "off"


def _anomaly_state():
    on = torch.is_anomaly_enabled()
    return on, on and torch.is_anomaly_check_nan_enabled()  # the NaN check is set anew whenever it is turned on


def _anomaly(state):
    mode, check_nan = state.anomaly
    return f"{_on(mode)}{' (NaN checks off)' if mode and not check_nan else ''}"


def _deterministic(state):
    mode, warn_only = state.deterministic
    return f"{_on(mode)}{' (warn only)' if mode and warn_only else ''}"


def share_the_cores(processes):
    """Run torch on this process's share of the cores, ``processes`` running at once (an xdist
    worker of a simacc command's session): each on torch's own count, as many threads as
    cores, they would run that many times too many, and the threads OpenMP leaves spinning
    after each parallel op take the cores from the other workers (a check took 11% longer)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    share = max(1, cores // max(1, processes))
    if share != torch.get_num_threads():
        if not _OWN_THREADS:
            _OWN_THREADS.append(torch.get_num_threads())
        torch.set_num_threads(share)


@contextlib.contextmanager
def own_threads():
    """Torch's own thread count for the duration, where :func:`share_the_cores` changed it:
    the count of a serving process, from which a call's change to it is judged (a call that
    sets one thread changes nothing in a worker given one)."""
    if not _OWN_THREADS:
        yield
        return
    shared = torch.get_num_threads()
    torch.set_num_threads(_OWN_THREADS[0])
    try:
        yield
    finally:
        torch.set_num_threads(shared)
