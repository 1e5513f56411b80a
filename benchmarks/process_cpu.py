"""Where a command's CPU goes, process by process (Linux: read from ``/proc``).

Runs the command in a session of its own and reads every process of that session from
``/proc`` each ``--interval`` seconds: its parent, when it was first and last seen, its own
CPU-s (user + sys, not its children's) and its command line. A fork server's children keep
its command line, so they are told apart by their parent. What a process spends after the
last read before it ends is not counted, and a process that lives less than an interval may
be missed: the total is a lower bound, close to ``time``'s figure at a short interval.

    python benchmarks/process_cpu.py [--interval S] -- simacc check simacc:generate_simulated_accept_index -q
"""

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time

from simacc.harness.config.settings import argtype, positive_number

TICKS = os.sysconf("SC_CLK_TCK")


def read(pid):
    """``(parent, session, CPU-s)`` of ``pid``, None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the name, which may hold spaces
    return int(fields[1]), int(fields[3]), (int(fields[11]) + int(fields[12])) / TICKS


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=argtype(positive_number("seconds")), default=0.02, metavar="S",
                        help="seconds between two reads of /proc (default 0.02)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    if not os.path.isdir("/proc/self"):
        parser.exit(1, "process_cpu.py: needs /proc (Linux)\n")
    seen = {}  # pid -> [parent, first, last, CPU-s, command line]
    start = time.perf_counter()
    try:
        child = subprocess.Popen(command, start_new_session=True)
    except OSError as e:
        parser.exit(1, f"process_cpu.py: {command[0]}: {e.strerror}\n")
    while True:
        try:
            now, done = time.perf_counter() - start, child.poll() is not None
            for name in os.listdir("/proc"):
                found = read(name) if name.isdigit() else None
                if found is None or found[1] != child.pid:
                    continue
                row = seen.setdefault(int(name), [found[0], now, now, 0.0, ""])
                row[2:4] = now, found[2]
                row[4] = row[4] or command_line(name)  # a process that has ended has none
            if done:
                break
            time.sleep(args.interval)
        except KeyboardInterrupt:  # its session is not the terminal's: pass the Ctrl-C on, report what it did
            with contextlib.suppress(ProcessLookupError):  # its group may have ended just now
                os.killpg(child.pid, signal.SIGINT)
    print(f"exit {child.returncode}; {time.perf_counter() - start:.2f} s", file=sys.stderr)
    for pid, (parent, first, last, cpu, line) in sorted(seen.items(), key=lambda item: item[1][1]):
        print(f"{pid:>8} parent {parent:>8} {first:6.2f}-{last:6.2f} s {cpu:6.2f} CPU-s  {line[:110]}")
    print(f"{len(seen)} processes, {sum(row[3] for row in seen.values()):.2f} CPU-s")
    code = child.returncode
    return 128 - code if code < 0 else code  # ended by a signal: 128 + its number, as a shell says


if __name__ == "__main__":
    sys.exit(main())
