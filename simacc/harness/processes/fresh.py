"""Fresh processes: copies of this process as it was just before it imported its first
implementation, for the work that must run where the implementation never ran: the
tensor-parallel ranks (:mod:`simacc.harness.sessions.ranks`), each importing the implementation anew,
and the grad modes of an in-process run after the first, one process each
(:mod:`simacc.harness.sessions.inprocess`; CONTRACT.md §11.5, §11.7).

A new interpreter costs an import of torch (a second or more); a copy costs a fork. So the
first import of an implementation (:func:`simacc.harness.call.impl.load`) first forks a *zygote*
(:func:`prepare`), a process that only waits and forks a child each time one is asked for. A
child starts with its user's import path and working directory, serves calls of importable
functions (:class:`Process`) until its user closes it, and ends with it.

What a copy has that a new interpreter would not: what was imported and done before the
zygote was made (the implementation never), Python's hash seed and the layout of its memory.
Each copy reseeds numpy's global generator from the operating system, as a new process does
at its first use (Python's ``random`` is reseeded at every fork), and runs torch on one
thread (the pool of threads libgomp kept in the parent does not survive a fork). Where a
difference matters (a tensor-parallel rank: servers start each rank as a new interpreter), or
where fork is missing or unsafe (JAX imported before the zygote: it runs threads of its own; a
CUDA device), a child is a new interpreter instead (``Process(new=True)``), with a hash seed of
its own: forked from a rank server that imported torch once for this process
(:func:`simacc.harness.processes.forkserver.rank_server`), or started anew where there is none:
slower, the same to its user.

Every process made here is waited for: a new interpreter when its user closes it, the zygote
when this process exits, and the zygote's children by the zygote before it ends, so no
``<defunct>`` process outlives a command.
"""

import atexit
import gc
import importlib
import io
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from multiprocessing.connection import Connection

from simacc.harness.processes import forkserver

# in its maker: our end of its socket, its pid, the modules it holds
_ZYGOTE = {"socket": None, "pid": None, "modules": frozenset()}
_LOCK = threading.Lock()
_COPY = {"is": False}  # this process is itself a fresh one: it makes no zygote of its own


class Died(Exception):
    """A fresh process ended before it answered."""


def prepare():
    """Fork the zygote, once per process, where fork is safe (see the module)."""
    if _ZYGOTE["socket"] is not None or _COPY["is"] or not hasattr(socket, "send_fds") or "jax" in sys.modules:
        return
    forkserver.scan_constants()  # before its copies: this process draws cases, and would scan at its first draw
    ours, theirs = socket.socketpair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: a fork with threads running
        pid = os.fork()
    if pid == 0:
        ours.close()
        _zygote(theirs)
    theirs.close()
    _ZYGOTE.update(socket=ours, pid=pid, modules=frozenset(sys.modules))
    atexit.register(_end_zygote)


def _end_zygote():
    """Close the zygote's socket (it ends once its children have) and wait for it."""
    zygote, pid = _ZYGOTE["socket"], _ZYGOTE["pid"]
    _ZYGOTE.update(socket=None, pid=None)
    if zygote is not None:
        zygote.close()
    if pid is not None:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def holds(module):
    """Whether the copies are made from a process that had imported ``module`` already: a
    copy then has it without importing it anew."""
    return module in _ZYGOTE["modules"]


def _zygote(channel):
    """Fork a child for every byte that arrives; end when the parent's end closes, once the
    children it made have ended (the kernel reaps them as they do)."""
    children = []
    try:
        gc.freeze()  # as a fork server does: its children's collections skip what it holds
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the parent
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
        while _asked(channel):
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                channel.close()
                ours.close()
                _child(theirs)
            socket.send_fds(channel, [str(pid).encode()], [ours.fileno()])
            children.append(pid)
            ours.close()
            theirs.close()
        _outlive(children)
    finally:
        os._exit(0)


def _outlive(children, grace=10.0):
    """(in the zygote, its parent gone) Wait for ``children`` to end (their users closed them),
    killing those still running after ``grace`` seconds: nothing it made is left unreaped."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.waitpid(-1, os.WNOHANG)  # with SIGCHLD ignored: ChildProcessError once none is left
        except ChildProcessError:
            return
        if time.monotonic() > deadline:
            for pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.02)


def _asked(channel):
    try:
        return channel.recv(1)
    except OSError:  # the parent's end is gone
        return b""


def _child(sock):
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _as_if_new()
        _serve(Connection(sock.detach()))
    finally:
        os._exit(0)


def _as_if_new():
    _COPY["is"] = True
    forkserver.reseed_numpy()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _new(fd):
    """The entry point of a child that is a new interpreter: serve on the socket ``fd``."""
    _COPY["is"] = True
    _serve(Connection(fd))


def _from_the_rank_server(rank, code, theirs):
    """A new interpreter's child forked by the server of ``rank`` (:func:`simacc.harness.processes.forkserver.rank_server`),
    running ``code`` on ``theirs`` as its descriptor 3; None where there is none."""
    address = forkserver.rank_server(rank)
    if address is None:
        return None
    with open(os.devnull, "rb") as nothing:
        return forkserver.request(address, ["-c", code, "3", json.dumps(sys.path)], (nothing.fileno(), 1, 2,
                                                                                    theirs.fileno()))


def _adopt(path, folder):
    sys.path[:] = path
    os.chdir(folder)


def _serve(conn):
    """Answer ``(target, args)`` requests with ``("ok", result)`` or ``("raised", line)``."""
    while True:
        try:
            target, args = _receive(conn)
        except (EOFError, OSError):
            return
        try:
            module, _, name = target.partition(":")
            answer = ("ok", getattr(importlib.import_module(module), name)(*args))
        except BaseException as e:  # noqa: BLE001 - the user hears of it
            answer = ("raised", f"{type(e).__name__}: {e}")
        try:
            _send(conn, answer)
        except Exception as e:  # noqa: BLE001 - an answer that does not pickle
            _send(conn, ("raised", f"its answer could not be sent: {type(e).__name__}: {e}"))


class _Pickler(pickle.Pickler):
    """A CPU tensor travels as a numpy array: several times quicker both ways than torch's
    own pickling (multiprocessing's pickler is slower still: it hands tensors over through
    shared memory), where a message is a few small tensors, thousands of times a check."""

    def reducer_override(self, obj):
        torch = sys.modules.get("torch")
        if torch is not None and type(obj) is torch.Tensor and obj.device.type == "cpu" and obj.dtype in _AS_NUMPY:
            return torch.from_numpy, (obj.detach().numpy(),)
        return NotImplemented


_AS_NUMPY = set()  # the torch dtypes numpy holds as they are (filled once torch is imported)


def _send(conn, obj):
    torch = sys.modules.get("torch")
    if torch is not None and not _AS_NUMPY:
        _AS_NUMPY.update((torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                          torch.float32, torch.float64))
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    conn.send_bytes(buffer.getbuffer())


def _receive(conn):
    return pickle.loads(conn.recv_bytes())


class Process:
    """A fresh process that serves calls (see the module), as a context manager; ``new``
    asks for a new interpreter even where a copy would do (a CUDA device, a rank). A new
    interpreter is forked from the server of ``rank`` (0 or 1) where there is one
    (:func:`simacc.harness.processes.forkserver.rank_server`: a new interpreter that has imported
    torch, with a hash seed of its own), else started now."""

    def __init__(self, new=False, rank=1):
        self._spawned = self._forked = None
        zygote = _ZYGOTE["socket"]
        if zygote is not None and not new:
            try:
                with _LOCK:
                    zygote.send(b"f")
                    pid, fds, _, _ = socket.recv_fds(zygote, 32, 1)
                self.conn, self.pid = Connection(fds[0]), int(pid)
                self._adopt_ours()
                return
            except (OSError, ValueError, IndexError):
                _ZYGOTE["socket"] = None  # the zygote is gone: new interpreters from now on
        ours, theirs = socket.socketpair()
        # this process's import path first: this module must be importable from it
        code = ("import json, sys; sys.path[:] = json.loads(sys.argv[2]); from simacc.harness.processes import fresh; "
                "fresh._new(int(sys.argv[1]))")
        with ours, theirs:
            self._forked = _from_the_rank_server(rank, code, theirs)
            if self._forked is None:
                env = dict(os.environ, PYTHONHASHSEED=str(forkserver.rank_hash_seed(rank)))
                self._spawned = subprocess.Popen(
                    [sys.executable, "-c", code, str(theirs.fileno()), json.dumps(sys.path)],
                    pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
            self.conn = Connection(os.dup(ours.fileno()))
        self.pid = (self._forked or self._spawned).pid
        self._adopt_ours()

    def _adopt_ours(self):
        """Give it this process's import path and working directory, as a process started
        beside this one now would have."""
        self.send("simacc.harness.processes.fresh:_adopt", list(sys.path), os.getcwd())
        kind, said = self.receive(60)
        if kind != "ok":
            raise Died(said)

    def send(self, target, *args):
        """Ask for ``target(*args)`` (``target``: ``"module:function"``); :meth:`receive` answers."""
        try:
            _send(self.conn, (target, args))
        except OSError as e:
            raise Died(f"it was gone before it was asked ({e})") from None

    def receive(self, timeout):
        """The answer, ``("ok", result)`` or ``("raised", line)``; :class:`Died` when the
        process ended first or ``timeout`` seconds passed (then it is killed)."""
        try:
            if self.conn.poll(timeout):
                return _receive(self.conn)
        except (EOFError, OSError):
            raise Died("it ended before it answered") from None
        self.kill()
        raise Died(f"it did not answer within {timeout:g} s (killed)")

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self):
        self.conn.close()  # its next receive ends it
        if self._spawned is not None:
            try:
                self._spawned.wait(5)
            except subprocess.TimeoutExpired:
                self._spawned.kill()
                self._spawned.wait()
        if self._forked is not None:
            try:
                self._forked.wait(5)
            except TimeoutError:
                self._forked.close()  # the server kills it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
