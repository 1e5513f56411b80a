"""The client of a fork server (:mod:`simacc.harness.processes.forkserver`), run as
``python -S forkclient.py ADDRESS ARGS...`` where ``python ARGS...`` would have run: it asks the
server for a process that runs ARGS with this process's standard streams, environment, working
directory and process group, then stands in for it: ``SIGTERM``, ``SIGHUP`` and ``SIGQUIT`` are
passed on, and it exits as that process did (its code, or the same signal). Where the server
cannot be reached it becomes ``python ARGS...`` itself.

It is also the protocol's client half, which simacc's processes import (:func:`request`): a
request is a 4-byte length sent with the file descriptors, then a header; each answer is a
4-byte length, then its value; both in ``marshal``'s format (client and server run one
interpreter). It imports ``os`` and the interpreter's C modules only: a check starts a client
for each process it forks, some one after the other, and with ``json``, ``socket`` and
``signal`` a client took 50 ms to start instead of 10."""

import _signal
import _socket
import marshal
import os
import sys
import time


def frame(value):
    """``value`` as the protocol sends it: its length in 4 bytes, then the value marshalled."""
    data = marshal.dumps(value)
    return len(data).to_bytes(4, "big") + data


class _Answers:
    """The server's answers on ``conn``, read in order: one buffer, so that a process that ends
    at once has its exit read with its pid."""

    def __init__(self, conn):
        self._conn, self._buffer = conn, b""

    def next(self):
        """The next answer; None when the server closed the connection first."""
        while True:
            if len(self._buffer) >= 4:
                end = 4 + int.from_bytes(self._buffer[:4], "big")
                if len(self._buffer) >= end:
                    value, self._buffer = marshal.loads(self._buffer[4:end]), self._buffer[end:]
                    return value
            chunk = self._conn.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk


class Forked:
    """A process the server forked for this process: its ``pid``, and its exit status
    (:meth:`wait`) as the server reports it."""

    def __init__(self, pid, conn, answers):
        self.pid, self._conn, self._answers, self.returncode = pid, conn, answers, None

    def wait(self, timeout=None):
        """Its exit code (negative: the signal that ended it); ``TimeoutError`` when it has not
        ended ``timeout`` seconds from now; 1 if the server went away first."""
        if self.returncode is None:
            self._conn.settimeout(timeout)
            try:
                answer = self._answers.next()
            except TimeoutError:
                raise TimeoutError(f"process {self.pid} still runs") from None
            finally:
                self._conn.settimeout(None)
            self.returncode = answer["exit"] if answer else 1
            self._conn.close()
        return self.returncode

    def close(self):
        """Stop waiting for it: the server kills it if it still runs."""
        self._conn.close()


class _Said:
    def __init__(self, address):
        self.address = address


def request(address, args, fds=(0, 1, 2), patience=5.0, kind="fork"):
    """Ask the server at ``address`` for a process that runs ``python ARGS`` with ``fds`` as its
    descriptors 0, 1, 2, ... and this process's environment, working directory and process
    group; a :class:`Forked`, or None when the server cannot be reached. A server listens
    before it imports, so one that is starting keeps the request waiting in its queue; only its
    first moments, before it listens, are waited out (up to ``patience`` seconds, while its
    folder is there): a server that is gone is None at once.
    ``kind`` "ranks" asks instead for its rank server's address (``.address`` of the answer)."""
    deadline = time.monotonic() + patience
    while True:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.connect(address)
            break
        except OSError:
            conn.close()
            starting = not os.path.exists(address) and os.path.isdir(os.path.dirname(address))
            if not starting or time.monotonic() > deadline:
                return None
            time.sleep(0.01)
    framed = frame({"kind": kind, "argv": list(args), "env": dict(os.environ), "cwd": os.getcwd(),
                    "pgid": os.getpgrp()})
    descriptors = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)  # C ints, as SCM_RIGHTS wants
    answers = _Answers(conn)
    try:
        conn.sendmsg([framed[:4]], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])  # the length
        conn.sendall(framed[4:])
        first = answers.next()
    except (OSError, ValueError, EOFError, TypeError):  # gone, or not a server of this protocol
        first = None
    if not first:
        conn.close()
        return None
    if kind == "ranks":
        conn.close()
        return _Said(first["address"])
    return Forked(first["pid"], conn, answers)


def main(address, args):
    forked = request(address, args)
    if forked is None:
        os.execv(sys.executable, [sys.executable, *args])

    def pass_on(signum, frame):
        try:
            os.kill(forked.pid, signum)
        except OSError:
            pass

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # the forked process is in this group: it hears a Ctrl-C itself
    for sig in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT):
        _signal.signal(sig, pass_on)
    code = forked.wait()
    if code < 0:  # ended by a signal: end by the same one
        _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
