"""A fork server: one interpreter that imports the heavy packages once (torch, pytest,
hypothesis, xdist: the cost every check pays) and forks each process a command starts from
that state, so a check imports torch once instead of once per child session, xdist worker and
rank (issue 36 measured a check at 3.8 imports of torch).

A command asks for a process by running the tiny client :mod:`simacc.harness.processes.forkclient`
(``python -S``, the standard library only, milliseconds) where it would have run ``python``: the
client hands the server its standard streams, arguments, environment, working directory and
process group, and stands in for the forked process to whoever started it: it passes on
``SIGTERM``, ``SIGHUP`` and ``SIGQUIT``, and exits as the forked process did (its code, or the
same signal), so ``subprocess`` and xdist's ``popen`` gateways see what they would have seen.
The forked process joins the client's process group, where a Ctrl-C at the terminal, or a
``killpg`` of the group, reaches it as it would have reached a new interpreter.

What a forked process has that a new interpreter would not: the server's hash seed and the
modules it imported. A session server imports, beside the packages, the parts of simacc every
session imports (the plugin, the properties' shared modules, the strategies; never an
implementation, the zoo's included), which each session and worker would otherwise import
anew. simacc's contract reads sglang's ``SGLANG_*`` settings at import, as sglang does, so such
a server forks only for a client with the same ``SGLANG_*`` settings as its own; another client
becomes ``python`` itself. A session server imports ``numpy.random`` too, which numpy loads at
its first use (28 ms in each process, and Hypothesis uses it in every one); each forked process
reseeds its global generator where the server has one, and Python's ``random`` reseeds itself
at a fork. The server runs no thread and never touches CUDA, so a fork
is safe. A rank server, started with another hash seed and importing torch, simacc's runner and
the strategies (the case types and records each rank is sent), forks the ranks that must be new
interpreters (:mod:`simacc.harness.sessions.ranks`): rank 1's, and where rank 0 cannot be a copy,
rank 0's, with a hash seed of its own (:func:`rank_hash_seed`).

The server reaps every child it forks and tells its client how it ended; it kills what is
left, removes its socket and ends when its own parent closes its standard input (the parent
may have died of a signal, with nobody left to remove it). Where fork or ``send_fds`` is
missing, :func:`command` is plain ``python``.
"""

import atexit
import contextlib
import gc
import importlib
import marshal
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from simacc.harness.processes.forkclient import frame, request

# what every session imports, each name a module or ``package.prefix*`` (the package's modules
# whose names start with prefix); simacc's are names here, not imports: the properties, never an
# implementation
SESSION_PACKAGES = ("torch", "numpy.random", "pytest", "_pytest.*", "xdist.*", "execnet", "hypothesis",
                    "hypothesis.extra.pytestplugin", "hypothesis.strategies", "hypothesis.stateful",
                    "simacc.harness.plugin.*", "simacc.properties.test_*")
# what every rank imports, never an implementation: simacc's runner, and the strategies, where the case types and
# records a rank is sent live (unpickling them imports the package, Hypothesis and simacc's references, which keep
# no state: 0.15 s of CPU in each rank, paid once here instead)
RANK_PACKAGES = ("torch", "numpy", "simacc.harness.sessions.ranks", "simacc.harness.call.runner", "simacc.strategies")
# a session server a process may share (the one that forked it, or one its parent offers): its
# address, and the interpreter it runs (a process of another interpreter never shares it)
ADDRESS, PYTHON, SESSION = "SIMACC_FORK_SERVER", "SIMACC_FORK_SERVER_PYTHON", "SIMACC_FORK_SERVER_SESSION"
CLIENT = Path(__file__).with_name("forkclient.py")
FOLDER = "simacc-fork-"  # the prefix of the temporary folder a server's socket is made in
_SERVERS = {}  # (role, fingerprint) -> Server, in the process that started them
_OWN_PATH = []  # in a server: the entries of sys.path its own PYTHONPATH put there
_RANKS = []  # in a session server: the rank server it started
_LISTENING = []  # in a server: its own address
_SGLANG = {}  # in a server that imported simacc's own modules: the SGLANG_* settings they read


def available():
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")


def rank_hash_seed(rank=1):
    """The ``PYTHONHASHSEED`` of rank ``rank``'s new interpreters (rank 1, or rank 0 where it
    cannot be a copy), other than this process's and than the other rank's: this process's
    successor for rank 1 and its second successor for rank 0 when it is set, else a random one
    (this process's is random too: two agree with probability 2**-32)."""
    given = os.environ.get("PYTHONHASHSEED", "random")
    if given.isdigit():
        return (int(given) + 1 - rank) % (2**32 - 1) + 1
    return secrets.randbelow(2**32 - 1) + 1


class Server:
    """A fork server this process started: a new interpreter that imported ``packages``
    (with ``hash_seed``, or this process's), listening at ``address``; with ``ranks_now`` it
    starts its rank server at once, beside its own imports (else at the first request). It
    ends when this process closes it, or exits."""

    def __init__(self, packages, hash_seed=None, ranks_now=False):
        # the server removes it as it ends (this process may have died first, of a signal)
        self._folder = tempfile.TemporaryDirectory(prefix=FOLDER, ignore_cleanup_errors=True)
        self.address = str(Path(self._folder.name) / "s")
        env = dict(os.environ)
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = str(hash_seed)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "simacc.harness.processes.forkserver", self.address,
             *(["--ranks-now"] if ranks_now else []), *packages], stdin=subprocess.PIPE, env=env)

    @property
    def alive(self):
        return self.process.poll() is None

    def close(self):
        if self.process.stdin is not None:
            self.process.stdin.close()  # the server kills what it still runs, and ends
        waited = wait_for_one([self.process], 15)
        try:
            self.process.wait(0 if waited else 15)  # 15 s in all, then it is killed
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._folder.cleanup()


def wait_for_one(processes, timeout):
    """Wait until one of ``processes`` (``Popen`` objects) has ended, or ``timeout`` seconds
    have passed; its end is heard at once through pidfds (``Popen.wait`` with a timeout looks
    every few ms, up to 50 ms apart). False where the system has none: nothing was waited."""
    fds = []
    try:
        fds += [os.pidfd_open(process.pid) for process in processes if process.returncode is None]
        if fds:
            select.select(fds, [], [], timeout)
        return True
    except (AttributeError, OSError):
        return False
    finally:
        for fd in fds:
            os.close(fd)


def _fingerprint():
    """What a server's imports may have read from the environment: all of it but simacc's and
    sglang's own settings (read by the forked process itself) and a few that change freely."""
    volatile = ("SIMACC_", "SGLANG_", "PYTEST_", "PWD", "OLDPWD", "_")
    return tuple(sorted((k, v) for k, v in os.environ.items() if not k.startswith(volatile)))


def _cached(role, make):
    """This process's server for ``role``, started by ``make()`` at the first call and kept
    for the rest of the process (started anew where the environment changed, or it died)."""
    if not available():
        return None
    key = (role, _fingerprint())
    found = _SERVERS.get(key)
    if found is None or not found.alive:
        if not _SERVERS:
            atexit.register(close_all)
        found = _SERVERS[key] = make()
    return found


def server(ranks_now=False):
    """The session server this process uses: the one its environment offers (``SIMACC_FORK_SERVER``,
    for the same interpreter), else its own (see :class:`Server`; ``ranks_now`` for a new one);
    None where fork servers are not available."""
    if _offered():
        return Offered(os.environ[ADDRESS])
    return _cached("session", lambda: Server(SESSION_PACKAGES, ranks_now=ranks_now))


def offer(found):
    """Offer the server ``found`` to the processes this one starts from now on (see :func:`server`)."""
    os.environ.update({ADDRESS: found.address, PYTHON: sys.executable, SESSION: str(os.getsid(0))})


def _offered():
    """Whether this process's environment offers it a session server it can use: one of the same
    interpreter, in the same session (the processes it forks join their clients' process groups,
    which they can only do within one session: a command started in a session of its own, as a
    background job's Ctrl-C or a CI's kill needs, starts its own)."""
    return (available() and bool(os.environ.get(ADDRESS)) and os.environ.get(PYTHON) == sys.executable
            and os.environ.get(SESSION) == str(os.getsid(0)))


class Offered:
    """A session server this process was offered: another process's, never closed here."""

    alive = True

    def __init__(self, address):
        self.address = address


def rank_server(rank=1):
    """The address of a server of new-interpreter ranks (torch imported, a hash seed other
    than this process's); None where there is none. Rank 1's: the one of the session server
    that forked this process, asked for, else this process's own. Rank 0's, for where rank 0
    cannot be a copy of this process (the implementation imported already): this process's
    own, with a hash seed other than rank 1's too."""
    if rank == 1 and _offered():
        forked = request(os.environ[ADDRESS], [], kind="ranks")
        if forked is not None:
            return forked.address
    found = _cached(f"rank {rank}", lambda: Server(RANK_PACKAGES, rank_hash_seed(rank)))
    return found.address if found is not None else None


def close_all():
    while _SERVERS:
        _SERVERS.popitem()[1].close()


def client(address):
    """The command line that runs ``python ARGS`` through the server at ``address``: append ARGS."""
    return [sys.executable, "-S", str(CLIENT), address]


def command(args, address=None):
    """``[python, *args]`` as a forked process of the server at ``address`` (default: this
    process's session server), or a new interpreter where there is none."""
    if address is None:
        found = server()
        address = found.address if found is not None else None
    return [*client(address), *args] if address else [sys.executable, *args]


# -- the server ------------------------------------------------------------------------------------


def _serve(address, packages):
    """(the server's main) Listen at ``address`` first (clients queue until it accepts), import
    ``packages`` (after starting its rank server, with ``--ranks-now`` first among them),
    then fork a child for each request until standard input closes."""
    # a Ctrl-C, or a SIGTERM to its parent's group (a CI's time limit), is for the forked processes, in their
    # clients' groups, and for its parent, which ends it once they have stopped
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    _adopt_orphans()
    _OWN_PATH[:] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    _LISTENING[:] = [address]
    listener.listen(64)
    if packages[:1] == ["--ranks-now"]:
        packages = packages[1:]
        _ranks()
    for name in packages:
        _import(name)
    if any(name.startswith("simacc.") for name in packages):
        _SGLANG["settings"] = _sglang(os.environ)
    scan_constants()
    # what it imported lives as long as it does: the collections of what it forks skip it (with
    # torch imported a full one takes a tenth of a second, and Hypothesis runs one in each process)
    gc.freeze()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # the wakeup fd hears it
    children = {}  # pid -> the client's connection
    while True:
        waiting = [listener, sys.stdin, wake_read, *children.values()]
        try:
            ready, _, _ = select.select(waiting, [], [])
        except InterruptedError:
            ready = [wake_read]
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1024):
            break  # the parent is done: so is every child
        if wake_read in ready:
            os.read(wake_read, 4096)
            _reap(children)
        if listener in ready:
            conn, _ = listener.accept()
            pid = _fork(conn, listener, wake_read, wake_write)
            if pid is not None:
                children[pid] = conn
        for pid, conn in list(children.items()):
            if conn in ready and not _peek(conn):  # the client died: so does what it stood in for
                _kill(pid)
    for pid in children:
        _kill(pid)
    for ranks in _RANKS:
        ranks.close()
    deadline = time.monotonic() + 10  # what it forked, and the orphans it adopted, end and are reaped
    while _reap(children) and time.monotonic() < deadline:  # a killed child's client hears of it, and ends
        time.sleep(0.02)


def scan_constants():
    """Hypothesis's scan of the local modules for constants to draw, in a process about to
    fork (where Hypothesis is imported): each process forked after it would scan at its first
    draw (0.1 s with torch imported), and scans then only the modules imported since. The
    functions are Hypothesis's private ones: where they are missing, forked processes scan
    as before. Hypothesis's folder is left as it was (unset: each process finds its own, from
    its own environment; or the one this process set)."""
    if "hypothesis" not in sys.modules:
        return
    try:
        from hypothesis import configuration
        from hypothesis.internal.conjecture.providers import _get_local_constants
    except ImportError:
        return
    if "__hypothesis_home_directory" not in vars(configuration):
        return
    folder = vars(configuration)["__hypothesis_home_directory"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Hypothesis warns of storage used while a plugin loads
        _get_local_constants()
    configuration.set_hypothesis_home_dir(folder)  # the scan's cache would have fixed it


def _import(name):
    """Import the module ``name``, or each module ``package.prefix*`` names; what fails to
    import is left to the forked processes."""
    import pkgutil

    package, _, prefix = name.rpartition(".")
    if not prefix.endswith("*"):
        package, prefix = name, None
    try:
        module = importlib.import_module(package)
        if prefix is not None:
            for found in pkgutil.iter_modules(module.__path__):
                if found.name.startswith(prefix[:-1]):
                    importlib.import_module(f"{package}.{found.name}")
    except Exception:  # noqa: BLE001 - an import error, or a module that fails as it runs
        pass


def _adopt_orphans():
    """Become the subreaper of what the forked processes start (Linux's PR_SET_CHILD_SUBREAPER):
    a process whose parent ended before it (a zygote of a worker that ended with ``os._exit``)
    is then this server's to reap, not left ``<defunct>`` under an init that does not reap."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _peek(conn):
    try:
        return conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return b""


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(children):
    """Reap every child that has ended, telling the clients of those it forked how; whether
    some child is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        conn = children.pop(pid, None)
        if conn is not None:
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            _say(conn, {"exit": code})
            conn.close()


def _say(conn, message):
    try:
        conn.sendall(frame(message))
    except OSError:
        pass


def _receive_request(conn):
    """The client's request (:func:`~simacc.harness.processes.forkclient.request`): its header and
    its file descriptors."""
    raw, fds, _, _ = socket.recv_fds(conn, 4, 16)
    size = int.from_bytes(raw, "big")
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise OSError("the client went away")
        body += chunk
    return marshal.loads(body), fds


def _ranks():
    """(in a session server) Its rank server, started at the first call: torch imported, a
    hash seed other than this server's (and so than every process it forks)."""
    if not _RANKS or not _RANKS[0].alive:
        _RANKS[:] = [Server(RANK_PACKAGES, rank_hash_seed(1))]
    return _RANKS[0]


def _fork(conn, listener, wake_read, wake_write):
    try:
        asked, fds = _receive_request(conn)
    except (OSError, ValueError, EOFError, TypeError):
        conn.close()
        return None
    ranks = asked.get("kind") == "ranks"
    if ranks or (_SGLANG and _sglang(asked["env"]) != _SGLANG["settings"]):
        for fd in fds:
            os.close(fd)
        if ranks:
            _say(conn, {"address": _ranks().address})
        conn.close()  # refused, its imports reading other settings: the client becomes python itself
        return None
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        _say(conn, {"pid": pid})
        return pid
    try:
        signal.set_wakeup_fd(-1)
        for fd in (wake_read, wake_write):
            os.close(fd)
        listener.close()
        conn.close()
        code = _become(asked, fds)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported as a new interpreter would report it
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - its streams may be gone
        pass
    os._exit(code)


def _sglang(environ):
    return {k: v for k, v in environ.items() if k.startswith("SGLANG_")}


def _become(asked, fds):
    """(in the forked child) Take the client's place and run its ``python`` arguments."""
    try:
        os.setpgid(0, asked["pgid"])
    except OSError:
        pass
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    high = [os.dup(fd) for fd in fds]  # out of the way of the targets 0, 1, 2, ...
    for fd in fds:
        os.close(fd)
    for target, fd in enumerate(high):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(asked["cwd"])
    os.environ.clear()
    os.environ.update(asked["env"], **{ADDRESS: _LISTENING[0], PYTHON: sys.executable, SESSION: str(os.getsid(0))})
    reseed_numpy()
    args = asked["argv"]
    while args and args[0] in ("-u", "-B", "-E", "-s"):  # interpreter flags: the server's apply
        args = args[1:]
    _adopt_path(asked, args)
    import runpy

    if args[:1] == ["-m"]:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    else:
        sys.argv = list(args)
        runpy.run_path(args[0], run_name="__main__")
    return 0


def reseed_numpy():
    """(in a forked copy) Seed numpy's global generator from the operating system, as a new
    process's first use of it does, where the parent had made it (numpy makes it when its
    ``numpy.random`` is first used, 28 ms: a copy of a parent that had not uses it anew)."""
    generators = sys.modules.get("numpy.random")
    if generators is not None:
        generators.seed()


def _adopt_path(asked, args):
    """``sys.path`` as a new interpreter started by the client would have it: its first entry
    (the working directory for ``-m``, '' for ``-c``, the script's folder), its PYTHONPATH, then
    the rest of the server's."""
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    rest = [p for p in sys.path[1:] if p not in _OWN_PATH]
    first = asked["cwd"] if args[:1] == ["-m"] else "" if args[:1] == ["-c"] else str(Path(args[0]).resolve().parent)
    sys.path[:] = [first, *given, *rest]


def _remove(address):
    """Remove the server's socket, and the folder :class:`Server` made for it."""
    folder = os.path.dirname(address)
    with contextlib.suppress(OSError):
        os.unlink(address)
        if os.path.basename(folder).startswith(FOLDER):
            os.rmdir(folder)


if __name__ == "__main__":
    try:
        _serve(sys.argv[1], sys.argv[2:])
    finally:
        _remove(sys.argv[1])
    os._exit(0)  # what it forked is reaped: skip the interpreter's teardown of torch (a second)
