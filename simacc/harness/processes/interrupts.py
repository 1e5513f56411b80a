"""Telling a real Ctrl-C from a ``KeyboardInterrupt`` that the code under test raised.

Both arrive as the same exception (and a SIGTERM, in a simacc command: :func:`stop_on_sigterm`).
While a :class:`Recorder` is active, the ``SIGINT`` handler counts each signal before doing
what the previous handler did (Python's own raises ``KeyboardInterrupt``), so a
``KeyboardInterrupt`` that comes with no new signal was raised by the code: a failure of the
property, not the user stopping the run.

A Ctrl-C can also land where an exception breaks what it interrupts (half-way through
starting a child, inside ``Popen.poll``): :func:`deferred` holds it back until such a
block ends.
"""

import contextlib
import signal
import threading

STOPS = {signal.SIGINT, signal.SIGTERM}  # what stops a session (Ctrl-C, a CI's time limit)


class Terminated(KeyboardInterrupt):
    """A SIGTERM (a CI's time limit, ``timeout``, ``kill``), taken as a Ctrl-C is."""


def stop_on_sigterm():
    """From now on, take SIGTERM as a Ctrl-C (in a simacc command run as a program): the
    command stops its children, says what it has and removes its temporary folders, which
    dying of the signal would leave behind. It passes the SIGTERM on to the children it may
    not have reached (:meth:`~simacc.harness.sessions.session.Supervisor.pass_on`); a later
    one is ignored, the command being on its way out already."""
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum, frame):
    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # not SIG_IGN, which a new interpreter would inherit
    raise Terminated


class Recorder:
    """Counts the ``SIGINT`` signals that arrive while it is active (in the main thread; in
    another thread, or when ``SIGINT`` is ignored, none is ever counted)."""

    def __init__(self):
        self.count = 0
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):
            self._previous = previous

            def counted(signum, frame):
                self.count += 1
                previous(signum, frame)

            signal.signal(signal.SIGINT, counted)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def real(self, error, count):
        """Whether ``error``, a ``KeyboardInterrupt``, stops the run: a SIGTERM taken as a
        Ctrl-C (:class:`Terminated`), or one that came with a ``SIGINT`` since the count was
        ``count``."""
        return isinstance(error, Terminated) or self.count > count


@contextlib.contextmanager
def deferred():
    """Hold Ctrl-C and SIGTERM back while the block runs, and hand one that came to its
    handler when the block ends. For a block that a ``KeyboardInterrupt`` must not cut in
    two: starting a child and keeping its handle (cut, the child runs on with nobody to stop
    it), or a look at a child (:func:`simacc.harness.sessions.session.ended`). Python runs signal
    handlers in the main thread only: elsewhere there is nothing to hold back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came = []
    previous = {}
    for number in STOPS:
        if callable(signal.getsignal(number)):  # an ignored or default one raises nothing
            previous[number] = signal.signal(number, lambda signum, frame: came.append((signum, frame)))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if came:
            signum, frame = came[0]
            previous[signum](signum, frame)
