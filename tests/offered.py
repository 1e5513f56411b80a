"""What the tests that start a simacc command as a program of its own share: its environment,
and a look at the processes it leaves."""

import os

from simacc.harness.processes import forkserver


def without_settings():
    """This process's environment without its ``SIMACC_*`` settings, the session server it
    offers kept (tests/conftest.py): a command started with it shares that server instead of
    starting two of its own, each an import of torch."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SIMACC_") or k.startswith(forkserver.ADDRESS)}


def group(pgid):
    """``(pid, state, command line)`` of each process of process group ``pgid`` (read from
    /proc): a command started as a group leader, and whatever it started in its group."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                found.append((int(entry), fields[0], command))
    return found
