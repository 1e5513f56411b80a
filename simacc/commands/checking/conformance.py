"""A conformance check of one implementation, as the commands share it (``check``, ``repro``'s
database replay, ``fuzz``, ``mutants``, ``bench``): the options a check takes, the session run from
them and its verdict (:mod:`simacc.commands.checking.verdict`), the header, the replay command of
a failure, and the verdict written as JSON.

The properties run in a pytest session in a child process (:mod:`simacc.harness.sessions.session`),
which loads the implementation; this process never imports it. The verdict is built from what
the child said: an implementation that ends its process, at import or in a call, cannot turn the
check into a success.
"""

import difflib
import json
import platform
import sys
import time

from simacc.commands.checking import verdict
from simacc.commands.checking.progress import Progress
from simacc.commands.exits import Exit, SessionError
from simacc.harness.config import settings as opts
from simacc.harness.config.status import Status
from simacc.harness.judging import catalogue
from simacc.harness.processes import forkserver
from simacc.harness.processes.atomic import write_atomically
from simacc.harness.sessions import session

OPTIONS = ("contract", "level", "device", "context", "run_context", "profile", "max_examples", "seed", "timeout",
           "fixed_token_id", "refused_drafts", "tokenizer", "xfails", "repro_dir", "corpus", "properties", "database",
           "database_readonly")  # the options of ``simacc check`` (``fuzz`` takes them but the profile)


def contract_name(text):
    """``--contract``'s value: the name of a contract of the catalogue's (``ValueError`` naming
    them), whose records are imported only when the option is given."""
    from simacc import strategies as sx

    return sx.contract(text).name


CONTRACT_PARSE = {"contract": contract_name}  # how the commands read the option (settings.add_arguments)


class UsageError(Exception):
    """A bad argument: one line, exit code 2, nothing run."""


RANKS = "ranks_agree_given_the_same_inputs_and_seed"


def write_json(result, path):
    """Write ``result.to_json()`` to ``path`` atomically (the other commands' JSON too)."""
    write_atomically(path, json.dumps(result.to_json(), indent=2) + "\n")


def header_of(chosen, loaded, given=None):
    """The verdict's header: the settings and what the child said it loaded (and, with the
    options ``given``, where the fixed id came from)."""
    return {
        "impl": chosen.impl,
        "file": loaded.get("source", ""),
        "version": loaded.get("version", ""),
        "contract": loaded.get("contract"),
        "contract_from": loaded.get("contract_from"),
        "writes_a_fixed_id": loaded.get("writes_a_fixed_id"),  # what the header says of the contract
        "samples_drafts_against_logits": loaded.get("samples_drafts_against_logits"),
        "level": loaded.get("level", chosen.level),
        "fixed_token_id": loaded.get("fixed_token_id"),
        "fixed_token_id_from": opts.origin("fixed_token_id", given or {}),
        "refused_drafts": chosen.refused_drafts,
        "tokenizer": str(chosen.tokenizer) if chosen.tokenizer else None,
        "device": chosen.device,
        "devices": list(chosen.devices),
        "cuda_available": loaded.get("cuda_available"),
        "contexts": list(chosen.contexts),
        "run_context": chosen.run_context,
        "profile": chosen.profile,
        "max_examples": chosen.max_examples,
        "seed": chosen.seed,
        "timeout_s": chosen.timeout,
        "xfails": str(chosen.xfails) if chosen.xfails else None,
        "repro_dir": str(chosen.repro_dir),
        "corpus": str(chosen.corpus),
        "simacc": loaded.get("simacc"),
        "torch": loaded.get("torch"),
        "hypothesis": loaded.get("hypothesis"),
        "python": platform.python_version(),
    }


def run_check(given, *, workers="auto", quiet=False, verbose=False, exitfirst=False):
    """Check the implementation ``given`` names (``{option: value}``, as :func:`opts.given`
    reads them) and return the :class:`~simacc.commands.checking.verdict.Verdict`. Prints the header
    (stdout) and the progress (stderr) unless ``quiet``; ``exitfirst`` stops at the first
    failure. Raises :class:`UsageError` and :class:`SessionError`."""
    chosen = chosen_from(given)
    progress = Progress(sys.stderr, quiet, verbose)
    loaded = {}

    def on_event(event):
        kind = event["event"]
        if kind == "implementation" and not loaded:
            loaded.update(event)
            if not quiet:
                print(verdict.format_header(header_of(chosen, loaded, given)), flush=True)
        elif kind == "collected":
            progress.collected(event["nodeids"], event.get("session", 0))
        elif kind == "other_modes":  # the tests the later sessions will run, before they start
            progress.collected(event["nodeids"], "later")
        elif kind == "started":
            progress.started(event["nodeid"])
        elif kind == "result":
            progress.finished(verdict.result_of(event))
        elif kind == "warning":
            progress.warn(event["message"])

    start = time.monotonic()
    # the session server, and with it now (on the other core, while the server imports torch)
    # the rank server, where the rank property may run (ARCHITECTURE.md, "A simacc check run")
    forkserver.server(ranks_now=not chosen.properties or any(catalogue.selects(p, RANKS) for p in chosen.properties))
    try:
        heard = session.run(chosen, workers, on_event, extra=("-x",) if exitfirst else ())
    finally:
        progress.close()
    result = _verdict(chosen, heard, loaded, given, exitfirst)
    result.seconds = round(time.monotonic() - start, 1)
    return result


def chosen_from(given):
    chosen = opts.resolve(given, parse=CONTRACT_PARSE)
    if chosen.impl is None or chosen.references:
        raise UsageError("no implementation selected: give IMPL ('package.module:attribute' or "
                         "'path/to/file.py:attribute') or set SIMACC_IMPL")
    return chosen


def usable(chosen, heard, loaded):
    """Raise the :class:`SessionError` that says why ``heard`` holds no verdict, if it does not."""
    errors = heard.of("impl_error")
    if errors:
        raise SessionError(errors[0]["message"])
    if heard.of("collect_error"):
        first = heard.of("collect_error")[0]
        raise SessionError(f"pytest could not collect {first['nodeid'] or 'the properties'}", first["message"])
    interrupted = bool(heard.of("interrupted"))
    death = None if interrupted else heard.death  # (Status, line): how the child ended, if it never finished
    if not loaded and not heard.finished and not interrupted:
        why = death[1] if death else f"it ended with exit code {heard.returncode}"
        raise SessionError(f"IMPL {chosen.impl!r}: the process importing it died before it said what it loaded: {why}",
                         heard.output)
    if not heard.of("collected") and heard.returncode not in (0, 5) and not interrupted:
        raise SessionError(f"pytest exited with code {heard.returncode} before running any property", heard.output)


def _verdict(chosen, heard, loaded, given=None, exitfirst=False):
    """The verdict of a finished session, or the exception that says why there is none."""
    usable(chosen, heard, loaded)
    interrupted = bool(heard.of("interrupted"))
    death = None if interrupted else heard.death  # (Status, line): how the child ended, if it never finished
    finished = heard.finished
    stopped = "interrupted" if interrupted else "; ".join(
        dict.fromkeys(e["not_run"] for e in heard.of("finished") if e.get("not_run"))) if finished else (
        f"the pytest process died: {death[1]}" if death else
        f"the pytest process ended early, with exit code {heard.returncode}")
    collected = [n for e in heard.of("collected") for n in e["nodeids"]]
    results = [verdict.result_of(e) for e in heard.of("result")]
    if death:  # the one process of the session died under the test it was running
        reported = {r.nodeid for r in results}
        results += [verdict.result_of({"nodeid": e["nodeid"], "status": death[0].value,
                                       "message": f"the process running it died: {death[1]}"})
                    for e in heard.of("started") if e["nodeid"] not in reported]
    not_applicable = {k: v for e in heard.of("not_applicable") for k, v in e["items"].items()}
    header = header_of(chosen, loaded, given)
    header["pytest_command"] = heard.command
    result = verdict.build(header, collected, results, not_applicable, stopped, interrupted, exitfirst)
    internal = [e["message"] for e in heard.of("internal_error")]
    if internal:
        result.notes.append(f"pytest stopped with an internal error: {internal[0]}")
    if not interrupted and (not finished or internal) and result.exit_code != Exit.FAILED:
        # every row it reported passed, but the session never said it was done: no success
        result.exit_code = Exit.FAILED
        result.incomplete = "pytest stopped with an internal error" if internal else stopped
    if not finished and not interrupted:
        result.notes.append(stopped + (f"; its output ended with: {heard.output.splitlines()[-1]}" if heard.output
                                       else ""))
    unmatched = _unmatched(chosen.properties, [*collected, *not_applicable])
    if chosen.properties and not result.results and not not_applicable:
        result.reason = f"--property {', '.join(chosen.properties)} matches no property{_near(chosen.properties)}"
    else:
        result.notes += [f"--property {p} matches no property{_near([p])}" for p in unmatched]
    result.notes += list(dict.fromkeys(e["message"] for e in heard.of("warning")))
    for r in result.results:
        if r.status == Status.FAIL:
            r.replay = replay(r, chosen)
    return result


def _unmatched(patterns, nodeids):
    """The ``--property`` patterns that select none of the tests ``nodeids``."""
    names = [verdict.split_nodeid(n)[1] for n in nodeids]
    return [p for p in patterns if not any(catalogue.selects(p, name) for name in names)]


def _near(patterns):
    """``; did you mean ...?`` for property ids close to ``patterns`` (empty when none is)."""
    from simacc import properties

    ids = [prop.id for prop in properties.every_property()]
    near = [m for p in patterns for m in difflib.get_close_matches(p.partition("[")[0], ids, n=1, cutoff=0.6)]
    return f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""


def replay(result, chosen):
    """The command that replays the failure ``result`` (a row) of a run with ``chosen``
    settings (:func:`simacc.harness.model.recording.replay_command`)."""
    from simacc.harness.model.recording import replay_command

    return replay_command(chosen.impl, repro=result.repro, test=result.nodeid and verdict.split_nodeid(result.nodeid)[1],
                          fixed_token_id=chosen.fixed_token_id, seed=chosen.seed, database=chosen.database,
                          tokenizer=chosen.tokenizer and opts.shown(chosen.tokenizer))
