"""The events a pytest session of simacc's properties reports to the command that started it
(``--simacc-stream PATH``): one JSON object a line, appended by whichever process knows the
fact (the xdist controller its tests' results, a worker the implementation it loaded), and
read by the supervising command as they come (:mod:`simacc.harness.sessions.session`).

Each event is one ``write`` to a file opened for appending, so lines from several processes
never interleave; a field longer than :data:`MAX_FIELD` characters is cut there, so that an
event stays one small write and a flood of output from the implementation stays bounded.
"""

import json
import os

MAX_FIELD = 4000


def clip(text, limit=MAX_FIELD):
    """``text`` cut to ``limit`` characters, saying how many were left out: an exception's
    message or an output can be megabytes, and every report that copies it would be too."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def _bounded(value):
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bounded(v) for v in value]
    return value


def emit(path, event, **fields):
    """Append ``{"event": event, **fields}`` to the stream at ``path`` (None: nothing)."""
    if path is None:
        return
    line = json.dumps({"event": event, **_bounded(fields)}, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Reader:
    """The events of a stream, read as they are appended (a half-written last line waits)."""

    def __init__(self, path):
        self.path, self.offset, self._partial = path, 0, b""

    def new_events(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        return [json.loads(line) for line in lines if line.strip()]
