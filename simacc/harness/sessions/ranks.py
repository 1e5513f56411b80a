"""Tensor-parallel ranks (CONTRACT.md §11.7): the same calls, with the same inputs and the same
seeds, in processes of their own that each import the implementation anew, as each rank of a
server does. A server never compares its ranks' results: two ranks that draw different
lengths desynchronise the batch or hang a collective, so simacc compares them.

:class:`Ranks` keeps :data:`RANKS` fresh processes (:mod:`simacc.harness.processes.fresh`) for one
test and sends every case to each. Rank 0 is a copy of this process made before the
implementation was imported; rank 1 is always a new interpreter, with a hash seed, a memory
layout and a start of its own, as a server's ranks are: a port whose draws follow a string's
hash, an address or the clock agrees with itself in two copies of one process and not in two
interpreters. (Where the implementation's module was imported before the copy was made, or on a
CUDA device, both are new interpreters, with hash seeds that differ from each other's.) Each
rank calls the implementation through a :class:`~simacc.harness.call.runner.Runner` of its own
(the time limit, the protections, the generators its contract draws from seeded from the case),
on the test's device and in its grad mode, and answers with what the call returned and left in
its arguments, on the CPU, and what it changed in the rank's process. Each rank is given what a
launcher gives it (docs/trust.md): its identity in its environment (:func:`launched`) before
the import, a gloo process group after it, and a wall clock of its own (:data:`CLOCK_SHIFT`).
The ranks stay in step: they receive the same calls in the same order, and every rank's answer
to a call is read, even where another rank failed it.
"""

import copyreg
import datetime
import os
import socket
import time
import weakref
from dataclasses import dataclass

import torch

from simacc.harness.call.impl import parse
from simacc.harness.processes import fresh, watch

RANKS = 2
# rank r's wall clock runs r times this far ahead of the real one (a year, a day, an hour, a minute
# and a second and a half): whatever a salt from the clock keeps, seconds to years, differs between ranks
CLOCK_SHIFT = 366 * 86400 + 3600 + 60 + 1.5
_RUNNER = {}  # in a rank: the Runner of the implementation it serves
_OF_RUNNER = weakref.WeakKeyDictionary()  # a test's runner: its ranks


@dataclass
class RankOutcome:
    """One call in one rank: what it returned, its arguments afterwards (CPU tensors; a
    generator as its state), its error as one line (None when it returned), what it changed
    in the rank's process (restored), and torch's CPU generator state before and after it."""

    returned: object
    args: dict
    error: str | None
    changed: tuple = ()
    rng_before: torch.Tensor | None = None
    rng_after: torch.Tensor | None = None


class RankFailed(AssertionError):
    """A rank could not answer: it died, or outlasted its time."""


def of(runner, case):
    """What each rank gets from ``case`` (a list of :class:`RankOutcome`, in rank order) for the
    test ``runner`` serves: its ranks are started at the first call and live as long as the
    runner, receiving every case it is asked."""
    runner.check_import()
    runner.last = (case, runner.device)
    ranks = _OF_RUNNER.get(runner)
    if ranks is None or not ranks.processes:  # none yet, or the last lost a rank: new ones, in step from their start
        fresh_ranks = Ranks(runner.impl, runner.device, runner.context, runner.timeout)
        if ranks is None:
            runner.closing.append(lambda: _OF_RUNNER.pop(runner).close())
        ranks = _OF_RUNNER[runner] = fresh_ranks
    return ranks.run(case)


class Ranks:
    """:data:`RANKS` ranks of ``impl`` on ``device`` in grad mode ``context``."""

    def __init__(self, impl, device, context, timeout):
        from simacc.harness.config import devices

        self.timeout = timeout
        self.processes = []
        copies = not devices.is_cuda(device) and (impl.is_reference or not any(map(fresh.holds, _modules(impl))))
        try:
            for rank in range(RANKS):
                self.processes.append(fresh.Process(new=rank > 0 or not copies, rank=rank))
            self._all("simacc.harness.sessions.ranks:_start", _free_port(), impl.spec, impl.record, impl.level,
                      impl.fixed_token_id, device, context, timeout, watch.prefix(), limit=self.timeout * 4 + 60,
                      ranked=True)
            self._all("simacc.harness.sessions.ranks:_join", limit=self.timeout + 60, ranked=True)
        except BaseException:
            self.close()
            raise

    def run(self, case):
        """Each rank's :class:`RankOutcome` of ``case``, in rank order."""
        return self._all("simacc.harness.sessions.ranks:_call", case, limit=self.timeout + watch.WATCHDOG_GRACE + 30)

    def _all(self, target, *args, limit, ranked=False):
        """Every rank's answer to ``target(*args)`` (``ranked``: ``target(rank, *args)``), in rank
        order. Every answer is read before a rank's failure is raised: an answer left unread
        would be taken for the next call's, and from then on the ranks would compare different
        calls. A rank that died ends them all; :func:`of` starts new ones at the next call."""
        sent, failure, died = [], None, False
        for rank, process in enumerate(self.processes):
            try:
                process.send(target, *((rank,) if ranked else ()), *args)
                sent.append((rank, process))
            except fresh.Died as e:
                failure, died = failure or _death(rank, process, e), True
        answers = []
        for rank, process in sent:
            try:
                kind, value = process.receive(limit)
            except fresh.Died as e:
                failure, died = failure or _death(rank, process, e), True
                continue
            if kind == "raised":
                failure = failure or _reraised(value, rank)
            answers.append(value)
        if died:
            self.close()
        if failure is not None:
            raise failure
        return answers

    def close(self):
        for process in self.processes:
            process.close()
        self.processes = []


def _modules(impl):
    """The modules a rank must import anew: the one ``impl.spec`` names and the function's own.
    (A copy made after they were imported would share their state from import on, so ranks of
    such an implementation are new interpreters; simacc's own references keep no state.)"""
    where, _, is_file = parse(impl.spec)
    dotted = () if is_file else (where,)
    return (*dotted, getattr(impl.fn, "__module__", None))


def _death(rank, process, e):
    """The failure to raise for a rank whose process ended: a hang where the watchdog killed it."""
    words = watch.last_words(watch.prefix(), process.pid) if watch.prefix() else None
    said = f"rank {rank}'s process (pid {process.pid}) died: {words[1] if words else e}"
    if words and words[0] in ("watchdog", "killed"):  # its call outlasted the time limit
        from simacc.harness.call.runner import ImplementationHung

        watch.note_hang()
        return ImplementationHung(said)
    return RankFailed(said)


def _reraised(line, rank):
    """A rank's own failure (a hang, a harness modified): the same failure here."""
    from simacc.harness.call.runner import HarnessModified, ImplementationHung

    kind, _, message = line.partition(": ")
    error = {"ImplementationHung": ImplementationHung, "HarnessModified": HarnessModified}.get(kind, RankFailed)
    return error(f"in rank {rank}: {message if error is not RankFailed else line}")


def _free_port():
    """A port of this host's loopback that nothing listens on now: the ranks' ``MASTER_PORT``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launched(rank, port):
    """The variables torchrun gives rank ``rank`` of :data:`RANKS`, one host's, whose rank 0
    listens on ``port`` (torch 2.13: ``torch/distributed/run.py``, "Environment Variables";
    ``local_elastic_agent.py``, ``_start_workers``), its agent's own ``TORCHELASTIC_*`` aside."""
    ranks = str(RANKS)
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
            "ROLE_NAME": "default", "WORLD_SIZE": ranks, "LOCAL_WORLD_SIZE": ranks, "GROUP_WORLD_SIZE": "1",
            "ROLE_WORLD_SIZE": ranks, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


class _AsTheRealClass(type):
    """A class that stands in for one of :mod:`datetime`'s in a rank whose clock is shifted:
    ``isinstance`` and ``issubclass`` answer as they would for the real class, so the
    ``datetime`` objects made anywhere else in the process still pass for its own."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls.__mro__[1])

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls.__mro__[1])


class _Date(datetime.date, metaclass=_AsTheRealClass):
    """:class:`datetime.date` whose ``today`` reads the shifted clock."""

    @classmethod
    def today(cls):
        return cls.__mro__[1].fromtimestamp(time.time())


class _Datetime(datetime.datetime, metaclass=_AsTheRealClass):
    """:class:`datetime.datetime` whose ``now``, ``today`` and ``utcnow`` read the shifted clock."""

    @classmethod
    def now(cls, tz=None):
        return cls.__mro__[1].fromtimestamp(time.time(), tz)

    @classmethod
    def today(cls):
        return cls.now()

    @classmethod
    def utcnow(cls):
        return cls.now(datetime.timezone.utc).replace(tzinfo=None)


def _real(cls, args):
    """An instance of the real ``cls`` of :mod:`datetime`, unpickled: a shifted rank's
    ``datetime`` names the stand-ins, so pickle could not find the real class by its name."""
    return cls.__mro__[1](*args) if isinstance(cls, _AsTheRealClass) else cls(*args)


def _shift_clock(seconds):
    """(in a rank, before the implementation is imported) Run every clock that Python reads
    ``seconds`` ahead: the wall clock (``time()``, ``time_ns()``, the calendar functions' "now",
    :mod:`datetime`'s ``now``, ``today`` and ``utcnow``) and the monotonic ones (``monotonic``,
    ``perf_counter``), ``clock_gettime`` of every clock but a process's or thread's CPU time.
    The heartbeat that another process reads keeps the real monotonic clock
    (:mod:`~simacc.harness.processes.watch` took it at its import)."""
    nanoseconds = int(seconds * 1e9)
    own = {getattr(time, name) for name in ("CLOCK_PROCESS_CPUTIME_ID", "CLOCK_THREAD_CPUTIME_ID") if hasattr(time, name)}
    real = {name: getattr(time, name) for name in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                                                    "perf_counter_ns", "clock_gettime", "clock_gettime_ns",
                                                    "localtime", "gmtime", "ctime")}
    for name in ("time", "monotonic", "perf_counter"):
        setattr(time, name, lambda clock=real[name]: clock() + seconds)
        setattr(time, f"{name}_ns", lambda clock=real[f"{name}_ns"]: clock() + nanoseconds)
    time.clock_gettime = lambda clock: real["clock_gettime"](clock) + (0 if clock in own else seconds)
    time.clock_gettime_ns = lambda clock: real["clock_gettime_ns"](clock) + (0 if clock in own else nanoseconds)
    for name in ("localtime", "gmtime", "ctime"):
        setattr(time, name, lambda when=None, convert=real[name]: convert(time.time() if when is None else when))
    real_asctime, real_strftime = time.asctime, time.strftime
    time.asctime = lambda when=None: real_asctime(time.localtime() if when is None else when)
    time.strftime = lambda form, when=None: real_strftime(form, time.localtime() if when is None else when)
    for stand_in in (_Date, _Datetime):  # the real classes' instances pickle by the stand-ins' names
        copyreg.pickle(stand_in.__mro__[1], lambda obj, cls=stand_in: (_real, (cls, obj.__reduce__()[1])))
    datetime.date, datetime.datetime = _Date, _Datetime


def _start(rank, port, spec, record, level, fixed_token_id, device, context, timeout, prefix):
    """(in a rank) Take the rank's identity and clock, import the implementation anew and keep
    a runner for it."""
    from simacc.harness.call import impl
    from simacc.harness.call.runner import Runner

    os.environ.update(launched(rank, port))
    if rank:
        _shift_clock(rank * CLOCK_SHIFT)
    watch.configure(prefix)
    implementation = impl.load(spec, (record,), record.name, level, fixed_token_id)
    runner = Runner(implementation, device, timeout, context=context)
    runner.__enter__()
    _RUNNER["runner"] = runner
    dist = _distributed()
    if rank == 0 and dist is not None:  # the group's store, listening before any rank dials it (_join)
        _RUNNER["store"] = dist.TCPStore(os.environ["MASTER_ADDR"], port, RANKS, True, timeout=_group_timeout(),
                                         wait_for_workers=False)


def _distributed():
    """``torch.distributed`` where it can make a process group not made yet, else None."""
    import torch.distributed as dist

    return dist if dist.is_available() and not dist.is_initialized() else None


def _group_timeout():
    return datetime.timedelta(seconds=_RUNNER["runner"].timeout + 30)


def _join(rank):
    """(in a rank) Join the ranks' process group (gloo), as a server's rank does once its modules
    are imported: ``torch.distributed.get_rank()`` is then the rank's. Rank 0 serves the store
    it made at its start, and the others dial it where the launcher's variables say: one that
    dialled before rank 0 listened would wait for a retry (0.7 s seen). Nothing where torch has
    no distributed package, or the import made a group."""
    dist = _distributed()
    if dist is not None:
        store = _RUNNER.get("store") or dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), RANKS,
                                                      False, timeout=_group_timeout())
        dist.init_process_group("gloo", store=store, rank=rank, world_size=RANKS, timeout=_group_timeout())


def _call(case):
    """(in a rank) One call of ``case``, as a :class:`RankOutcome`."""
    outcome = _RUNNER["runner"].attempt(case)
    error = None if outcome.error is None else f"{type(outcome.error).__name__}: {outcome.error}"[:2000]
    return RankOutcome(_on_cpu(outcome.returned), {k: _on_cpu(v) for k, v in outcome.args.items()}, error,
                       outcome.changed, outcome.rng_before, outcome.rng_after)


def _on_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, torch.Generator):
        return value.get_state()
    if isinstance(value, (tuple, list)):
        return type(value)(map(_on_cpu, value))
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    return value
