"""A command's work in a child process under a supervisor (``repro`` and ``mutants``: they call
implementations in their own process): the command's exit status is the one the child
reports when its work is done, never whatever status the child's process ended with."""

import argparse
import sys
import tempfile
from pathlib import Path

from simacc.commands.exits import Exit
from simacc.harness.processes import forkserver, watch
from simacc.harness.sessions.session import Supervisor

SUPERVISED_BY = "--supervised-by"


def supervise_command(parser):
    """Let ``parser``'s command run under a supervisor when ``simacc`` runs as a program
    (:func:`simacc.commands.cli.main`): its exit status is then the one the child reports,
    never whatever status the child's process ended with."""
    parser.add_argument(SUPERVISED_BY, dest="supervised_by", default=None, help=argparse.SUPPRESS)
    parser.set_defaults(supervise=True)


def supervised(argv, name):
    """Run ``simacc ARGV`` in a child under a :class:`Supervisor`, its output going straight
    to this process's, and return the exit code the child reported; when it ended without
    reporting one (the code under test ended its process, or a kill), ``1`` and one line on
    stderr saying how it ended. A Ctrl-C (or SIGTERM) reaches the child too; without its report, 130."""
    with tempfile.TemporaryDirectory(prefix="simacc-supervised-") as scratch:
        prefix = str(Path(scratch) / "command")
        child = Supervisor(forkserver.command(["-m", "simacc", *argv, f"{SUPERVISED_BY}={prefix}"]), prefix,
                           capture=False)
        try:
            child.wait()
        except KeyboardInterrupt as e:
            child.pass_on(e)
            child.finish()
            code = watch.reported_result(prefix)
            return Exit.INTERRUPTED if code is None else code
        code = watch.reported_result(prefix)
        if code is not None:
            return code
        _, reason = child.death()
        print(f"simacc {name}: the process doing the work died, {reason}; so it is a failure (exit "
              f"{int(Exit.FAILED)})", file=sys.stderr)
        return Exit.FAILED
