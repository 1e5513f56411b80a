"""Telling a real Ctrl-C from a ``KeyboardInterrupt`` that the code under test raised.

Both arrive as the same exception. While a :class:`Recorder` is active, the ``SIGINT``
handler counts each signal before doing what the previous handler did (Python's own raises
``KeyboardInterrupt``), so a ``KeyboardInterrupt`` that comes with no new signal was raised
by the code: a failure of the property, not the user stopping the run.
"""

import signal
import threading


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

    def real_since(self, count):
        """Whether a ``SIGINT`` arrived since the count was ``count``."""
        return self.count > count
