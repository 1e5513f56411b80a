"""simacc's own Hypothesis settings profiles, applied to simacc's properties only.

They are registered under simacc's names (``simacc-default``, ``simacc-ci``,
``simacc-thorough``) and never loaded: a host project's own profile, the ``ci`` profile
Hypothesis loads when ``CI`` is set, and every ``@given`` test outside simacc keep their
settings. Each property builds its Hypothesis test with :func:`for_session` when it runs.

* ``default``: quick local runs; random, with a local example database so that a failure
  found once is replayed first the next time, before it is fixed and promoted.
* ``ci``: derandomized (the same examples every run, so CI is never flaky), no database,
  ``print_blob`` on so a CI log carries a reproduction blob.
* ``thorough``: ``simacc fuzz``; random, many examples, the local database.
* ``replay``: the example database's examples and nothing else (``simacc repro --database``):
  a property the database holds nothing of is skipped, saying so.

No deadline anywhere: the first call of a torch op, or of a CUDA kernel, is slow for
reasons that are not the implementation's fault. Every value that matters is stated, so a
host's changes to Hypothesis's ``default`` profile do not reach these.

A database setting (``SIMACC_DATABASE``, :func:`database`) replaces the profile's choice,
for every profile: a shared database is only useful if every run, CI's included, replays it.
Each location maps onto one of Hypothesis's own databases, nothing home-made. Hypothesis
forbids a database with ``derandomize`` and keeps none for a seeded test (``@seed``, as
``--seed`` runs): such a property replays the database's examples first, in a run of their
own (:data:`REPLAY`, :meth:`simacc.harness.judging.catalogue.Property.run`), then generates its
examples without it. ``ci`` with a database generates with a fixed seed in place of
derandomize (:data:`~simacc.harness.config.settings.CI_SEED`, which
:func:`~simacc.harness.config.settings.resolve` gives its settings): the same examples every
run, after the database's.
"""

import contextlib
import socket
import warnings
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)
from hypothesis.errors import HypothesisWarning

from simacc.harness.config import settings as opts

EXAMPLES = {"default": 50, "ci": 200, "thorough": 2000, "replay": 1}
LOCAL = {"default": True, "ci": False, "thorough": True, "replay": True}  # whether the local example database is used
DATABASE = ".hypothesis/examples"  # under the folder the session started in, like Hypothesis's own
ARTIFACTS = ".hypothesis/github-artifacts"  # where GitHub artifacts are cached, one folder per artifact
GITHUB_TIMEOUT_S = 30
REPLAY = (Phase.reuse, Phase.shrink)  # the database's examples alone, shrunk when one fails
_COMMON = dict(
    deadline=None,
    print_blob=True,
    verbosity=Verbosity.normal,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

for _name, _examples in EXAMPLES.items():
    settings.register_profile(
        f"simacc-{_name}",
        parent=settings.get_profile("default"),
        max_examples=_examples,
        derandomize=_name in opts.DERANDOMIZED,
        database=None,
        **({"phases": REPLAY} if _name == "replay" else {}),
        **_COMMON,
    )


class DatabaseError(Exception):
    """An example database that cannot be used: one line, a usage error (never a silent run
    without it)."""


def for_session(name, max_examples=None, root=".", database=None, readonly=False):
    """The Hypothesis settings of profile ``name`` (``default``, ``ci``, ``thorough``) for a
    session started in ``root``: its example database there, or the one ``database`` names
    (a :func:`simacc.harness.config.settings.database` value), read-only with ``readonly``;
    ``max_examples`` overriding. Raises :class:`DatabaseError` for one that cannot be
    reached."""
    chosen = settings.get_profile(f"simacc-{name}")
    overrides = {}
    found = open_database(database, root) if database else (
        DirectoryBasedExampleDatabase(str(Path(root).resolve() / DATABASE)) if LOCAL[name] else None)
    if found is not None:
        overrides["database"] = ReadOnlyDatabase(found) if readonly else found
        if chosen.derandomize:
            overrides["derandomize"] = False  # with the fixed seed its settings have (settings.resolve)
    if max_examples:
        overrides["max_examples"] = max_examples
    return settings(chosen, **overrides) if overrides else chosen


def open_database(locations, root="."):
    """The Hypothesis database of ``locations`` (see :func:`simacc.harness.config.settings.database`),
    each reached once now: a Redis server answers, a GitHub artifact is downloaded (or found in
    its cache). Several locations make one :class:`MultiplexedDatabase`; a GitHub artifact is
    always read-only."""
    found = [_open(location, Path(root).resolve()) for location in opts.database_locations(locations, root)]
    return found[0] if len(found) == 1 else MultiplexedDatabase(*found)


def _open(location, root):
    if location.startswith(("redis:", "rediss:")):
        return _redis(location)
    github = opts.GITHUB.fullmatch(location)
    if github:
        owner, repo, artifact = github.groups()
        name = artifact[1:] if artifact else "hypothesis-example-db"
        found = GitHubArtifactDatabase(owner, repo, artifact_name=name, path=root / ARTIFACTS / name)
        with warnings.catch_warnings(record=True) as said, _network_timeout(GITHUB_TIMEOUT_S):
            warnings.simplefilter("always", HypothesisWarning)
            list(found.fetch(b"simacc: is it there?"))  # downloads the artifact, or says why not
        # Hypothesis warns and goes on without the database; an expired cached artifact is
        # still a database (it says so), anything else is none at all
        problems = [str(w.message).strip() for w in said
                    if issubclass(w.category, HypothesisWarning) and "expired" not in str(w.message)]
        if problems:
            raise DatabaseError(f"database {location}: {' '.join(problems)}")
        return ReadOnlyDatabase(found)
    path = Path(location)
    if path.exists() and not path.is_dir():
        raise DatabaseError(f"database {location}: not a directory")
    return DirectoryBasedExampleDatabase(str(path))


@contextlib.contextmanager
def _network_timeout(seconds):
    """A time limit on the sockets opened meanwhile: Hypothesis downloads an artifact with
    none, and an unreachable host would hang the session instead of failing it."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def _redis(url):
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise DatabaseError(f"database {url}: needs the redis client (pip install 'simacc[redis]')") from None
    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
    try:
        client.ping()
    except redis.RedisError as e:
        raise DatabaseError(f"database {url}: cannot reach the server: {e}") from None
    return RedisExampleDatabase(client)


def describe(name, locations, readonly, root="."):
    """How the header names the database of profile ``name``: its locations (a GitHub
    artifact is always read-only), or the profile's own directory, or none."""
    if not locations:
        if not LOCAL[name]:
            return f"none (profile {name} keeps none)"
        where = [f"{DATABASE} (profile {name}'s)"]
    else:
        where = [p + (" (read-only)" if p.startswith("github:") and not readonly else "")
                 if p.startswith(("redis:", "rediss:", "github:")) else str(opts.shown(p, root))
                 for p in opts.database_locations(locations, root)]
    return ", ".join(where) + ("; read-only" if readonly else "")
