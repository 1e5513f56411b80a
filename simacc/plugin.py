"""simacc's pytest plugin: selects the implementation under test and the devices, and
wires properties to them.

Loaded by the root ``conftest.py`` and by ``simacc check`` (``-p simacc.plugin``). It stays
cheap to import; torch and the implementation are loaded in the hooks.

* ``--impl``/``SIMACC_IMPL`` picks the implementation; without it each property runs
  against the built-in reference of its first contract.
* ``@pytest.mark.contracts(...)`` says which contracts a property applies to; the others
  are skipped as *not applicable*, never silently passed.
* ``device`` is a parameter (``cpu``, ``cuda``), never drawn: a case replays anywhere.
"""

import argparse
import os
from pathlib import Path

import pytest

from simacc import env, profiles  # noqa: F401 - importing registers the profiles

NOT_APPLICABLE = "not applicable"
NO_CUDA = "no CUDA: torch.cuda.is_available() is False"
DEVICE_CHOICES = ("cpu", "cuda", "all")


def _device_choice(value):
    if value not in DEVICE_CHOICES:
        raise argparse.ArgumentTypeError(f"must be one of {DEVICE_CHOICES}, got {value!r}")
    return value


def _positive_seconds(value):
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {value!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value!r}")
    return seconds


def pytest_addoption(parser):
    group = parser.getgroup("simacc", "simulated-acceptance conformance")
    group.addoption("--impl", default=None, help="implementation under test, 'module:attr' or 'file.py:attr' (env SIMACC_IMPL); default: the built-in reference")
    group.addoption("--contract", default=None, choices=("eagle", "legacy", "dflash"), help="force the contract instead of inferring it from the signature (env SIMACC_CONTRACT)")
    group.addoption("--device", default=None, type=_device_choice, help="cpu, cuda or all (default all: cuda is skipped with a reason where it is missing; env SIMACC_DEVICE)")
    group.addoption("--simacc-timeout", default=None, type=_positive_seconds, help="per-call time limit in seconds (default 30; env SIMACC_TIMEOUT)")
    group.addoption("--xfails", default=None, help="file of property ids expected to fail, '#' comments (env SIMACC_XFAILS)")
    group.addoption("--repro-dir", default=None, help="folder for repro files of failing cases (default .simacc/failures; env SIMACC_REPRO_DIR)")


def pytest_configure(config):
    config.pluginmanager.import_plugin("simacc.recording")
    config.addinivalue_line("markers", "contracts(*names): the contracts (eagle, legacy, dflash) a property applies to")
    opt = config.getoption
    profile = env.get("PROFILE")
    if profile and not opt("--hypothesis-profile", default=None):
        from hypothesis import settings

        settings.load_profile(profile)
    spec = opt("--impl") or env.get("IMPL")
    contract = opt("--contract") or env.get("CONTRACT")
    selected = None
    if spec:
        from simacc import impl

        try:
            selected = impl.load(spec, contract)
        except impl.ImplError as e:
            raise pytest.UsageError(str(e)) from None
    elif contract:
        raise pytest.UsageError("--contract needs --impl (or SIMACC_IMPL)")
    timeout = opt("--simacc-timeout") or env.get("TIMEOUT")
    device = opt("--device") or env.get("DEVICE", "all")
    try:
        _device_choice(device)
        timeout = _positive_seconds(timeout) if timeout is not None else None
    except argparse.ArgumentTypeError as e:
        raise pytest.UsageError(f"SIMACC_DEVICE/SIMACC_TIMEOUT: {e}") from None
    global _selected
    _selected = selected
    config.stash[_STATE] = _State(
        selected=selected,
        devices=("cpu", "cuda") if device == "all" else (device,),
        timeout=timeout,
        xfails=_read_xfails(opt("--xfails") or env.get("XFAILS")),
        repro_dir=Path(opt("--repro-dir") or env.get("REPRO_DIR", ".simacc/failures")),
    )


class _State:
    def __init__(self, selected, devices, timeout, xfails, repro_dir):
        self.selected = selected
        self.devices = devices
        self.timeout = timeout
        self.xfails = xfails
        self.repro_dir = repro_dir


_STATE = pytest.StashKey[_State]()
_selected = None  # the session's implementation, for strategies that draw before fixtures


def modes_under_test():
    """The token modes the selected implementation can be asked for (both by default)."""
    return _selected.modes if _selected is not None else ("fixed", "real-draft-token")


def state(config):
    """The session's selections (implementation, devices, time limit, xfails, repro dir)."""
    return config.stash[_STATE]


def _read_xfails(path):
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
    if "device" in metafunc.fixturenames:
        import torch

        params = []
        for dev in state(metafunc.config).devices:
            marks = ()
            if dev == "cuda" and not torch.cuda.is_available():
                marks = (pytest.mark.skip(reason=NO_CUDA),)
            params.append(pytest.param(dev, id=dev, marks=marks))
        metafunc.parametrize("device", params)


def _contracts(item):
    marker = item.get_closest_marker("contracts")
    return marker.args if marker else None


def pytest_collection_modifyitems(config, items):
    st = state(config)
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


@pytest.fixture
def impl(request):
    """A :class:`~simacc.observe.Runner` for the implementation under test (the
    reference of the property's first contract when none was selected)."""
    from simacc import impl as impls
    from simacc.observe import DEFAULT_TIMEOUT, Runner

    st = state(request.config)
    chosen = st.selected
    if chosen is None:
        contracts = _contracts(request.node) or ("eagle",)
        chosen = impls.reference(contracts[0])
    return Runner(chosen, st.timeout or DEFAULT_TIMEOUT)


def pytest_report_header(config):
    import hypothesis
    import torch

    from hypothesis import settings

    st = state(config)
    sel = st.selected
    lines = [
        "simacc: implementation "
        + (f"{sel.spec} (contract {sel.contract}, {sel.source or 'no file'}{', version ' + sel.version if sel.version else ''})" if sel else "built-in references"),
        f"simacc: devices {', '.join(st.devices)} (cuda available: {torch.cuda.is_available()}); "
        f"profile {settings.get_current_profile_name()!r} (max_examples={settings.default.max_examples}, "
        f"derandomize={settings.default.derandomize}); seed {config.getoption('--hypothesis-seed', default=None) or 'random'}; "
        f"torch {torch.__version__}, hypothesis {hypothesis.__version__}",
    ]
    variables = env.in_effect()
    if variables:
        lines.append("simacc: " + " ".join(f"{k}={v}" for k, v in variables.items()))
    return lines
