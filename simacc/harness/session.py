"""Running simacc's properties as a pytest session in a child process, and hearing it.

A simacc command never imports the implementation it checks: the child does (its xdist
workers, or the child itself with ``-n 0``), and reports through the event stream
(:mod:`simacc.harness.stream`) what it loaded, collected and found. So whatever the
implementation does to its process (ends it at import or in a call, with any exit code), the
command's verdict, and its exit status, come from this process and from what it heard: a
child that ends without its ``finished`` event ended early, which is never a success.

The child runs with a configuration of its own (a minimal ini, no conftest of the folder it
runs in, no plugins but pytest-xdist, Hypothesis's and simacc's), so the project around it
cannot change the check; every setting is passed explicitly, its paths absolute.
"""

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from simacc.harness import settings as opts
from simacc.harness import stream

POLL_S = 0.1


@dataclass
class Heard:
    """What one session said: its events in order, how the child ended, the end of its
    output, and the command that ran it."""

    events: list
    returncode: int
    output: str
    command: str

    def of(self, kind):
        return [e for e in self.events if e["event"] == kind]

    @property
    def finished(self):
        return bool(self.of("finished"))


def arguments(chosen, workers, stream_path, scratch, extra=(), targets=("--pyargs", "simacc.properties")):
    """The child's pytest arguments for ``chosen`` (a resolved Settings): ``targets`` (all of
    simacc's properties), then the configuration, the settings and ``extra``."""
    ini = Path(scratch) / "pytest.ini"
    ini.write_text("[pytest]\naddopts = --strict-markers\n", encoding="utf-8")
    from simacc.harness.plugin import properties_dir

    args = [*targets, "-c", str(ini), "--rootdir", os.getcwd(),
            "--confcutdir", str(properties_dir()), "--disable-plugin-autoload", "-p", "xdist", "-p", "hypothesispytest",
            "-p", "simacc.harness.plugin", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "--assert=plain", "-q", "--no-header", "-rN", "-n", str(workers), f"--simacc-stream={stream_path}"]
    for name, option in opts.OPTIONS.items():
        value = getattr(chosen, name)
        if value is None or value == ():
            continue
        if option.switch:
            args += [option.flag(pytest=True)] if value else []
            continue
        # --flag=value: a plugin's option is not known when pytest first looks for its ini
        # file, and a value on its own would be taken for a test path
        args += [f"{option.flag(pytest=True)}={one}" for one in (value if option.repeat else [value])]
    return [*args, *extra]


def run(chosen, workers, on_event=None, extra=()):
    """Run the session for ``chosen`` in a child process and return what it said
    (:class:`Heard`), calling ``on_event(event)`` for each event as it comes. A
    ``KeyboardInterrupt`` here interrupts the child too (it is in this process group) and
    still returns what was heard, with ``interrupted`` among the events."""
    with tempfile.TemporaryDirectory(prefix="simacc-session-") as scratch:
        path = Path(scratch) / "events.jsonl"
        args = arguments(chosen, workers, path, scratch, extra)
        command = [sys.executable, "-m", "pytest", *args]
        reader, events = stream.Reader(path), []

        def hear():
            for event in reader.new_events():
                events.append(event)
                if on_event is not None:
                    on_event(event)

        with open(Path(scratch) / "output.txt", "w+", encoding="utf-8", errors="replace") as output:
            child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                while child.poll() is None:
                    time.sleep(POLL_S)
                    hear()
            except KeyboardInterrupt:
                child.wait()  # the child heard the same Ctrl-C: it stops and says so
                events.append({"event": "interrupted"})
            hear()
            output.seek(0)
            tail = "\n".join(output.read().rstrip().splitlines()[-30:])
        return Heard(events, child.returncode, tail, shlex.join(["python", "-m", "pytest", *args]))


def _hear_ctrl_c():
    """(in the child, before pytest starts) Take SIGINT as a Ctrl-C even where this process
    ignores it, as a job started in the background of a shell does: :meth:`Running.interrupt`
    would otherwise go unheard and the pass be killed, unreported."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A session started in a child process of its own session (:func:`subprocess.Popen`'s
    ``start_new_session``), heard as it goes, stopped by the caller: for a command that runs
    several at once and decides when each ends (``simacc fuzz``). A Ctrl-C at the terminal
    reaches the caller only, which stops each child exactly once (:meth:`stop`)."""

    def __init__(self, chosen, workers, extra=(), targets=("--pyargs", "simacc.properties")):
        self._scratch = tempfile.TemporaryDirectory(prefix="simacc-session-")
        scratch = Path(self._scratch.name)
        self.args = arguments(chosen, workers, scratch / "events.jsonl", scratch, extra, targets)
        self.events = []
        self._reader = stream.Reader(scratch / "events.jsonl")
        self._output = open(scratch / "output.txt", "w+", encoding="utf-8", errors="replace")
        self.child = subprocess.Popen([sys.executable, "-m", "pytest", *self.args], stdout=self._output,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                      preexec_fn=_hear_ctrl_c)

    def hear(self):
        """The events said since the last call (kept in ``events`` too)."""
        new = self._reader.new_events()
        self.events += new
        return new

    @property
    def done(self):
        return self.child.poll() is not None

    def interrupt(self):
        """Interrupt the session as a Ctrl-C would: it reports what finished, then ends."""
        if not self.done:
            self._signal(signal.SIGINT)

    def stop(self, grace):
        """:meth:`interrupt` it, and kill it if it has not ended ``grace`` seconds later."""
        self.interrupt()
        try:
            self.child.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.child.wait()

    def _signal(self, number):
        try:
            os.killpg(self.child.pid, number)  # the whole group: the workers of an xdist session too
        except ProcessLookupError:
            pass

    def close(self):
        """Wait for the child to end and return what it said (:class:`Heard`)."""
        self.child.wait()
        self.hear()
        self._output.seek(0)
        tail = "\n".join(self._output.read().rstrip().splitlines()[-30:])
        self._output.close()
        self._scratch.cleanup()
        return Heard(self.events, self.child.returncode, tail, shlex.join(["python", "-m", "pytest", *self.args]))
