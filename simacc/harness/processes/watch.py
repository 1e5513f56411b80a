"""What the processes of a session leave behind for whoever watches over them: a heartbeat of
the call in progress, the count of calls that hung, the last words of a process that died,
and a command's own result.

They are plain files under one prefix (a simacc command's event stream, or a name in the
temporary folder that a plain pytest run hands to its xdist workers), so they reach the
watcher whatever the implementation does to the process that calls it:

* ``PREFIX.beat.PID``: 16 bytes through a shared mapping, written before and after each
  call (no system call): when the call started, on the system-wide monotonic clock, and
  its time limit; zeros between calls. The writer holds an ``flock`` on it, so a watcher
  tells a live writer from a dead one whose pid may have been reused. The supervisor
  reads them to enforce its own deadline (:class:`simacc.harness.sessions.session.Deadline`).
* ``PREFIX.hangs``: one byte per call that outlasted its limit; once there are
  :data:`HANG_BUDGET` of them, the remaining properties are not run.
* ``PREFIX.watchdog.PID``: where faulthandler's watchdog writes as it ends a process whose
  call ignored the time limit; ``PREFIX.internal.PID``: pytest's internal error in a worker,
  which then ends itself (a dead worker is a crash xdist handles; a worker that finishes
  with tests left makes xdist's controller fail); ``PREFIX.killed.PID``: written by the
  supervisor before it kills a process. :func:`last_words` turns them into a status and a line.
* ``PREFIX.result``: the exit code a supervised command reached (:func:`report_result`).
"""

import glob
import os
import re
import struct
import sys
import tempfile
import time

from simacc.harness.processes.atomic import write_atomically

HANG_BUDGET = 2  # calls past the time limit in a session before the rest is not run
WATCHDOG_GRACE = 5.0  # seconds past the time limit before the watchdog ends the process
INTERRUPTED_GRACE = 2.0  # seconds an interrupted call has to stop (unwinding takes microseconds)
WATCHDOG_ROOM = 20.0  # extra seconds the watchdog is armed with, so that it is re-armed rarely
SUPERVISOR_MARGIN = WATCHDOG_GRACE + WATCHDOG_ROOM + 5.0  # past the limit: the watchdog had its chance
_BEAT = struct.Struct("dd")
_LAST_WORDS = ("watchdog", "internal", "killed")
_MONOTONIC = time.monotonic  # the real clock, whatever a rank's shifted one reads (sessions.ranks)


class _Process:
    """This process's side: the prefix, its heartbeat mapping and its watchdog file (a
    forked child starts afresh: the mapping and the file are named for its parent)."""

    def __init__(self, prefix=None):
        self.prefix = prefix
        self.pid = os.getpid()
        self.beat = None  # the mmap, opened at the first call
        self.watchdog = None


_HERE = _Process()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _HERE.__init__(_HERE.prefix))


def plain_prefix():
    """A fresh prefix in the temporary folder for a pytest run no simacc command watches."""
    return os.path.join(tempfile.gettempdir(), f"simacc-{os.getpid()}-{os.urandom(4).hex()}")


def configure(prefix):
    """Make ``prefix`` this process's session prefix (None: nobody watches)."""
    if prefix != _HERE.prefix:
        _HERE.__init__(prefix)


def prefix():
    return _HERE.prefix


def beat(limit):
    """A call with time limit ``limit`` (seconds) starts now."""
    mapping = _mapping()
    if mapping is not None:
        _BEAT.pack_into(mapping, 0, _MONOTONIC(), limit)


def rest():
    """The call is over."""
    mapping = _HERE.beat
    if mapping is not None:
        _BEAT.pack_into(mapping, 0, 0.0, 0.0)


def _mapping():
    here = _HERE
    if here.prefix is None or here.beat is not None:
        return here.beat
    import fcntl
    import mmap

    path = f"{here.prefix}.beat.{here.pid}"
    fd = os.open(f"{path}.new", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.ftruncate(fd, _BEAT.size)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while this process lives (the descriptor stays open)
    os.replace(f"{path}.new", path)  # locked before a watcher can see it
    here.beat = mmap.mmap(fd, _BEAT.size)
    return here.beat


def read_beat(path):
    """``(pid, started, limit)`` of a live writer's heartbeat file, or None (a dead writer's
    file is removed)."""
    import fcntl

    try:
        pid = int(path.rpartition(".")[2])
        fd = os.open(path, os.O_RDONLY)
    except (ValueError, OSError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # locked: its writer is alive
            data = os.pread(fd, _BEAT.size, 0)
            return (pid, *_BEAT.unpack(data)) if len(data) == _BEAT.size else None
        os.unlink(path)  # nobody holds it: its writer is gone
        return None
    finally:
        os.close(fd)


def beats(prefix_):
    return glob.glob(glob.escape(prefix_) + ".beat.*")


def note_hang(prefix_=None):
    """Count one call that outlasted its time limit."""
    where = prefix_ or _HERE.prefix
    if where is not None:
        _append(f"{where}.hangs", b"h")


def hang_count(prefix_=None):
    where = prefix_ or _HERE.prefix
    try:
        return os.stat(f"{where}.hangs").st_size if where else 0
    except OSError:
        return 0


def watchdog_file():
    """The file faulthandler's watchdog writes to before it ends this process: the session's
    ``watchdog`` file, or the process's own stderr when nobody watches."""
    here = _HERE
    if here.prefix is None:
        return sys.__stderr__
    if here.watchdog is None:
        here.watchdog = open(f"{here.prefix}.watchdog.{here.pid}", "a", encoding="utf-8")  # noqa: SIM115 - kept open
    return here.watchdog


def say_last_words(kind, text, pid=None, prefix_=None):
    """Leave ``text`` (one line) as the last words of process ``pid`` (default: this one)."""
    where = prefix_ or _HERE.prefix
    if where is not None:
        _append(f"{where}.{kind}.{pid or os.getpid()}", text.encode(errors="replace")[:2000])


def _append(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def last_words(prefix_, pid=None):
    """``(kind, line)`` from what a dead process left (``pid``'s, or the oldest a process
    left), consumed; None when it left nothing. ``kind`` is ``watchdog``, ``internal`` or
    ``killed``."""
    found = []
    for kind in _LAST_WORDS:
        pattern = f"{glob.escape(prefix_)}.{kind}.{pid if pid is not None else '*'}"
        for path in glob.glob(pattern):
            try:
                found.append((os.stat(path).st_mtime, kind, path))
            except OSError:
                continue
    for _, kind, path in sorted(found):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(64 * 1024)
        except OSError:
            continue
        if not text.strip():
            continue
        os.unlink(path)
        return kind, _summary(kind, text)
    return None


_WHERE = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)', re.M)
_TIMEOUT = re.compile(r"Timeout \((\d+):(\d+):(\d+)")


def _summary(kind, text):
    """One line from a last-words file: faulthandler's traceback becomes where it stood."""
    if kind != "watchdog":
        return " ".join(text.split())
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    calling = next((b for b in blocks if " in _limited" in b), None)  # the thread in the runner's call
    timeout, where = _TIMEOUT.search(text), _WHERE.search(calling or text)
    after = ""
    if timeout:
        h, m, s = map(int, timeout.groups())
        after = f" {h * 3600 + m * 60 + s} s after it was last armed"
    at = f"; it was at {where.group(1)}:{where.group(2)} in {where.group(3)}" if where else ""
    return (f"the watchdog ended it{after}: a call outlasted its time limit and did not stop when interrupted "
            f"(stuck in C code, or it caught the interrupt){at}")


def report_result(prefix_, code):
    """Record the exit code a supervised command reached (written last, whole)."""
    write_atomically(f"{prefix_}.result", str(int(code)))


def reported_result(prefix_):
    """The exit code a supervised command reported, or None."""
    try:
        with open(f"{prefix_}.result", encoding="utf-8") as f:
            return int(f.read(16))
    except (OSError, ValueError):
        return None


def clean(prefix_):
    """Remove every file of the session ``prefix_`` (a plain pytest run's, at its end)."""
    for path in glob.glob(glob.escape(prefix_) + ".*"):
        try:
            os.unlink(path)
        except OSError:
            pass
