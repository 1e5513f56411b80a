"""Cleaning the repro folder: ``simacc repro --prune`` and ``--keep N``.

Repro files are named for their failure, so a folder holds one file per distinct failure,
but failures get fixed. ``--keep N`` removes all but the newest N files (by modification
time: when the failure was last found), without replaying them; ``--prune`` then replays
each remaining file and removes those whose case passes now. Every file gets one line
saying what became of it, then a summary.

A file is removed only for a reason the user asked for. An unreadable or invalid file is
reported and kept unless ``--remove-unreadable`` (it may come from a newer simacc, or be
worth a look); a file that could not be replayed here (its device or implementation is
missing) is kept: nothing checked, nothing removed.
"""

from collections import Counter

from simacc.commands.exits import Exit
from simacc.harness.config.settings import shown

WORST_FIRST = (Exit.USAGE, Exit.FAILED, Exit.NOTHING_CHECKED)  # which exit code the folder gets


def clean(directory, read_file, replay, keep=None, remove_unreadable=False):
    """Clean ``directory``, one line per file and a summary; the exit code.

    ``read_file(path) -> (record, property)`` reads a file (:class:`ReproError` if unusable);
    ``replay(record, property) -> (exit code, reason)`` replays a case (None: replay
    nothing); ``keep``: how many of the newest readable files may stay (None: all)."""
    read = {path: _read(read_file, path) for path in sorted(directory.glob("*.json"))}
    older = set(_older_than_newest(read, keep))
    verbs, codes = Counter(), []
    for path, record in read.items():
        if isinstance(record, Exception):  # unreadable: the ReproError saying why
            verb, reason, code = _unreadable(path, record, remove_unreadable)
        elif path in older:
            verb, reason, code = _remove(path, f"older than the newest {keep}", Exit.OK)
        elif replay is not None:
            code, reason = replay(*record)
            verb, reason, code = _remove(path, reason, code) if code == Exit.OK else ("kept", reason, code)
        else:
            verb, reason, code = "kept", f"one of the newest {keep}", Exit.OK
        print(f"{verb:<10} {shown(path)}: {reason}", flush=True)
        verbs[verb] += 1
        codes.append(code)
    counts = ", ".join(f"{verbs[v]} {v}" for v in ("removed", "kept", "unreadable"))
    where = shown(directory)
    print(f"{len(read)} repro file(s) in {where}: {counts}" if read else f"no repro files in {where}")
    return next((c for c in WORST_FIRST if c in codes), Exit.OK)


def _read(read_file, path):
    """``(record, property)`` of ``path``, or the
    :class:`~simacc.harness.model.repro_files.ReproError` saying why not."""
    from simacc.harness.model.repro_files import ReproError

    try:
        return read_file(path)
    except ReproError as e:
        return e


def _older_than_newest(read, keep):
    """The readable files beyond the newest ``keep``."""
    if keep is None:
        return []
    readable = [p for p, record in read.items() if not isinstance(record, Exception)]
    return sorted(readable, key=lambda p: p.stat().st_mtime, reverse=True)[keep:]


def _unreadable(path, error, remove):
    if remove:
        return _remove(path, f"unreadable: {error}", Exit.OK)
    return "unreadable", f"{error} (kept; --remove-unreadable removes it)", Exit.USAGE


def _remove(path, reason, code):
    """Remove ``path``: ``("removed", reason, code)``, or why it stays (a usage problem)."""
    try:
        path.unlink()
    except OSError as e:
        return "kept", f"{reason}, but it cannot be removed: {e.strerror or e}", Exit.USAGE
    return "removed", reason, code
