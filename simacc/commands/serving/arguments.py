"""What ``simacc laws`` and ``simacc observe`` both take: an acceptance length, and output
paths whose folder must exist before any work starts."""

import math


def length(text):
    """An acceptance length: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a finite number > 0, got {text!r}")
    return value


def check_folders(command, *paths):
    """The usage error (a line, as the commands print it) for an output path whose folder is
    missing, or None."""
    for path in paths:
        if path is not None and not path.resolve().parent.is_dir():
            return f"simacc {command}: error: {path}: no such folder {path.parent}"
    return None
