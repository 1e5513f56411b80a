"""simacc's pytest plugin: selects the implementation under test and the devices, and
wires properties to them.

Loaded by the root ``conftest.py`` and by ``simacc check`` (``-p simacc.harness.plugin``). It stays
cheap to import; torch and the implementation are loaded in the hooks.

* ``--impl``/``SIMACC_IMPL`` picks the implementation; without it each property runs
  against the built-in reference of its first contract.
* ``@pytest.mark.contracts(...)`` says which contracts a property applies to; the others
  are skipped as *not applicable*, never silently passed.
* ``device`` is a parameter (``cpu``, ``cuda``, ``cuda:1``, ...), never drawn: a case
  replays anywhere. ``@pytest.mark.across_devices`` properties (CPU/CUDA parity) are
  parametrized over the selected CUDA devices and need a CPU selected too.
* Each Hypothesis test's report carries ``("simacc_examples", n)`` in its
  ``user_properties``: the examples Hypothesis ran to an outcome (see :func:`examples_run`).
"""

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest

from simacc.harness import argtypes, env, profiles  # noqa: F401 - importing registers the profiles
from simacc.harness.impl import CONTRACTS, LEVELS

NOT_APPLICABLE = "not applicable"


def pytest_addoption(parser):
    group = parser.getgroup("simacc", "simulated-acceptance conformance")
    group.addoption("--impl", default=None, help="implementation under test, 'module:attr' or 'file.py:attr' (env SIMACC_IMPL); default: the built-in reference")
    group.addoption("--contract", default=None, choices=CONTRACTS, help="force the contract instead of inferring it from the signature (env SIMACC_CONTRACT)")
    group.addoption("--fixed-token-id", default=None, type=argtypes.fixed_token_id, help="the id fixed mode must write where the contract takes it as an argument (functional; default 100, sglang-jax uses 32; env SIMACC_FIXED_TOKEN_ID)")
    group.addoption("--level", default=None, choices=LEVELS, help="exact (default): L is the documented draw from torch's CPU generator; semantic: for ports that draw L their own way, each call is held to the L its outputs show and the distribution of L is tested (env SIMACC_LEVEL)")
    group.addoption("--device", default=None, type=argtypes.device_choice, help=f"{argtypes.DEVICE_HELP} (default all: cuda is skipped with a reason where it is missing; env SIMACC_DEVICE)")
    group.addoption("--simacc-timeout", default=None, type=argtypes.positive_seconds, help="per-call time limit in seconds (default 30; env SIMACC_TIMEOUT)")
    group.addoption("--xfails", default=None, help="file of property ids expected to fail, '#' comments (env SIMACC_XFAILS)")
    group.addoption("--repro-dir", default=None, help="folder for repro files of failing cases (default .simacc/failures; env SIMACC_REPRO_DIR)")
    group.addoption("--max-examples", default=None, type=argtypes.positive_int, help="override the Hypothesis profile's max_examples")
    group.addoption("--property", action="append", default=None, dest="simacc_properties", metavar="ID", help="run only this property id (repeatable; exact, without 'test_' and the device)")


@pytest.hookimpl(trylast=True)  # after Hypothesis's plugin has loaded --hypothesis-profile
def pytest_configure(config):
    config.pluginmanager.import_plugin("simacc.harness.recording")
    config.addinivalue_line("markers", f"contracts(*names): the contracts ({', '.join(CONTRACTS)}) a property applies to")
    config.addinivalue_line("markers", "across_devices: a property comparing a CUDA device with the CPU (parametrized over the selected CUDA devices)")
    config.addinivalue_line("markers", "levels(*names): the levels (exact, semantic) a property applies to (default: both)")
    opt = config.getoption
    _load_profile(opt("--hypothesis-profile", default=None) or env.get("PROFILE"), opt("--max-examples"))
    spec = opt("--impl") or env.get("IMPL")
    contract = opt("--contract") or env.get("CONTRACT")
    level = opt("--level") or env.get("LEVEL", "exact")
    selected = None
    if spec:
        from simacc.harness import impl

        try:
            selected = impl.load(spec, contract, level)
        except impl.ImplError as e:
            raise pytest.UsageError(str(e)) from None
    elif level not in LEVELS:
        raise pytest.UsageError(f"SIMACC_LEVEL must be one of {LEVELS}, got {level!r}")
    elif contract:
        raise pytest.UsageError("--contract needs --impl (or SIMACC_IMPL)")
    timeout = opt("--simacc-timeout") or env.get("TIMEOUT")
    device = opt("--device") or env.get("DEVICE", "all")
    try:
        argtypes.device_choice(device)
        timeout = argtypes.positive_seconds(timeout) if timeout is not None else None
    except argparse.ArgumentTypeError as e:
        raise pytest.UsageError(f"SIMACC_DEVICE/SIMACC_TIMEOUT: {e}") from None
    from simacc.harness import devices, impl

    config.stash[_STATE] = _State(
        selected=selected,
        devices=devices.expand(device),
        level=selected.level if selected is not None else level,
        timeout=timeout,
        xfails=read_xfails(opt("--xfails") or env.get("XFAILS")),
        repro_dir=Path(opt("--repro-dir") or env.get("REPRO_DIR", ".simacc/failures")),
    )
    from simacc.harness import selection

    try:
        selection.fixed_token_id()  # a bad SIMACC_FIXED_TOKEN_ID is a usage error now, not at a draw
    except ValueError as e:
        raise pytest.UsageError(f"SIMACC_FIXED_TOKEN_ID: {e}") from None
    config.stash[_SELECTIONS] = [selection.testing(selected)]
    if opt("--fixed-token-id") is not None:
        config.stash[_SELECTIONS].append(selection.checking_fixed_token_id(opt("--fixed-token-id")))
    for chosen in config.stash[_SELECTIONS]:
        chosen.__enter__()


def pytest_unconfigure(config):
    # A session run inside another (simacc check from a test) gives the selections back.
    for chosen in reversed(config.stash.get(_SELECTIONS, [])):
        chosen.__exit__(None, None, None)


def _load_profile(name, max_examples):
    """Load the Hypothesis profile ``name`` (when given), then override its max_examples."""
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    if name:
        try:
            settings.load_profile(name)
        except InvalidArgument:
            raise pytest.UsageError(f"unknown Hypothesis profile {name!r}; registered: {', '.join(profiles.EXAMPLES)}") from None
    if max_examples:
        base = settings.get_current_profile_name()
        derived = f"{base}-max-examples-{max_examples}"
        settings.register_profile(derived, parent=settings.get_profile(base), max_examples=max_examples)
        settings.load_profile(derived)


@dataclass(frozen=True)
class _State:
    selected: object  # the Implementation under test, or None for the references
    devices: tuple
    level: str
    timeout: float | None
    xfails: dict
    repro_dir: Path


_STATE = pytest.StashKey[_State]()
_SELECTIONS = pytest.StashKey[list]()  # context managers entered at configure, left at unconfigure


def state(config):
    """The session's selections (implementation, devices, time limit, xfails, repro dir)."""
    return config.stash[_STATE]


def read_xfails(path):
    """``{property id: line number}`` from an xfails file; ``#`` starts a comment."""
    if not path:
        return {}
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise pytest.UsageError(f"--xfails {path}: {e.strerror}") from None
    ids = {}
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if entry:
            ids[entry] = number
    return ids


def property_id(item):
    """``name`` or ``name[device]`` without the ``test_`` prefix: how xfails and reports
    name a property."""
    return item.name.removeprefix("test_")


def pytest_generate_tests(metafunc):
    if "device" not in metafunc.fixturenames:
        return
    from simacc.harness import devices

    selected = state(metafunc.config).devices
    if metafunc.definition.get_closest_marker("across_devices") is None:
        params = [_device_param(d, devices.unavailable(d)) for d in selected]
    else:
        params = _across_device_params(selected)
    metafunc.parametrize("device", params)


def _device_param(spelling, skip_reason):
    marks = (pytest.mark.skip(reason=skip_reason),) if skip_reason else ()
    return pytest.param(spelling, id=spelling, marks=marks)


def _across_device_params(selected):
    """One parameter per selected CUDA device, each compared with the CPU; skipped with
    the reason when CUDA or the CPU is not selected (``--device`` is honoured, issue #14)."""
    from simacc.harness import devices

    cuda = [d for d in selected if devices.is_cuda(d)]
    if not cuda:
        return [_device_param("cuda", "compares a CUDA device with the CPU, and --device selects no CUDA device")]
    if all(devices.is_cuda(d) for d in selected):
        return [_device_param(d, "compares this CUDA device with the CPU, and --device selects no CPU") for d in cuda]
    return [_device_param(d, devices.unavailable(d)) for d in cuda]


def _contracts(item):
    marker = item.get_closest_marker("contracts")
    return marker.args if marker else None


def _base_id(item):
    return property_id(item).split("[")[0]


def pytest_collection_modifyitems(config, items):
    st = state(config)
    wanted = config.getoption("simacc_properties")
    if wanted:
        chosen = [item for item in items if _base_id(item) in wanted]
        config.hook.pytest_deselected(items=[item for item in items if _base_id(item) not in wanted])
        items[:] = chosen
    unused = dict(st.xfails)
    for item in items:
        contracts = _contracts(item)
        if contracts is None:
            continue
        if st.selected is not None and st.selected.contract not in contracts:
            item.add_marker(pytest.mark.skip(
                reason=f"{NOT_APPLICABLE}: contract {st.selected.contract!r} (applies to {', '.join(contracts)})"
            ))
            continue
        levels = item.get_closest_marker("levels")
        if levels is not None and st.level not in levels.args:
            item.add_marker(pytest.mark.skip(reason=f"{NOT_APPLICABLE}: level {st.level!r} (it needs the documented draws)"))
            continue
        pid = property_id(item)
        for entry in (pid, pid.split("[")[0]):
            if entry in st.xfails:
                unused.pop(entry, None)
                item.add_marker(pytest.mark.xfail(reason=f"listed in --xfails (line {st.xfails[entry]})", strict=True))
                break
    for entry, line in unused.items():
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(f"--xfails line {line}: {entry!r} matches no property"), stacklevel=2
        )


def examples_run(statistics):
    """How many examples Hypothesis ran to an outcome (passed or failed) before shrinking:
    the explicit, database-replay, generate and target phases. Shrink attempts and examples
    rejected by filters or ``assume`` are not counted. A failing test counts up to its first
    failure: Hypothesis finishes its batch of examples after that, which says nothing about
    how soon the property caught the bug (issue #6)."""
    phases = ("explicit", "reuse", "generate", "target")
    count = 0
    for phase in phases:
        for case in statistics.get(f"{phase}-phase", {}).get("test-cases", ()):
            count += case["status"] in ("valid", "interesting")
            if case["status"] == "interesting":
                return count
    return count


@pytest.hookimpl(wrapper=True, trylast=True)  # innermost: Hypothesis's own wrapper sets a collector too
def pytest_runtest_call(item):
    from hypothesis import is_hypothesis_test
    from hypothesis.statistics import collector

    if not is_hypothesis_test(getattr(item, "obj", None)):
        return (yield)
    outer = collector.value
    counts = []

    def note(statistics):
        counts.append(examples_run(statistics))
        if outer is not None:
            outer(statistics)

    with collector.with_value(note):
        try:
            return (yield)
        finally:
            if counts:
                item.user_properties.append(("simacc_examples", sum(counts)))


@pytest.fixture
def impl(request):
    """A :class:`~simacc.harness.runner.Runner` for the implementation under test (the
    reference of the property's first contract when none was selected)."""
    from simacc.harness import impl as impls
    from simacc.harness.runner import DEFAULT_TIMEOUT, Runner

    st = state(request.config)
    chosen = st.selected
    if chosen is None:
        contracts = _contracts(request.node) or ("eagle",)
        chosen = impls.reference(contracts[0], st.level)
    with Runner(chosen, st.timeout or DEFAULT_TIMEOUT) as runner:
        yield runner


def _fixed_token_id():
    from simacc.harness import selection

    return selection.fixed_token_id()


def pytest_report_header(config):
    import hypothesis
    import torch
    from hypothesis import settings

    st = state(config)
    sel = st.selected
    if sel is None:
        under_test = "built-in references"
    else:
        version = f", version {sel.version}" if sel.version else ""
        under_test = f"{sel.spec} (contract {sel.contract}, {sel.source or 'no file'}{version})"
    profile = settings.default
    seed = config.getoption("--hypothesis-seed", default=None)
    seed = seed or ("fixed (derandomized)" if profile.derandomize else "random")
    lines = [
        f"simacc: implementation {under_test}",
        f"simacc: level {st.level}; fixed token id {_fixed_token_id()}; devices {', '.join(st.devices)} (cuda available: {torch.cuda.is_available()}, "
        f"{torch.cuda.device_count()} device(s)); "
        f"profile {settings.get_current_profile_name()!r} (max_examples={profile.max_examples}, "
        f"derandomize={profile.derandomize}); seed {seed}; "
        f"torch {torch.__version__}, hypothesis {hypothesis.__version__}",
    ]
    variables = env.in_effect()
    if variables:
        lines.append("simacc: " + " ".join(f"{k}={v}" for k, v in variables.items()))
    return lines
