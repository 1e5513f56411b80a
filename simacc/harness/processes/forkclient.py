"""The client of a fork server (:mod:`simacc.harness.processes.forkserver`), run as
``python -S forkclient.py ADDRESS ARGS...`` where ``python ARGS...`` would have run: it asks the
server for a process that runs ARGS with this process's standard streams, environment, working
directory and process group, then stands in for it: ``SIGTERM``, ``SIGHUP`` and ``SIGQUIT`` are
passed on, and it exits as that process did (its code, or the same signal). Where the server
cannot be reached it becomes ``python ARGS...`` itself. It runs without site-packages, so it
loads the server's module by its path, which imports the standard library only."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forkserver  # noqa: E402 - from this folder, as a module of its own


def main(address, args):
    forked = forkserver.request(address, args)
    if forked is None:
        os.execv(sys.executable, [sys.executable, *args])

    def pass_on(signum, frame):
        try:
            os.kill(forked.pid, signum)
        except OSError:
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the forked process is in this group: it hears a Ctrl-C itself
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, pass_on)
    code = forked.wait()
    if code < 0:  # ended by a signal: end by the same one
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
