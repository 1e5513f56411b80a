"""What ``simacc observe`` reads: each engine's output as the engine writes it (docs/laws.md has
each field's source, file and line of the release), read in one pass into a
:class:`~simacc.commands.serving.observe_tally.Tally`, and what each can carry:

* ``records``: simacc's JSON Lines, a record per request per step (every check);
* ``vllm-responses``: vLLM's response bodies (``metrics.speculative_decoding``), one a line: the
  per-step arrays of ``--per-request-spec-decode-metrics detailed`` (every check, each step
  judged over its own drafts), or the ``summary`` level's histograms (distribution and mean);
* ``vllm-prometheus``: a scrape of vLLM's ``/metrics`` (``--before``: the scrape before the run,
  subtracted): accepted tokens per position (distribution and mean);
* ``sglang-log``: sglang's server log, its ``Decode batch ... accept len: X.XX`` lines: at
  ``--decode-log-interval 1`` a line per step (every check a lockstep law has); wider, a mean;
* ``sglang-responses``: sglang's ``/generate`` bodies, ``meta_info.spec_correct_drafts_histogram``
  (distribution and mean);
* ``atom-mtp-stats``: ATOM's ``/debug/mtp_stats`` JSON: its ``distribution`` (distribution and
  mean), or ``average_tokens_per_forward`` alone (the mean).
"""

import hashlib
import json
import math
import re

from simacc.commands.serving.observe_tally import LogError

CHUNK = 1 << 20
FIELDS = ("step", "request", "accept_length")
SGLANG_ENGINES = ("sglang", "sglang-multinomial")
ATOM_ENGINES = ("atom", "atom-1850")
PROMETHEUS = {  # vLLM's counters, as prometheus_client exposes them (a Counter's samples end in _total)
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
    "per_pos": "vllm:spec_decode_num_accepted_tokens_per_pos_total",
}
SHAPE = re.compile(rb'(?:\{"step": -?\d{1,18}+, "request": -?\d{1,18}+, "accept_length": -?\d{1,18}+\}\n)*+')
DECODE = re.compile(r"Decode batch(?: \[(\d+)\])?, #running-req: (\d+),.*?accept len: (\d+\.\d+),")
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\S+)?$")


class Source:
    """A log read once, in chunks: its lines (UTF-8 checked), its SHA-256, and how far it has
    been read (for the progress line)."""

    def __init__(self, name, stream, size=None, progress=None):
        self.name, self.stream, self.size = name, stream, size
        self.digest = hashlib.sha256()
        self.done = 0
        self.head = stream.read(CHUNK)
        self.progress = progress or (lambda source, records: None)

    def chunks(self):
        chunk = self.head
        while chunk:
            self.digest.update(chunk)
            self.done += len(chunk)
            yield chunk
            chunk = self.stream.read(CHUNK)

    def blocks(self, tally=None):
        """``(number, block, offset, last)``: the bytes of each chunk's whole lines (``number``:
        its first line's, ``offset``: its first byte's), then a last line without its newline."""
        rest, number, offset = b"", 1, 0
        for chunk in self.chunks():
            block = rest + chunk
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            if cut:
                yield number, block[:cut], offset, False
                number += block.count(b"\n", 0, cut)
                offset += cut
            self.progress(self, tally.records if tally is not None else 0)
        if rest:
            yield number, rest, offset, True

    def lines(self, tally=None):
        """``(number, text, last)`` per line; ``last`` for a last line without its newline. Each
        block's lines are decoded at once (a line's own decode costs as much as its parse)."""
        for number, block, offset, last in self.blocks(tally):
            for i, text in enumerate(self.decode(block, offset).split("\n")[: None if last else -1]):
                yield number + i, text, last

    def text(self):
        """The whole input as text (a small file: a JSON document)."""
        data = b"".join(self.chunks())
        return self.decode(data, 0)

    def decode(self, raw, offset):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise LogError(f"{self.name}: not UTF-8 text (byte {offset + e.start})") from None


def _json_line(where, text, last, expected):
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        cut = ": a truncated last line?" if last else ""
        raise LogError(f"{where}: not JSON at column {e.colno} ({e.msg}){cut}") from None
    if not isinstance(obj, dict):
        raise LogError(f"{where}: a JSON {type(obj).__name__}, but should be an object with {expected}")
    return obj


def _integer(where, field, value, low=None):
    if type(value) is not int or (low is not None and value < low):
        more = "" if low is None else f" >= {low}"
        raise LogError(f"{where}: {field}={json.dumps(value)}, but should be an integer{more}")
    return value


def read_records(source, tally):
    """simacc's JSON Lines: ``{"step", "request", "accept_length"}`` and an optional
    ``drafted`` (the step's draft count, when it is not K). A block of lines all laid out as
    ``json.dumps`` writes a record of K drafts and an integer request is parsed by numpy and
    tallied at once; any other line through JSON, one at a time."""
    import numpy as np

    for number, block, offset, last in source.blocks(tally):
        if not last and SHAPE.fullmatch(block) is not None:
            values = np.fromstring(block.replace(b'{"step": ', b"").replace(b', "request": ', b" ").replace(
                b', "accept_length": ', b" ").replace(b"}", b""), dtype=np.int64, sep=" ").reshape(-1, 3)
            lines = np.arange(number, number + len(values))
            if tally.add_block(lines, values[:, 0], values[:, 1], values[:, 2]):
                continue
        for i, text in enumerate(source.decode(block, offset).split("\n")[: None if last else -1]):
            _record(source, tally, number + i, text, last)


def _record(source, tally, number, text, last):
    if not text.strip():
        return
    where = f"{source.name}:{number}"
    obj = _json_line(where, text, last, ", ".join(FIELDS))
    for field in FIELDS:
        if field not in obj:
            raise LogError(f"{where}: no {field!r} field (each line needs {', '.join(FIELDS)})")
    step, request, length = obj["step"], obj["request"], obj["accept_length"]
    _integer(where, "step", step)
    _integer(where, "accept_length", length)
    drafted = obj.get("drafted")
    if drafted is not None:
        _integer(where, "drafted", drafted, 0)
    if type(request) not in (int, str):
        raise LogError(f"{where}: request={json.dumps(request)}, but should be an integer or a string")
    _add(tally, where, number, step, request, length, drafted)


def _add(tally, where, number, step, request, length, drafted):
    try:
        tally.add(number, step, request, length, drafted)
    except LogError as e:
        raise LogError(f"{where}: {e}") from None


def read_vllm_responses(source, tally):
    """vLLM's response bodies, one a line: ``metrics.speculative_decoding``'s per-step arrays (a
    record per verify step: the request's own step index, its drafts), or, without them, its
    ``acceptance_histogram``."""
    k, histogram, detailed = tally.k, None, None
    for number, text, last in source.lines(tally):
        if not text.strip():
            continue
        where = f"{source.name}:{number}"
        body = _json_line(where, text, last, "metrics.speculative_decoding (a vLLM response body)")
        spec = (body.get("metrics") or {}).get("speculative_decoding") if isinstance(body.get("metrics"), dict) \
            else None
        if not isinstance(spec, dict):
            raise LogError(f"{where}: no metrics.speculative_decoding (start vLLM with "
                           "--per-request-spec-decode-metrics detailed; it is null for n > 1)")
        if spec.get("num_spec_tokens") != k:
            raise LogError(f"{where}: num_spec_tokens={json.dumps(spec.get('num_spec_tokens'))}, but --steps says "
                           f"K = {k}")
        has_steps = isinstance(spec.get("per_step_accepted"), list)
        if detailed is None:
            detailed = has_steps
        elif detailed != has_steps:
            raise LogError(f"{where}: {'has' if has_steps else 'has no'} per_step_accepted, unlike the lines before "
                           "(one metrics level for the whole file)")
        if not detailed:
            counts = spec.get("acceptance_histogram")
            if not isinstance(counts, list) or len(counts) != k + 1 or any(
                    type(c) is not int or c < 0 for c in counts):
                raise LogError(f"{where}: acceptance_histogram={json.dumps(counts)}, but should be {k + 1} counts")
            histogram = counts if histogram is None else [a + b for a, b in zip(histogram, counts)]
            continue
        accepted, drafted = spec["per_step_accepted"], spec.get("per_step_drafted")
        if not isinstance(drafted, list) or len(drafted) != len(accepted):
            raise LogError(f"{where}: per_step_drafted should be a list as long as per_step_accepted")
        request = body.get("id", number)
        if type(request) not in (int, str):
            request = number
        for step, (a, d) in enumerate(zip(accepted, drafted)):
            _integer(where, f"per_step_accepted[{step}]", a, 0)
            _integer(where, f"per_step_drafted[{step}]", d, 0)
            _add(tally, where, number, step, request, a + 1, d)
    if histogram is not None:
        tally.add_counts(histogram)


def read_prometheus(source, tally, before=None):
    """A scrape of vLLM's ``/metrics`` (less ``before``'s): drafts and the accepted tokens per
    position, summed over the labels of each engine; a step's accepted count is ``a`` where
    positions ``0..a-1`` were accepted, so ``position j``'s count is the steps that accepted
    more than ``j``."""
    after = _scrape(source)
    if before is not None:
        earlier = _scrape(before)
        after = {key: value - earlier.get(key, 0.0) for key, value in after.items()}
    k, name = tally.k, source.name
    drafts = after.get(("drafts", None), 0.0)
    positions = sorted(p for kind, p in after if kind == "per_pos")
    if positions != list(range(k)):
        raise LogError(f"{name}: {PROMETHEUS['per_pos']} has positions {positions}, but --steps says K = {k} "
                       "(positions 0..K-1)")
    reached = [drafts] + [after["per_pos", p] for p in range(k)] + [0.0]
    counts = [reached[a] - reached[a + 1] for a in range(k + 1)]
    if any(c < 0 or c != int(c) for c in counts) or drafts <= 0:
        said = "fewer drafts than before" if drafts < 0 else "no drafts" if drafts == 0 else \
            f"accepted tokens per position {[reached[p + 1] for p in range(k)]} that do not fall from {drafts:g} drafts"
        raise LogError(f"{name}: {said}" + (" (is --before the earlier scrape?)" if before is not None else ""))
    tally.add_counts([int(c) for c in counts])
    tally.drafts = (int(drafts), int(after.get(("draft_tokens", None), 0.0)))


def _scrape(source):
    """``{(kind, position): value}`` of vLLM's spec-decode counters in a Prometheus text scrape."""
    names = {v: key for key, v in PROMETHEUS.items()}
    found, seen = {}, False
    for number, text, _ in source.lines():
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        sample = SAMPLE.match(text)
        if sample is None:
            raise LogError(f"{source.name}:{number}: not a Prometheus sample line (name{{labels}} value)")
        metric, labels, value = sample.group(1), sample.group(2) or "", sample.group(3)
        kind = names.get(metric)
        if kind is None:
            continue
        seen = True
        try:
            number_ = float(value)
        except ValueError:
            raise LogError(f"{source.name}:{number}: {metric} has value {value!r}, not a number") from None
        position = None
        if kind == "per_pos":
            match = re.search(r'position="(\d+)"', labels)
            if match is None:
                raise LogError(f"{source.name}:{number}: {metric} without a position label")
            position = int(match.group(1))
        found[kind, position] = found.get((kind, position), 0.0) + number_
    if not seen:
        raise LogError(f"{source.name}: no vLLM spec-decode counters ({', '.join(PROMETHEUS.values())}): a scrape of "
                       "vLLM's /metrics with speculative decoding on")
    return found


def read_sglang_log(source, tally, interval):
    """sglang's ``Decode batch`` lines: at interval 1 each is a step, its ``accept len`` the
    step's mean over its requests (a lockstep step's one length, an integer); wider, each is a
    mean over ``interval`` steps, printed to two decimals."""
    if tally.law.engine.id not in SGLANG_ENGINES:
        raise LogError(f"{source.name}: sglang's log, but --engine {tally.law.engine.id}: the format is sglang's "
                       f"({', '.join(SGLANG_ENGINES)})")
    values, step = [], 0
    for number, text, _ in source.lines(tally):
        match = DECODE.search(text)
        if match is None:
            continue
        value = float(match.group(3))
        values.append(value)
        if interval == 1:
            if value == int(value):
                _add(tally, f"{source.name}:{number}", number, step, "batch", int(value), None)
            else:
                tally.add_mean(number, step, match.group(3))
            step += 1
    if not values:
        raise LogError(f"{source.name}: no 'Decode batch ... accept len: X.XX' line (sglang's server log with "
                       "speculative decoding on)")
    if interval > 1:
        tally.set_mean(math.fsum(values) / len(values), len(values) * interval, 0.005)


def read_sglang_responses(source, tally):
    """sglang's ``/generate`` bodies, one a line: ``meta_info.spec_correct_drafts_histogram``
    (a request's verify steps by accepted drafts). Under a lockstep law a step's requests share
    one draw, so only one request's steps are independent: the request with the most."""
    best = None
    for number, text, last in source.lines(tally):
        if not text.strip():
            continue
        where = f"{source.name}:{number}"
        body = _json_line(where, text, last, "meta_info (an sglang /generate body)")
        counts = (body.get("meta_info") or {}).get("spec_correct_drafts_histogram") \
            if isinstance(body.get("meta_info"), dict) else None
        if not isinstance(counts, list) or any(type(c) is not int or c < 0 for c in counts):
            raise LogError(f"{where}: no meta_info.spec_correct_drafts_histogram (a list of counts; sglang fills it "
                           "for speculative decoding)")
        if best is None or sum(counts) > sum(best):
            best = counts
    if best is None:
        raise LogError(f"{source.name}: no responses")
    tally.add_counts(best)


def read_atom_stats(source, tally):
    """ATOM's ``/debug/mtp_stats``: its ``distribution`` (steps by accepted drafts), or its
    ``average_tokens_per_forward`` over ``total_draft_tokens / K`` steps."""
    if tally.law.engine.id not in ATOM_ENGINES:
        raise LogError(f"{source.name}: ATOM's /debug/mtp_stats, but --engine {tally.law.engine.id}")
    try:
        stats = json.loads(source.text(), parse_float=_Printed)
    except json.JSONDecodeError as e:
        raise LogError(f"{source.name}: not JSON at line {e.lineno} column {e.colno} ({e.msg}): expected ATOM's "
                       "/debug/mtp_stats") from None
    if not isinstance(stats, dict) or not stats.get("enabled"):
        raise LogError(f"{source.name}: not ATOM's /debug/mtp_stats with \"enabled\": true (speculative decoding on)")
    distribution = stats.get("distribution")
    if isinstance(distribution, dict) and distribution:
        counts = [0] * (tally.k + 1)
        for key, steps in distribution.items():
            if not key.isdigit() or type(steps) is not int or steps < 0:
                raise LogError(f"{source.name}: distribution {{{json.dumps(key)}: {json.dumps(steps)}}}, but should "
                               "map accepted drafts to steps")
            counts += [0] * (int(key) + 1 - len(counts))
            counts[int(key)] += steps
        tally.add_counts(counts)
        return
    mean, tokens = stats.get("average_tokens_per_forward"), stats.get("total_draft_tokens")
    if not isinstance(mean, _Printed) or type(tokens) is not int or tokens % tally.k:
        raise LogError(f"{source.name}: no distribution, and no average_tokens_per_forward with total_draft_tokens "
                       f"(a multiple of K = {tally.k})")
    tally.set_mean(float(mean), tokens // tally.k, mean.rounding)


class _Printed(float):
    """A JSON number with what its printing may have rounded off: half its last decimal (none
    past 14 decimals, a float printed in full)."""

    def __new__(cls, text):
        number = super().__new__(cls, text)
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 17
        number.rounding = 0.5 * 10 ** -decimals if decimals < 15 else 0.0
        return number


FORMATS = {
    "records": "simacc's JSON Lines: step, request, accept_length (and drafted) per request per step",
    "vllm-responses": "vLLM response bodies, one a line, with metrics.speculative_decoding",
    "vllm-prometheus": "a Prometheus text scrape of vLLM's /metrics (vllm:spec_decode_*)",
    "sglang-log": "sglang's server log ('Decode batch ... accept len: X.XX' lines)",
    "sglang-responses": "sglang /generate bodies, one a line, with meta_info.spec_correct_drafts_histogram",
    "atom-mtp-stats": "ATOM's /debug/mtp_stats JSON",
}


def detect(source):
    """The format of ``source`` from its first chunk; a :class:`LogError` naming the formats
    expected when none fits."""
    head = source.head.decode("utf-8", errors="replace")
    first = next((line for line in head.split("\n") if line.strip()), "")
    if first.lstrip().startswith("{"):
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            if "accept_length" in obj:
                return "records"
            if "metrics" in obj:
                return "vllm-responses"
            if "meta_info" in obj:
                return "sglang-responses"
        if '"average_tokens_per_forward"' in head or '"distribution"' in head:
            return "atom-mtp-stats"
    if "vllm:spec_decode_" in head:
        return "vllm-prometheus"
    if "Decode batch" in head:
        return "sglang-log"
    if not head.strip():
        raise LogError(f"{source.name}: no records (one JSON object per request per step)")
    expected = "; ".join(f"{name} ({what})" for name, what in FORMATS.items())
    raise LogError(f"{source.name}: an unknown format (its first line: {first[:60]!r}); expected one of: {expected}; "
                   "name it with --format")
