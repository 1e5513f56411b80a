"""Running simacc's properties as a pytest session in a child process, and hearing it; and
the supervisor of every child of a simacc command.

A simacc command never imports the implementation it checks: the child does (its xdist
workers, or the child itself with ``-n 0``), and reports through the event stream
(:mod:`simacc.harness.processes.stream`) what it loaded, collected and found. So whatever the
implementation does to its process (ends it at import or in a call, with any exit code), the
command's verdict, and its exit status, come from this process and from what it heard: a
child that ends without its ``finished`` event ended early, which is never a success.

The child runs with a configuration of its own (a minimal ini, no conftest of the folder it
runs in, no plugins but pytest-xdist, Hypothesis's and simacc's), so the project around it
cannot change the check; the settings are passed whole, as the command resolved them (paths
absolute), and never resolved again.

A :class:`Supervisor` holds what makes a child safe to wait for, whoever starts it (the
check's session here, ``repro`` and ``mutants`` through
:func:`simacc.commands.supervised.supervised`, each round of ``fuzz``):

* its own deadline (:class:`Deadline`): every process of the session beats a heartbeat file
  while a call runs (:mod:`simacc.harness.processes.watch`), and one whose call has outlasted its
  limit by :data:`~simacc.harness.processes.watch.SUPERVISOR_MARGIN` is killed, whatever it did to
  its alarm, its signals or its watchdog;
* bounded output: the child's output is read as it comes and only its last
  :data:`OUTPUT_TAIL` bytes are kept;
* a diagnosis of how it ended (:meth:`Supervisor.death`): a kill of this supervisor's, the
  watchdog's, a signal, or an exit code, in one line.
"""

import collections
import json
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from simacc.harness.config.status import FAILED, Status
from simacc.harness.processes import forkserver, interrupts, stream, watch

POLL_S = 0.1
OUTPUT_TAIL = 64 * 1024  # bytes of a child's output kept (the end of it)


@dataclass
class Heard:
    """What a check's sessions said (one per grad mode, :meth:`Settings.per_process
    <simacc.harness.config.settings.Settings.per_process>`): their events in the order they came,
    how the children ended (the first non-zero code), the end of their output, the commands
    that ran them, and, when one ended without finishing, why (``death``: a ``(Status, line)``
    pair, or None when nothing is known)."""

    events: list
    returncode: int
    output: str
    command: str
    death: tuple | None = None
    sessions: int = 1

    def of(self, kind):
        return [e for e in self.events if e["event"] == kind]

    @property
    def finished(self):
        return len(self.of("finished")) >= self.sessions


def ended(child):
    """``child.poll()`` with Ctrl-C held back: a ``KeyboardInterrupt`` raised inside it can
    leave the lock of :class:`subprocess.Popen` held (between its acquire and its ``try``),
    and every later wait for the child then blocks forever. A poll is quick; the Ctrl-C is
    raised as it returns."""
    with interrupts.deferred():
        return child.poll()


def nap(children):
    """Wait :data:`POLL_S`, or less: until one of the processes ``children`` (``Popen`` objects)
    ends, where the system has pidfds (a session's end is then heard at once, not on average
    half a look later)."""
    if not forkserver.wait_for_one(children, POLL_S):
        time.sleep(POLL_S)


class Deadline:
    """The supervisor's own deadline on the calls of the processes that share ``prefix``:
    a process whose call has run past its limit plus ``margin`` (by default
    :data:`watch.SUPERVISOR_MARGIN`: the watchdog had its chance) is killed, and its last
    words say so."""

    def __init__(self, prefix, margin=watch.SUPERVISOR_MARGIN):
        self.prefix = prefix
        self.margin = margin
        self.killed = {}  # pid -> the line its last words say
        self._seen = {}  # pid -> the start of its call at the previous look

    def check(self):
        """Look at every heartbeat once; kill what is past its deadline."""
        now = time.monotonic()
        for path in watch.beats(self.prefix):
            beat = watch.read_beat(path)
            if beat is None:
                continue
            pid, started, limit = beat
            seen, self._seen[pid] = self._seen.get(pid), started
            if not started or seen != started or now - started <= limit + self.margin:
                continue  # between calls, a new call (or a torn read), or still in time
            line = (f"simacc's supervisor killed it: the code under test ran {now - started:.0f} s in one call (or "
                    f"its import), past its {limit:g} s time limit and the watchdog (it disarmed or blocked them)")
            watch.say_last_words("killed", line, pid, self.prefix)
            self.killed[pid] = line
            try:
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            except OSError:
                pass


class Supervisor:
    """A child process, watched (see the module): ``command`` runs with its processes
    sharing ``prefix``; its output is kept (the last :data:`OUTPUT_TAIL` bytes) when
    ``capture``, else it goes to this process's own."""

    def __init__(self, command, prefix, capture=True, env=None):
        self.prefix = prefix
        self.deadline = Deadline(prefix)
        self._tail = collections.deque()
        self._size = 0
        self.dropped = 0
        pipe = subprocess.PIPE if capture else None
        self.child = subprocess.Popen(command, stdout=pipe, stderr=subprocess.STDOUT if capture else None,
                                      stdin=subprocess.DEVNULL, env=env)
        self._reader = None
        if capture:
            self._reader = threading.Thread(target=self._read, name="simacc-output", daemon=True)
            self._reader.start()

    def _read(self):
        while True:
            chunk = self.child.stdout.read1(65536)
            if not chunk:
                return
            self._tail.append(chunk)
            self._size += len(chunk)
            while self._size - len(self._tail[0]) >= OUTPUT_TAIL:
                self._size -= len(self._tail[0])
                self.dropped += len(self._tail.popleft())

    def poll(self):
        """Whether the child still runs; enforces the deadline."""
        self.deadline.check()
        return ended(self.child) is None

    def wait(self, on_poll=None):
        """Wait for the child, calling ``on_poll()`` between looks; its return code."""
        while self.poll():
            nap([self.child])
            if on_poll is not None:
                on_poll()
        return self.finish()

    def pass_on(self, interrupt):
        """After ``interrupt``, a ``KeyboardInterrupt``, stopped this process's wait: a Ctrl-C
        reached the child too (one process group), a SIGTERM may have been for this process
        alone, so the child is sent one (:func:`~simacc.harness.processes.interrupts.stop_on_sigterm`)."""
        if isinstance(interrupt, interrupts.Terminated):
            self.child.terminate()

    def finish(self):
        """After the child ended: its return code, once its output is all read."""
        code = self.child.wait()
        if self._reader is not None:
            self._reader.join(5)
        return code

    @property
    def output(self):
        """The end of the child's output, as text."""
        return b"".join(self._tail).decode("utf-8", errors="replace")

    def death(self, pid=None):
        """``(Status, reason)``: how the child (or its process ``pid``) ended, when it ended
        before its work was done; ``reason`` says it of "the process": "it was ended by
        SIGSEGV (a segfault)"."""
        # the child itself may stand in for a process forked in its place (forkserver): its last
        # words are then under that process's pid, the only one of its session to leave any
        words = watch.last_words(self.prefix, pid) if pid is not None else watch.last_words(self.prefix)
        if words is not None:
            kind, line = words
            return (Status.ERROR if kind == "internal" else Status.HUNG), line
        code = self.child.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
            why = {"SIGSEGV": "a segfault", "SIGKILL": "killed from outside: the out-of-memory killer?",
                   "SIGABRT": "aborted", "SIGBUS": "a bus error"}.get(name, "a signal")
            return Status.CRASHED, f"it was ended by {name} ({why})"
        return Status.CRASHED, (f"it ended with exit code {code} before its work was done (the code under test ended "
                                "it: os._exit, or sys.exit in a thread?)")


def arguments(chosen, workers, stream_path, scratch, extra=(), targets=("--pyargs", "simacc.properties")):
    """The child's pytest arguments for ``chosen`` (a resolved Settings): ``targets`` (all of
    simacc's properties), then the configuration, the settings and ``extra``."""
    ini = Path(scratch) / "pytest.ini"
    ini.write_text("[pytest]\naddopts = --strict-markers\n", encoding="utf-8")
    from simacc.harness.config.settings import properties_dir

    args = [*targets, "-c", str(ini), "--rootdir", os.getcwd(),
            "--confcutdir", str(properties_dir()), "--disable-plugin-autoload", "-p", "xdist", "-p", "hypothesispytest",
            "-p", "simacc.harness.plugin", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
            "--assert=plain", "-q", "--no-header", "-rN", *_workers(workers), f"--simacc-stream={stream_path}",
            # the settings whole, as resolved here: never resolved again (--flag=value: a plugin's option is
            # not known when pytest first looks for its ini file, and a value on its own would be a test path)
            f"--simacc-settings={json.dumps(chosen.to_json())}"]
    return [*args, *extra]


def _workers(workers):
    """xdist's arguments for ``workers`` (``"auto"`` or a count): each worker a process forked
    from the session's fork server (:mod:`simacc.harness.processes.forkserver`), which has
    imported torch once for them all, or ``-n`` where there is no fork server."""
    count = _count(workers)
    found = forkserver.server() if count else None
    if found is None:
        return ["-n", str(workers)]
    return ["--tx", f"{count}*popen//python={shlex.join(forkserver.client(found.address))}", "--dist", "load"]


def _count(workers):
    """The number of workers ``-n workers`` asks xdist for (``auto``: as xdist counts them)."""
    if workers != "auto":
        return int(workers)
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if given:
        return int(given)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run(chosen, workers, on_event=None, extra=()):
    """Run the sessions for ``chosen`` (a resolved Settings), one per grad mode, each in a
    child process, and return what they said (:class:`Heard`), calling ``on_event(event)``
    for each event as it comes. The first mode's session has ``workers``; a later one, which
    runs only the few properties checked in every mode (it collects only their modules,
    :func:`~simacc.harness.plugin.collection.pytest_ignore_collect`), runs them in its one
    process (an xdist controller and a worker would cost a second process's start-up). They
    run side by side: a check of the whole catalogue starts them all at once (the later ones
    then run while the first one's workers start); a check of some properties starts a later
    one only once the first session has collected and said that some of the tests selected
    run in that mode (``other_modes``), so that a check of properties that run in the first
    mode alone is one session. With ``-x`` (stopping at the first failure) they run one after
    the other. A ``KeyboardInterrupt`` here interrupts the children too (they are in this
    process group) and still returns what was heard, with ``interrupted`` among the events."""
    events, parts = [], []

    def hear(number, reader):
        heard = reader.new_events()
        for event in heard:
            event["session"] = number  # which grad mode's session said it
            events.append(event)
            if on_event is not None:
                on_event(event)
        return heard

    sessions = chosen.per_process()
    alone = "-x" in extra
    with tempfile.TemporaryDirectory(prefix="simacc-session-") as scratch:

        def start(number):
            path = Path(scratch) / f"events-{number}.jsonl"
            args = arguments(sessions[number], workers if number == 0 else 0, path, scratch, extra)
            supervisor = Supervisor(forkserver.command(["-m", "pytest", *args]), str(path))
            return number, stream.Reader(path), supervisor, args

        later = list(range(1, len(sessions)))

        def wanted():
            """The later sessions the first one has asked for by now (each once)."""
            modes = {m for e in events if e["event"] == "other_modes" and e["session"] == 0 for m in e["modes"]}
            ready = [n for n in later if sessions[n].run_context in modes]
            later[:] = [n for n in later if n not in ready]
            return ready

        if alone:
            parts += _wait([start(0)], hear, events)
            for number in wanted():
                if any(e["event"] == "interrupted" or _failed(e) for e in events):
                    break
                parts += _wait([start(number)], hear, events)
        elif not chosen.properties:
            parts += _wait([start(n) for n in range(len(sessions))], hear, events)
        else:
            parts += _wait([start(0)], hear, events, more=lambda: [start(n) for n in wanted()])
    returncode = next((code for code, _, _, _ in parts if code), 0)
    output = "\n".join(tail for _, tail, _, _ in parts if tail)
    command = "; ".join(shlex.join(["python", "-m", "pytest", *args]) for _, _, args, _ in parts)
    death = next((dead for _, _, _, dead in parts if dead is not None), None)
    return Heard(events, returncode, output, command, death, sessions=len(parts))


def _failed(event):
    return event["event"] == "result" and Status(event["status"]) in FAILED


def _wait(started, hear, events, more=lambda: ()):
    """Wait for the children ``started`` (``(number, reader, supervisor, args)``), hearing them
    as they go, and for those ``more()`` starts on the way; for each, ``(return code, the end
    of its output, its arguments, how it died or None)``."""
    started = list(started)
    finished = []

    def hear_all():
        finished.extend([False] * (len(started) - len(finished)))
        for n, (number, reader, _, _) in enumerate(started):
            finished[n] |= any(e["event"] == "finished" for e in hear(number, reader))

    interrupted = False
    try:
        while True:
            running = any([child.poll() for _, _, child, _ in started])  # a list: every child's deadline is checked
            hear_all()
            new = more()  # after the last look too: a child may have asked for them just before it ended
            started += new
            if not running and not new:
                break
            nap([child.child for _, _, child, _ in started])
    except KeyboardInterrupt as e:
        interrupted = True  # the children heard the same Ctrl-C (or are sent the SIGTERM): they stop
        for _, _, child, _ in started:
            child.pass_on(e)
    codes = [child.finish() for _, _, child, _ in started]
    hear_all()
    if interrupted:
        events.append({"event": "interrupted"})
    return [(code, "\n".join(child.output.rstrip().splitlines()[-30:]), args,
             None if done or interrupted else child.death())
            for code, done, (_, _, child, args) in zip(codes, finished, started)]


def _own_group():
    """(in the child, before it starts) A process group of its own, in this session, which
    the processes it starts (a forked pytest, its workers) join and :meth:`Running.stop`
    signals as one; and SIGINT taken as a Ctrl-C even where this process ignores it, as a
    job started in the background of a shell does: :meth:`Running.interrupt` would otherwise
    go unheard and the pass be killed, unreported."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A session started in a child process of its own process group, heard as it goes, stopped by the caller: for a command that runs
    several at once and decides when each ends (``simacc fuzz``). A Ctrl-C at the terminal
    reaches the caller only, which stops each child exactly once (:meth:`stop`)."""

    def __init__(self, chosen, workers, extra=(), targets=("--pyargs", "simacc.properties")):
        self._scratch = tempfile.TemporaryDirectory(prefix="simacc-session-")
        scratch = Path(self._scratch.name)
        self.args = arguments(chosen, workers, scratch / "events.jsonl", scratch, extra, targets)
        self.deadline = Deadline(str(scratch / "events.jsonl"))  # the stream's path is the session's prefix
        self.events = []
        self._reader = stream.Reader(scratch / "events.jsonl")
        self._output = open(scratch / "output.txt", "w+", encoding="utf-8", errors="replace")
        self.child = subprocess.Popen(forkserver.command(["-m", "pytest", *self.args]), stdout=self._output,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_own_group)

    def hear(self):
        """The events said since the last call (kept in ``events`` too)."""
        new = self._reader.new_events()
        self.events += new
        return new

    @property
    def done(self):
        """Whether the session has ended; enforces the deadline (as :meth:`Supervisor.poll`)."""
        self.deadline.check()
        return ended(self.child) is not None

    def overdue(self):
        """The test running now when its call has outlasted its time limit: ``(nodeid, seconds
        into the call, limit)``, or None."""
        now = time.monotonic()
        for path in watch.beats(self.deadline.prefix):
            beat = watch.read_beat(path)
            if beat is not None and beat[1] and now - beat[1] > beat[2]:
                finished = {e["nodeid"] for e in self.events if e["event"] == "result"}
                running = [e["nodeid"] for e in self.events if e["event"] == "started" and e["nodeid"] not in finished]
                if running:
                    return running[-1], now - beat[1], beat[2]
        return None

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

