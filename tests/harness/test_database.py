"""Self-tests of the shared example database: the ``database`` setting and what it maps onto
(Hypothesis's own databases), the keys examples are stored under, and, against a real
``redis-server`` on 127.0.0.1 (Debian's package: ``.ci/run`` installs it; without it those
tests skip and say so), a find of one fuzzing process replayed by another and by a
read-only ``simacc check`` that writes nothing."""

import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import pytest
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)
from hypothesis.internal.reflection import function_digest
from tests import offered
from tests.harness.rare_mutant import KILLER, SPEC

from simacc import properties
from simacc import strategies as sx
from simacc.harness.call import impl as impls
from simacc.harness.config import profiles
from simacc.harness.config import settings as opts
from simacc.harness.model import repro_files as reprofile
from simacc.harness.plugin import fixtures, reports


def simacc(*argv, cwd, timeout=180):
    """``simacc ARGV`` in a process of its own, from ``cwd``, without this session's ``SIMACC_*``
    settings (:func:`offered.without_settings`)."""
    env = offered.without_settings()
    return subprocess.run([sys.executable, "-m", "simacc", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the setting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, fragment", [
    ("redis:/localhost", "is not a Redis URL"),
    ("redis://localhost:6379/zero", "is not a Redis URL"),
    ("github:owner", "is not a GitHub artifact"),
    ("github:owner/repo@", "is not a GitHub artifact"),
    ("dir,,redis://h:1/0", "an empty location"),
])
def test_a_malformed_database_is_a_one_line_error_naming_it(text, fragment):
    with pytest.raises(opts.SettingsError, match=f"^SIMACC_DATABASE: .*{fragment}") as e:
        opts.resolve({}, environ={"SIMACC_DATABASE": text})
    assert "\n" not in str(e.value)


def test_a_directory_is_made_absolute_and_urls_stay_as_written(tmp_path):
    chosen = opts.resolve({"database": "db,redis://farm:6379/2,github:org/repo@nightly"}, environ={}, root=tmp_path)
    assert chosen.database == f"{tmp_path / 'db'},redis://farm:6379/2,github:org/repo@nightly"
    assert opts.Settings.from_json(chosen.to_json()) == chosen  # as xdist workers receive it


@pytest.mark.parametrize("text, value", [("1", True), ("yes", True), ("off", False), ("0", False)])
def test_the_read_only_switch_is_a_flag_and_its_variable_says_yes_or_no(text, value):
    assert opts.resolve({}, environ={"SIMACC_DATABASE_READONLY": text}).database_readonly is value
    with pytest.raises(opts.SettingsError, match="^SIMACC_DATABASE_READONLY: must be one of"):
        opts.resolve({}, environ={"SIMACC_DATABASE_READONLY": "maybe"})


@pytest.mark.parametrize("handed, beside, said", [
    ('{"impl": "m:f"}', {"simacc_impl": "other:g"}, "give no other --simacc-* option beside it (got --simacc-impl)"),
    ("not json", {}, "--simacc-settings: not the settings simacc writes"),
    ('{"bogus": 1}', {}, "--simacc-settings: not the settings simacc writes"),
])
def test_handed_settings_beside_another_option_or_not_simaccs_are_a_usage_error(handed, beside, said):
    from simacc.harness.plugin import fixtures

    option = types.SimpleNamespace(**{**{o.dest: None for o in opts.OPTIONS.values()}, **beside})
    config = types.SimpleNamespace(option=option, getoption=lambda name: handed)
    with pytest.raises(pytest.UsageError, match=re.escape(said)):
        fixtures._handed(config)


def test_a_commands_session_is_handed_its_settings_whole_in_one_token_and_never_resolves_them_again(tmp_path):
    from simacc.harness.sessions import session

    chosen = opts.resolve({"impl": "m:f", "database": "db", "database_readonly": True, "profile": "ci"}, environ={},
                          root=tmp_path)
    args = session.arguments(chosen, 0, tmp_path / "events", tmp_path, targets=())
    (handed,) = [a.removeprefix("--simacc-settings=") for a in args if a.startswith("--simacc-settings=")]
    assert opts.Settings.from_json(json.loads(handed)) == chosen and chosen.seed == opts.CI_SEED
    # the child reads them as they are: a SIMACC_* it would reject, and its own ini's IMPL, change nothing
    (tmp_path / "test_x.py").write_text("def test_x(pytestconfig):\n"
                                        "    import json\n"
                                        "    from simacc.harness.plugin import fixtures\n"
                                        "    print('SEEN', json.dumps(fixtures.state(pytestconfig).settings.to_json()))\n")
    env = {**os.environ, "SIMACC_MAX_EXAMPLES": "not a number", "SIMACC_IMPL": "other:g"}
    done = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path / "test_x.py"), "-s", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    seen = next((line for line in done.stdout.splitlines() if line.startswith("SEEN ")), done.stdout + done.stderr)
    assert opts.Settings.from_json(json.loads(seen.removeprefix("SEEN "))) == chosen


# -- what it maps onto -----------------------------------------------------------------------------


def test_each_location_is_one_of_hypothesis_own_databases(tmp_path):
    local = profiles.for_session("default", root=tmp_path).database
    assert isinstance(local, DirectoryBasedExampleDatabase)  # unchanged without a setting
    named = profiles.for_session("ci", database=str(tmp_path / "db"), root=tmp_path).database
    assert isinstance(named, DirectoryBasedExampleDatabase) and Path(named.path) == tmp_path / "db"
    readonly = profiles.for_session("thorough", database=str(tmp_path / "db"), readonly=True).database
    assert isinstance(readonly, ReadOnlyDatabase)
    both = profiles.for_session("default", database=f"{tmp_path / 'a'},{tmp_path / 'b'}").database
    assert isinstance(both, MultiplexedDatabase)
    (tmp_path / "file").write_text("")
    with pytest.raises(profiles.DatabaseError, match="not a directory"):
        profiles.for_session("default", database=str(tmp_path / "file"))


def test_ci_with_a_database_runs_a_fixed_seed_since_hypothesis_forbids_derandomize_with_one(tmp_path):
    with_one = profiles.for_session("ci", database=str(tmp_path / "db"))
    assert not with_one.derandomize and with_one.database is not None

    def seed(environ=None, **given):  # resolved once, into the settings every process reads
        return opts.resolve(given, environ=environ or {}, root=tmp_path).seed

    assert seed(profile="ci", database="db") == opts.CI_SEED and seed({"SIMACC_DATABASE": "db", "CI": "1"}) == 0
    assert seed(profile="ci") is None and profiles.for_session("ci").derandomize
    assert seed(profile="ci", database="db", seed=5) == 5
    assert seed(profile="default", database="db") is None


def test_a_projects_ini_impl_and_the_ci_profile_are_resolved_with_everything_else():
    """The ini's IMPL sits below the option and SIMACC_IMPL (the plugin applied it after
    resolving); the profile CI picks is the one simacc mutants takes."""
    ini = {"impl": "references"}
    assert opts.resolve({}, environ={}, ini=ini).impl == "references"
    assert opts.resolve({}, environ={"SIMACC_IMPL": "m:f"}, ini=ini).impl == "m:f"
    assert opts.resolve({"impl": "a:b"}, environ={"SIMACC_IMPL": "m:f"}, ini=ini).impl == "a:b"
    assert opts.resolve({}, environ={"CI": "true"}).profile == opts.default_profile({"CI": "true"}) == "ci"
    assert opts.default_profile({}) == "default"


def test_both_headers_say_the_seed_a_derandomized_profile_runs_with_a_database(tmp_path):
    """(before: simacc check's header said "derandomized" while the properties ran seed 0)"""
    from simacc.commands.checking import conformance, verdict

    chosen = opts.resolve({"impl": "simacc:generate_simulated_accept_index", "profile": "ci", "database": "db"},
                          environ={}, root=tmp_path)
    config = types.SimpleNamespace(stash={fixtures.STATE: fixtures.State(chosen, None)},
                                   invocation_params=types.SimpleNamespace(dir=tmp_path))
    assert reports.pytest_report_header(config)[1].endswith("; seed 0")
    header = conformance.header_of(chosen, {"contract": "eagle", "contract_from": "signature", "level": "exact"})
    assert dict(verdict.header_rows(header))["profile"].endswith(", seed 0")


def test_the_header_names_the_database(tmp_path):
    def header(**given):
        chosen = opts.resolve({"impl": "simacc:generate_simulated_accept_index", **given}, environ={}, root=tmp_path)
        config = types.SimpleNamespace(stash={fixtures.STATE: fixtures.State(chosen, None)},
                                       invocation_params=types.SimpleNamespace(dir=tmp_path))
        return [line for line in reports.pytest_report_header(config) if "database" in line]

    assert header() == ["simacc: example database .hypothesis/examples (profile default's)"]
    assert header(profile="ci") == ["simacc: example database none (profile ci keeps none)"]
    assert header(database="redis://farm:6379/0", database_readonly=True) == [
        "simacc: example database redis://farm:6379/0; read-only"]
    assert header(database="github:org/repo") == ["simacc: example database github:org/repo (read-only)"]


# -- keys ---------------------------------------------------------------------------------------


def _digest(prop, spec, device, **params):
    test = prop.hypothesis_test(impls.load(spec, sx.CONTRACTS), device, params, profiles.for_session("default"))
    return function_digest(test.hypothesis.inner_test)


def test_examples_are_keyed_by_property_implementation_and_device_never_by_a_path(tmp_path):
    prop = properties.find(KILLER)
    here = _digest(prop, SPEC, "cpu")
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        shutil.copy(SPEC.rpartition(":")[0], tmp_path / folder / "rare_mutant.py")
    copies = [_digest(prop, f"{tmp_path / f / 'rare_mutant.py'}:miscounts_a_rare_batch", "cpu") for f in ("one", "two")]
    assert copies == [here, here]  # two checkouts, one key
    assert _digest(prop, SPEC, "cpu:0") == here  # one kind of device
    assert _digest(prop, "simacc:generate_simulated_accept_index", "cpu") != here
    assert _digest(prop, SPEC, "meta") != here
    assert _digest(properties.find("index_rows_are_root_plus_range_then_minus_one"), SPEC, "cpu") != here
    assert _digest(prop, SPEC, "cpu", x=1) != _digest(prop, SPEC, "cpu", x=2)  # each parametrization its own


# -- a database that cannot be reached ---------------------------------------------------------


def test_an_unreachable_redis_server_is_exit_2_with_one_line_and_never_a_run_without_it(tmp_path):
    pytest.importorskip("redis", reason="needs the redis client: pip install -e '.[redis]'")
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    fuzz = simacc("fuzz", SPEC, "--minutes", "1", "--database", url, cwd=tmp_path)
    assert fuzz.returncode == 2 and fuzz.stdout == ""
    assert fuzz.stderr.startswith(f"simacc fuzz: error: database {url}: cannot reach the server: ")
    assert len(fuzz.stderr.splitlines()) == 1
    check = simacc("check", SPEC, "--device", "cpu", "-n", "0", "--database", url, cwd=tmp_path)
    assert check.returncode == 2
    assert check.stderr.splitlines()[-1].startswith(f"simacc check: error: database {url}: cannot reach the server")


# -- a GitHub artifact, from its cache ----------------------------------------------------------------


def test_a_github_artifact_is_replayed_read_only_from_its_cache(tmp_path):
    """What a CI workflow uploads is the zipped example directory; Hypothesis downloads the
    newest one into its cache, where a fresh one is used without asking GitHub again: put
    there, it stands for the download (GitHub cannot be reached from here)."""
    # a random profile: Hypothesis writes no find of a seeded (or, under CI, derandomized) run
    stale = "simacc.zoo.eagle:counts_only_the_first_row"  # found in a few examples: any bs >= 2
    found = simacc("check", stale, "--property", KILLER, "--device", "cpu", "-n", "0", "--profile", "default",
                   "--database", "db", cwd=tmp_path)
    assert found.returncode == 1, found.stdout + found.stderr
    fresh = tmp_path / "developer"
    cache = fresh / profiles.ARTIFACTS / "nightly"
    cache.mkdir(parents=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat().replace(":", "_")
    with zipfile.ZipFile(cache / f"{stamp}.zip", "w") as artifact:
        for path in (tmp_path / "db").rglob("*"):
            artifact.write(path, path.relative_to(tmp_path / "db"))
    database = profiles.open_database("github:org/project@nightly", root=fresh)
    assert isinstance(database, ReadOnlyDatabase) and isinstance(database._wrapped, GitHubArtifactDatabase)
    # the replay profile generates nothing: a failure can only be the artifact's example
    replayed = simacc("check", stale, "--property", KILLER, "--device", "cpu", "-n", "0", "--profile", "replay",
                      "--database", "github:org/project@nightly", cwd=fresh)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert sorted(p.name for p in (fresh / ".simacc/failures").glob("*.json")) == \
        sorted(p.name for p in (tmp_path / ".simacc/failures").glob("*.json"))  # the same failure, the same case
    # simacc repro replays the database alone: the stored failure, and nothing generated for the rest
    only = simacc("repro", "--database", "github:org/project@nightly", "--impl", stale, "--device", "cpu", cwd=fresh)
    assert only.returncode == 1, only.stdout + only.stderr
    assert f"FAIL {KILLER}" in only.stdout and "the example database holds no example of it" in only.stdout


@pytest.mark.parametrize("argv, problem", [
    (["--database", "db"], "replaying an example database needs --impl IMPL"),
    (["case.json", "--database", "db"], "--database replays an example database against --impl, not with"),
])
def test_repro_replays_a_database_against_an_implementation_it_is_given(argv, problem, capsys):
    from simacc.commands import cli

    assert cli.main(["repro", *argv]) == 2
    assert capsys.readouterr().err.startswith(f"simacc repro: error: {problem}")


# -- against a real Redis server ----------------------------------------------------------------


@pytest.fixture
def redis_url(tmp_path):
    """A ``redis-server`` of this test's own, on 127.0.0.1 and a free port, keeping nothing on
    disk."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server (Debian's package: apt-get install redis-server; .ci/run installs it)")
    redis = pytest.importorskip("redis", reason="needs the redis client: pip install -e '.[redis]'")
    port = free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0", client
    server.terminate()
    server.wait(20)


def _first_line(message):
    return message.splitlines()[0].removeprefix("AssertionError: ")


def _contents(client):
    return {key: sorted(client.smembers(key)) for key in client.keys("*")}


def test_two_fuzzing_processes_share_their_finds_and_a_read_only_check_replays_them_first(redis_url, tmp_path,
                                                                                           monkeypatch):
    url, client = redis_url
    monkeypatch.setenv("CI", "true")  # as a CI job runs it: fuzz keeps the thorough profile, random seeds, its finds
    common = ("--property", KILLER, "--device", "cpu", "--database", url)
    # one worker: it shrinks its find to the end before -x stops the session (a second worker, stopped in the
    # middle of its own shrink, would leave a larger failing example beside it, which a replay may meet first)
    first = simacc("fuzz", SPEC, *common, "-n", "1", "-x", "--minutes", "2", "--repro-dir", "first", cwd=tmp_path)
    assert first.returncode == 1 and "stopped at the first failure" in first.stdout, first.stdout + first.stderr
    found = sorted(p.name for p in (tmp_path / "first").glob("*.json"))
    assert len(found) == 1, found
    stored = _contents(client)
    assert stored, "the find is in the database"
    # another process, one example per pass: the database's example finds it in its first pass
    second = simacc("fuzz", SPEC, *common, "-n", "1", "-x", "--minutes", "1", "--max-examples", "1",
                    "--repro-dir", "second", "--json", "second.json", cwd=tmp_path)
    assert second.returncode == 1, second.stdout + second.stderr
    (repro,) = (tmp_path / "second").glob("*.json")
    assert repro.name in found  # the same failure, the same case
    (failure,) = json.loads((tmp_path / "second.json").read_text())["failures"]
    assert failure["pass"] == 1 and failure["new"]
    # a fresh read-only check replays it first, with the same verdict, and writes nothing
    before = _contents(client)
    check = simacc("check", SPEC, *common, "--database-readonly", "-n", "0", "--max-examples", "1",
                   "--repro-dir", "check", "--json", "check.json", cwd=tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr
    (row,) = [r for r in json.loads((tmp_path / "check.json").read_text())["results"] if r["status"] == "FAIL"]
    recorded = reprofile.load(repro, sx.CONTRACTS)
    assert row["id"] == KILLER and row["case"] == recorded.case.summary()
    assert _first_line(row["message"]) == _first_line(recorded.message)
    assert _contents(client) == before  # (one example of its own does not find it: the GitHub test shows it)
