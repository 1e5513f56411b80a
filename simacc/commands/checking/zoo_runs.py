"""The zoo judged: every entry of :mod:`simacc.zoo` checked with the properties and given its
verdict, for ``simacc mutants`` and ``simacc bench`` (its examples to the first failure).

Every entry and seed is one job of :mod:`simacc.harness.sessions.inprocess` (the properties called
directly, no pytest process per entry), several jobs at a time in worker
processes. Entries run on ``--device`` (the CPU by default); an entry whose mistake only
shows on CUDA runs on CUDA where it exists and is reported *not run* elsewhere. A mutant is
*killed* when some property fails in every seed, else it *SURVIVED*; a correct
implementation is *accepted* when nothing fails in any seed, else *REJECTED* (a false
alarm). Exit 1 if any mutant survives or any correct implementation is rejected, 5 if no
entry could run here.

Seeds: under a derandomized profile (``ci``, which ``CI=true`` loads) one run per entry,
the same examples every time. Otherwise every run forces a seed (``1..N``), and
``--seeds N`` > 1 under ``ci`` switches to the random ``default`` profile. No example
database is used, so a failure found for one mutant is never replayed for the next and
examples-to-failure counts are honest.
"""

import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

SCHEMA = "simacc.mutants/1"
KILLED, SURVIVED, ACCEPTED, REJECTED, NOT_RUN = "killed", "SURVIVED", "accepted", "REJECTED", "not run"
DEFAULT_WORKERS = 2
NOTHING_RAN = 5  # pytest's "no tests ran": nothing checked is never success


@dataclass
class Run:
    """One check of one entry under one seed: the property ids that failed and, for the
    property that failed soonest, its examples to the failure, its shrunk case and that
    case's size."""

    seed: int | None
    failed: list
    examples: int | None
    case: str | None
    seconds: float
    size: str = ""


@dataclass
class Row:
    name: str
    spec: str
    contract: str
    kind: str
    bug: str
    expected: list
    verdict: str
    killed_by: list = field(default_factory=list)
    missed: list = field(default_factory=list)
    runs: list = field(default_factory=list)

    @property
    def median_examples(self):
        counts = [r.examples for r in self.runs if r.examples is not None]
        return statistics.median(counts) if counts else None

    @property
    def shrunk(self):
        """The size of the first run's smallest counterexample: ``bs`` and ``W`` (or ``B``)."""
        return next((r.size for r in self.runs if r.size), "")


@dataclass
class Zoo:
    header: dict
    rows: list

    @property
    def exit_code(self):
        if any(r.verdict in (SURVIVED, REJECTED) for r in self.rows):
            return 1
        return NOTHING_RAN if all(r.verdict == NOT_RUN for r in self.rows) else 0

    def to_json(self):
        return {
            "schema": SCHEMA,
            "exit_code": self.exit_code,
            "header": self.header,
            "rows": [
                {**asdict(r), "median_examples": r.median_examples, "shrunk": r.shrunk} for r in self.rows
            ],
        }


def _devices(entry, selection):
    """The devices ``entry`` runs on here: its own CUDA device for a mistake that only shows
    on CUDA, else the selected ones; unavailable devices dropped."""
    from simacc.harness.config import devices

    if entry.unavailable():
        return []
    wanted = ("cuda",) if entry.needs_cuda else devices.expand(selection)
    return [d for d in wanted if devices.unavailable(d) is None]


def check_entry(name, *, seed, profile, max_examples, device, expected_only):
    """One :class:`Run` of the zoo entry ``name`` on ``device`` (what a worker process does)."""
    from hypothesis import settings

    from simacc import properties, zoo
    from simacc.harness.call import impl
    from simacc.harness.config import profiles
    from simacc.harness.config.status import FAILED
    from simacc.harness.sessions import inprocess

    entry = zoo.ENTRIES[name]
    chosen = settings(profiles.for_session(profile, max_examples), database=None)
    select = set(entry.killers) if expected_only and not entry.correct else None
    props = [p for p in properties.every_property() if select is None or p.id in select]
    start = time.perf_counter()
    loaded = impl.load(entry.spec, properties.CONTRACTS, level=entry.level)
    results = inprocess.run(loaded, device, props, settings=chosen, seed=seed)
    failures = [r for r in results if r.status in FAILED]
    first = min(failures, key=lambda r: (r.examples is None, r.examples or 0), default=None)
    return Run(
        seed=seed,
        failed=sorted({r.id.split("[")[0] for r in failures}),
        examples=first.examples if first else None,
        case=first.case if first else None,
        seconds=round(time.perf_counter() - start, 2),
        size=first.size if first else "",
    )


def judge(entry, contract, runs):
    """The :class:`Row` of an entry from its runs (``None``: not run here)."""
    row = Row(entry.name, entry.spec, contract, entry.kind, entry.bug, list(entry.killers), NOT_RUN)
    if runs is None:
        return row
    row.runs = runs
    row.killed_by = sorted({pid for r in runs for pid in r.failed})
    if entry.correct:
        row.verdict = REJECTED if row.killed_by else ACCEPTED
    else:
        row.verdict = KILLED if all(r.failed for r in runs) else SURVIVED
        row.missed = [pid for pid in entry.killers if not all(pid in r.failed for r in runs)]
    return row


def run_zoo(entries, *, seeds=1, max_examples=None, workers=DEFAULT_WORKERS, device="cpu",
            expected_only=False, profile=None, progress=True):
    """Check every entry under every seed on its devices, in ``workers`` processes (0 or 1:
    in this one); a :class:`Zoo`."""
    import torch

    from simacc import properties
    from simacc.harness.call import impl
    from simacc.harness.config import settings as opts

    profile = profile or opts.default_profile()
    if seeds > 1 and profile in opts.DERANDOMIZED:
        profile = "default"
    seed_list = [None] if profile in opts.DERANDOMIZED else list(range(1, seeds + 1))
    jobs = [(e, d, s) for e in entries for d in _devices(e, device) for s in seed_list]
    done = {}
    start = time.perf_counter()
    for count, ((entry, dev, seed), run) in enumerate(_results(jobs, workers, profile, max_examples, expected_only), 1):
        done.setdefault(entry.name, []).append(run)
        if progress:
            outcome = ("failed " + ", ".join(run.failed)) if run.failed else "nothing failed"
            print(f"[{count}/{len(jobs)}] {entry.name} on {dev} (seed {seed}): {outcome} ({run.seconds:.1f} s)",
                  file=sys.stderr, flush=True)
    wall = time.perf_counter() - start
    rows = [judge(e, impl.load(e.spec, properties.CONTRACTS).contract, done.get(e.name)) for e in entries]
    header = dict(
        seeds=seed_list, profile=profile, max_examples=max_examples, device=device,
        expected_only=expected_only, workers=workers, wall_s=round(wall, 1),
        cuda_available=torch.cuda.is_available(), torch=torch.__version__,
    )
    return Zoo(header, rows)


def _results(jobs, workers, profile, max_examples, expected_only):
    """``(job, Run)`` pairs as the jobs finish: in this process, or in fresh worker
    processes (spawned, not forked: torch's thread pools and CUDA do not survive a fork)."""
    options = dict(profile=profile, max_examples=max_examples, expected_only=expected_only)
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            entry, dev, seed = job
            yield job, check_entry(entry.name, seed=seed, device=dev, **options)
        return
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context, initializer=_worker) as pool:
        futures = {pool.submit(check_entry, e.name, seed=s, device=d, **options): (e, d, s) for e, d, s in jobs}
        try:
            for future in as_completed(futures):
                try:
                    yield futures[future], future.result()
                except BrokenProcessPool:
                    entry, dev, seed = futures[future]
                    raise ZooError(f"a worker process died while checking {entry.name} on {dev} (seed {seed}) or an "
                                   "entry beside it; no verdict") from None
        except BaseException:  # a Ctrl-C, a SIGTERM, a dead worker: the workers end, and are waited for
            ended = multiprocessing.active_children()
            for worker in ended:
                worker.terminate()
            pool.shutdown(cancel_futures=True)
            for worker in ended:  # reaped here, whatever state the pool's own bookkeeping was left in
                worker.join(10)
                if worker.exitcode is None:
                    worker.kill()
                    worker.join()
            raise


def _worker():
    """(a worker process, as it starts) Deaf to the terminal's Ctrl-C, after which it would
    start its next job: the command, which hears it (or a SIGTERM), ends the workers itself,
    and what a worker started (its fork servers) ends with it. Where the command dies without
    a word (a SIGKILL), Linux sends the worker a SIGTERM (``PR_SET_PDEATHSIG``): it would
    otherwise wait on its queue for ever."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        pass


class ZooError(Exception):
    """The zoo could not be judged (a worker died): one line, exit 1."""
