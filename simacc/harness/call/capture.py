"""The implementation's output, kept up to a bound.

While a call runs, what it prints, through Python's ``sys.stdout``/``sys.stderr`` or the
file descriptors 1 and 2 (as C code does), goes to a temporary file of the runner's. After
the call the first :data:`LIMIT` bytes of a runner's life (one test) are kept, the rest is
only counted, and the file is emptied: a debug print left in, a megabyte a call, costs
neither memory nor disk, and pytest's capture, a command's output and a worker's reports only
ever carry the bounded part and one line saying how much was left out.
"""

import os
import sys
import tempfile

LIMIT = 64 * 1024  # bytes of the implementation's output kept per test


class Capture:
    """The output of one runner's calls: :meth:`start` and :meth:`stop` around each call;
    ``enabled=False`` (pytest's ``-s``) lets it through untouched."""

    def __init__(self, enabled=True):
        self.enabled = enabled
        self.kept = bytearray()
        self.dropped = 0
        self._fd = None
        self._text = None
        self._own = None  # copies of descriptors 1 and 2 as the runner's first call found them
        self._saved = None

    def start(self):
        if not self.enabled:
            return
        if self._fd is None:
            try:
                self._own = (os.dup(1), os.dup(2))  # one runner serves one test: they stay put meanwhile
            except OSError:  # no descriptor 1 or 2 to stand in for: nothing to capture
                self.enabled = False
                return
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            self._fd = self._file.fileno()
            self._text = open(os.dup(self._fd), "w", encoding="utf-8", errors="replace", buffering=1,  # noqa: SIM115
                              closefd=True)
        self._saved = (sys.stdout, sys.stderr)
        os.dup2(self._fd, 1)
        os.dup2(self._fd, 2)
        sys.stdout = sys.stderr = self._text

    def stop(self):
        if self._saved is None:
            return
        sys.stdout, sys.stderr = self._saved
        self._saved = None
        try:
            self._text.flush()
        except (OSError, ValueError):  # closed or broken by the code under test
            pass
        os.dup2(self._own[0], 1)
        os.dup2(self._own[1], 2)
        size = os.fstat(self._fd).st_size
        if size:
            room = max(LIMIT - len(self.kept), 0)
            self.kept += os.pread(self._fd, min(size, room), 0)
            self.dropped += size - min(size, room)
            os.ftruncate(self._fd, 0)
            os.lseek(self._fd, 0, os.SEEK_SET)

    @property
    def text(self):
        """What was kept, and a line saying how much was not (empty when nothing was printed)."""
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += (f"\n[simacc kept the first {LIMIT} bytes of the implementation's output: {self.dropped} more "
                     "were left out]")
        return text

    def close(self):
        self.stop()
        if self._fd is not None:
            for f in (self._text, self._file):
                try:
                    f.close()
                except (OSError, ValueError):
                    pass
            for fd in self._own:
                os.close(fd)
            self._fd = self._own = None
