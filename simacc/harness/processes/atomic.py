"""Writing a file whole: the one way simacc writes a file that another process, a later run or
a CI step may read (repro files, a command's JSON, JUnit and HTML, a supervised command's exit
code). Here, below the commands and importing nothing of simacc, so both layers share it."""

import os
import uuid
from pathlib import Path


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder, synced, then
    renamed over ``path``: a reader (or a crash) never sees half a file, of two writers of one
    path the last rename wins whole, and an error leaves nothing behind. The temporary name is
    hidden and ends in ``.tmp`` (never ``*.json``: a folder of repro files never lists it)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
