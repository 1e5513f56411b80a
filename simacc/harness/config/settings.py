"""What a session checks and how: one :class:`Settings` record, resolved once.

Each setting is an :class:`Option`: its ``SIMACC_*`` variable, its spelling under pytest
(``--simacc-<name>``) and on simacc's own commands (``--<name>``), how its text is parsed
and its default. :func:`resolve` applies "option, then variable, then default", and works out
what follows from them (the profile CI picks, a derandomized profile's seed), exactly once,
on the process that starts a session (a command, or else the pytest controller); the
session's pytest process and its xdist workers receive the result (:meth:`Settings.to_json`),
the way pytest-randomly hands its seed to them, and never resolve anything again. Paths are
made absolute at resolution, so an implementation that changes the working directory moves
nothing.

Every parse error is a :class:`SettingsError`: one line naming the option or variable.
"""

import argparse
import dataclasses
import functools
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from simacc.harness.config import contracts, devices, grad_modes

PROFILES = ("default", "ci", "thorough", "replay")  # simacc's own Hypothesis profiles: simacc-default, ...
DERANDOMIZED = ("ci",)  # the profiles that run the same examples every time (Hypothesis's derandomize)
CI_SEED = 0  # their seed where an example database rules derandomize out (Hypothesis forbids the two together)
DEFAULT_TIMEOUT = 30.0
REPRO_DIR = ".simacc/failures"
CORPUS_DIR = "simacc-regressions"  # a project's own regression cases, in its rootdir
MAX_TOKEN_ID = 2**31 - 1  # predict is int32
REFERENCES = "references"  # the IMPL that runs each property against its own contract's reference


class SettingsError(ValueError):
    """A bad option or ``SIMACC_*`` value: one line, a usage error."""


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise ValueError(f"must be a whole number, got {text!r}") from None


def positive_int(text):
    value = _int(text)
    if value < 1:
        raise ValueError(f"must be >= 1, got {text!r}")
    return value


def positive_number(unit):
    """A parser of a number of ``unit`` (seconds, minutes) that must be > 0."""

    def parse(text):
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise ValueError(f"must be a number of {unit}, got {text!r}") from None
        if not value > 0:
            raise ValueError(f"must be > 0, got {text!r}")
        return value

    return parse


def _choice(names):
    def parse(text):
        if text not in names:
            raise ValueError(f"must be one of {', '.join(names)}, got {text!r}")
        return text

    return parse


def _devices(text):
    devices.expand(text)
    return text


def _contexts(text):
    grad_modes.expand(text)
    return text


def _profile(text):
    name = str(text).removeprefix("simacc-")
    if name not in PROFILES:
        raise ValueError(f"unknown profile {text!r}; simacc's profiles are {', '.join(PROFILES)}")
    return name


def fixed_token_id(text):
    """A fixed token id: a whole number that fits in ``predict`` (int32, not negative)."""
    value = _int(text)
    if not 0 <= value <= MAX_TOKEN_ID:
        raise ValueError(f"must be in [0, {MAX_TOKEN_ID}] (predict is int32), got {text!r}")
    return value


def _path(text):
    return Path(text)


def _switch(text):
    """A ``SIMACC_*`` variable of an on/off option: 1, true, yes, on or 0, false, no, off."""
    value = str(text).strip().lower()
    if value not in _SWITCH:
        raise ValueError(f"must be one of 1, true, yes, on, 0, false, no, off, got {text!r}")
    return _SWITCH[value]


_SWITCH = {**dict.fromkeys(("1", "true", "yes", "on"), True), **dict.fromkeys(("0", "false", "no", "off"), False)}
REDIS = re.compile(r"rediss?://[^/?#]+(/\d+)?")  # redis://host:port/db, the db a number
GITHUB = re.compile(r"github:([\w.-]+)/([\w.-]+)(@[\w.-]+)?")  # github:owner/repo[@artifact]


def database(text):
    """A database location: ``redis://host:port/db``, ``github:owner/repo[@artifact]`` or a
    directory, or several of them separated by commas (one database that writes to all and
    reads from all). Checked here without contacting anything; a directory stays as written
    until :func:`resolve` makes it absolute."""
    parts = [part.strip() for part in str(text).split(",")]
    if not all(parts):
        raise ValueError(f"an empty location in {text!r}")
    for part in parts:
        if part.startswith(("redis:", "rediss:")) and not REDIS.fullmatch(part):
            raise ValueError(f"{part!r} is not a Redis URL: expected redis://host:port/db")
        if part.startswith("github:") and not GITHUB.fullmatch(part):
            raise ValueError(f"{part!r} is not a GitHub artifact: expected github:owner/repo or "
                             "github:owner/repo@artifact-name")
    return ",".join(parts)


def database_locations(text, root):
    """The locations of a :func:`database` value, each directory made absolute from ``root``."""
    return [part if part.startswith(("redis:", "rediss:", "github:")) else str(Path(root) / part)
            for part in text.split(",")]


def one_device(text):
    """A single device spelling (``cpu``, ``cuda:1``), not ``all`` or a list."""
    return devices.check(text)


def workers(text):
    """pytest-xdist's ``-n``: ``auto`` or a count >= 0 (0 runs in one process)."""
    if text == "auto":
        return text
    value = _int(text)
    if value < 0:
        raise ValueError(f"must be 'auto' or a number >= 0, got {text!r}")
    return str(value)


@dataclass(frozen=True)
class Option:
    """One setting: ``name`` is its field in :class:`Settings` and gives ``SIMACC_<NAME>``,
    ``--simacc-<name>`` under pytest and ``--<name>`` on the commands."""

    name: str
    parse: object
    help: str
    metavar: str = "VALUE"
    repeat: bool = False  # an option given several times (no variable)
    spelling: str = ""  # the flag's name, when not the field's
    fallback: str = ""  # the implementation's own variable, read when neither the option nor SIMACC_* is set
    switch: bool = False  # a flag without a value, on when given (its variable: 1/0, true/false, ...)

    @property
    def variable(self):
        return None if self.repeat else f"SIMACC_{self.name.upper()}"

    def flag(self, pytest=False):
        return f"--{'simacc-' if pytest else ''}{(self.spelling or self.name).replace('_', '-')}"

    @property
    def dest(self):
        return f"simacc_{self.name}"


OPTIONS = {
    o.name: o
    for o in (
        Option("impl", str, "the implementation under test: 'package.module:attribute' or 'path/to/file.py:attribute'",
               "IMPL"),
        Option("contract", str, "force its contract, by name (docs/contracts.md lists them), instead of inferring "
               "it from the signature", "NAME"),
        Option("level", _choice(contracts.LEVELS), "exact (default): L is the documented draw from torch's CPU "
               "generator; semantic: for ports that draw L their own way", "LEVEL"),
        Option("device", _devices, f"{devices.HELP} (default all: a missing device is skipped with the reason)",
               "DEVICES"),
        Option("context", _contexts, f"grad modes to call it in: {grad_modes.HELP}; the serving-loop properties "
               "run in each, every other property in the first", "MODES"),
        Option("run_context", _choice(grad_modes.NAMES), "the one grad mode this session's processes run (a server "
               "runs one per process): the first of --context by default; simacc check and fuzz run a session for "
               "each", "MODE"),
        Option("profile", _profile, f"simacc's Hypothesis profile: {', '.join(PROFILES)} (default ci when CI is set, "
               "else default)", "NAME"),
        Option("max_examples", positive_int, "examples per property (overrides the profile)", "N"),
        Option("seed", _int, "Hypothesis seed, for a reproducible run", "S"),
        Option("timeout", positive_number("seconds"), f"per-call time limit in seconds (default {DEFAULT_TIMEOUT:g})",
               "S"),
        Option("fixed_token_id", fixed_token_id, "the id fixed mode must write, in every contract (default 100; "
               "sglang-jax writes 32): the id the implementation is built or set to write; it sets nothing in it",
               "N", fallback="SGLANG_SIMULATE_ACC_TOKEN_ID"),
        Option("refused_drafts", _choice(contracts.REFUSED_DRAFTS), "vLLM's samplers: who keeps a draft the "
               "request's grammar refuses from being accepted (CONTRACT.md §15.4): sampler (default; vLLM 0.34 on, "
               "whose runner passes it on) or runner (vLLM 0.33, whose runner makes it and the drafts after it -1 "
               "before the sampler: the cases then come so)", "WHO"),
        Option("tokenizer", _path, "the served model's tokenizer.json (read locally, never fetched): check that the "
               "fixed id decodes to visible text in it (needs the tokenizers package)", "PATH"),
        Option("xfails", _path, "file of property ids expected to fail, one a line, '#' comments", "FILE"),
        Option("repro_dir", _path, f"where repro files of failing cases go (default {REPRO_DIR})", "DIR"),
        Option("corpus", _path, f"this project's regression corpus, replayed with simacc's own (default {CORPUS_DIR} "
               "in the rootdir)", "DIR"),
        Option("properties", str, "check only this property: an id, id[device] or a shell pattern (repeatable)", "ID",
               repeat=True, spelling="property"),
        Option("database", database, "Hypothesis's example database, replayed first and written with every failing "
               "example: redis://host:port/db, github:owner/repo[@artifact] (read-only), a directory, or several, "
               "comma-separated (default: the profile's, .hypothesis/examples)", "URL"),
        Option("database_readonly", _switch, "read the example database, never write to it (a pull-request job "
               "reading a fuzzing farm's)", switch=True),
    )
}


@dataclass(frozen=True)
class Settings:
    """A session's choices, every one resolved (see the module)."""

    impl: str | None = None
    contract: str | None = None
    level: str = "exact"
    device: str = devices.ALL
    context: str = grad_modes.ALL
    run_context: str | None = None  # None: the first of ``contexts``
    profile: str = "default"
    max_examples: int | None = None
    seed: int | None = None  # the seed the properties run with (None: the profile's, random or derandomized)
    timeout: float = DEFAULT_TIMEOUT
    fixed_token_id: int | None = None  # None: nothing set it, so 100
    refused_drafts: str = contracts.REFUSED_DRAFTS[0]
    tokenizer: Path | None = None  # the served model's tokenizer.json, absolute
    xfails: Path | None = None
    repro_dir: Path = Path(REPRO_DIR)
    corpus: Path = Path(CORPUS_DIR)
    properties: tuple = ()
    database: str | None = None  # None: the profile's own; directories absolute
    database_readonly: bool = False

    @property
    def devices(self):
        return devices.expand(self.device)

    @property
    def contexts(self):
        """The grad modes selected (:mod:`simacc.harness.config.grad_modes`), in order."""
        return grad_modes.expand(self.context)

    @property
    def process_context(self):
        """The grad mode this session's processes run (CONTRACT.md §11.5)."""
        return self.run_context or self.contexts[0]

    def per_process(self):
        """These settings once for each grad mode that needs processes of its own: a session
        each (:mod:`simacc.harness.sessions.session`)."""
        if self.run_context is not None:
            return [self]
        return [dataclasses.replace(self, run_context=mode) for mode in self.contexts]

    @property
    def references(self):
        """True when each property runs against its own contract's reference."""
        return self.impl == REFERENCES

    def to_json(self):
        return {k: str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v
                for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, data):
        paths = {f.name for f in dataclasses.fields(cls) if "Path" in str(f.type)}
        return cls(**{k: Path(v) if k in paths and v is not None else tuple(v) if isinstance(v, list) else v
                      for k, v in data.items()})


def resolve(given, environ=None, root=None, home=None, ini=None, parse=None):
    """The :class:`Settings` from ``given`` (``{name: value or None}``, values already parsed,
    as the options hold them), then ``SIMACC_*`` in ``environ``, then ``ini`` (a project's
    own, from its pytest configuration: ``simacc_impl``), then the defaults, and what
    follows from them: the seed of a derandomized profile given a database (:data:`CI_SEED`).
    Relative paths are taken from ``root`` (default: the working directory); the project's
    corpus is by default in ``home`` (pytest's rootdir; default ``root``). ``parse`` replaces
    options' parses as in :func:`add_arguments`, for the variables too."""
    environ = os.environ if environ is None else environ
    root = Path(root or os.getcwd())
    values = {}
    for option in OPTIONS.values():
        value = given.get(option.name)
        for variable in (option.variable, option.fallback):
            if value is None and variable and environ.get(variable):
                try:
                    value = (parse or {}).get(option.name, option.parse)(environ[variable])
                except ValueError as e:
                    raise SettingsError(f"{variable}: {e}") from None
        if value is None:
            value = (ini or {}).get(option.name)
        if value is not None:
            values[option.name] = tuple(value) if option.repeat else value
    values.setdefault("profile", default_profile(environ))
    for name in ("tokenizer", "xfails", "repro_dir", "corpus"):
        if name in values:
            values[name] = root / values[name]
    values.setdefault("repro_dir", root / REPRO_DIR)
    values.setdefault("corpus", Path(home or root) / CORPUS_DIR)
    if "database" in values:
        values["database"] = ",".join(database_locations(values["database"], root))
    if "seed" not in values and "database" in values and values["profile"] in DERANDOMIZED:
        values["seed"] = CI_SEED  # the same examples every run, after the database's (profiles.for_session)
    settings = Settings(**values)
    if settings.run_context is not None and settings.run_context not in settings.contexts:
        raise SettingsError(f"{OPTIONS['run_context'].flag()} {settings.run_context}: not one of the grad modes "
                            f"selected ({', '.join(settings.contexts)})")
    if settings.xfails is not None:
        read_xfails(settings.xfails)  # unreadable: a usage error now, not later
    if settings.tokenizer is not None:
        from simacc.harness.config import tokenizer

        try:
            tokenizer.load(settings.tokenizer)  # the same: no tokenizer, or no package to read it
        except tokenizer.TokenizerError as e:
            raise SettingsError(str(e)) from None
    return settings


def default_profile(environ=None):
    """The profile where none is chosen: ``ci`` under CI (``CI`` set), else ``default``."""
    return "ci" if (os.environ if environ is None else environ).get("CI") else "default"


def seed_text(seed, profile):
    """How a header says the seed a session's properties run with."""
    return str(seed) if seed is not None else "derandomized" if profile in DERANDOMIZED else "random"


def origin(name, given, environ=None):
    """Where setting ``name``'s value came from, as a header says it: its option, its
    variable, the implementation's own variable, or ``default``."""
    environ = os.environ if environ is None else environ
    option = OPTIONS[name]
    if given.get(name) is not None:
        return option.flag()
    return next((v for v in (option.variable, option.fallback) if v and environ.get(v)), "default")


def shown(path, start=None):
    """How a resolved path is printed: relative to ``start`` (the working directory) when it
    lies below it, else whole."""
    try:
        return Path(path).resolve().relative_to(Path(start or os.getcwd()).resolve())
    except ValueError:
        return Path(path)


def read_xfails(path):
    """``{property id: line number}`` from an xfails file; ``#`` starts a comment."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"xfails file {path}: {getattr(e, 'strerror', None) or e}") from None
    ids = {}
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if entry:
            ids[entry] = number
    return ids


def argtype(parse):
    """``parse`` as an argparse ``type=``: its ``ValueError`` becomes argparse's error."""

    def checked(text):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    checked.__name__ = getattr(parse, "__name__", "value")
    return checked


def add_arguments(parser, names, pytest=False, parse=None):
    """Add the options ``names`` to an argparse parser (or a pytest option group), each with
    its variable in the help; ``parse`` maps an option's name to a parse that replaces its own
    (the commands check ``--contract`` against the catalogue's contracts, which the harness is
    handed only where an implementation loads)."""
    add = parser.addoption if pytest else parser.add_argument
    for name in names:
        option = OPTIONS[name]
        if parse and name in parse:
            option = dataclasses.replace(option, parse=parse[name])
        env = f" (env {option.variable})" if option.variable else ""
        if option.switch:
            add(option.flag(pytest), dest=option.dest, default=None, action="store_true", help=option.help + env)
            continue
        add(option.flag(pytest), dest=option.dest, metavar=option.metavar, default=None,
            action="append" if option.repeat else "store", type=argtype(option.parse), help=option.help + env)


def given(namespace, names=OPTIONS):
    """``{name: value}`` of the options ``names`` as an argparse namespace (or pytest's
    ``config.option``) holds them."""
    return {name: getattr(namespace, OPTIONS[name].dest, None) for name in names}


def in_effect(environ=None):
    """``{name: value}`` for every ``SIMACC_*`` variable that is set."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items()) if k.startswith("SIMACC_")}


@functools.cache
def properties_dir():
    """Where simacc's property modules lie (found, not imported)."""
    return Path(importlib.util.find_spec("simacc.properties").origin).resolve().parent
