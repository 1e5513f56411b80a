"""Promoted regression cases, replayed on every run before any random generation: simacc's own
corpus (``regressions/`` beside this module) and the project's (``--simacc-corpus``,
``SIMACC_CORPUS``, by default ``simacc-regressions/`` in the rootdir).

Each file is a minimal case that once broke some implementation, promoted with
``simacc repro PATH --promote``. It replays the property it was found by, on every device
under test, against the implementation under test when its contract can be asked the case
(else the case is not applicable to it).
"""

from pathlib import Path

import pytest

from simacc import properties
from simacc.harness.config import devices
from simacc.harness.judging.catalogue import claim
from simacc.harness.model import repro_files as reprofile

BUILT_IN = Path(__file__).parent / "regressions"


def corpus(settings):
    """``{"regression": [files]}``: the built-in corpus, then the session's own."""
    folders = [BUILT_IN] + ([settings.corpus] if settings is not None and settings.corpus.is_dir() else [])
    files = {path.name: path for folder in folders for path in sorted(folder.glob("*.json"))}
    return {"regression": [pytest.param(path, id=path.stem) for path in files.values()]}


def _read(path):
    record = reprofile.load(path, properties.CONTRACTS)
    return record, properties.of_repro(record)


def case_contracts(regression):
    """The contracts that can be asked the case in ``regression``, its own first (every one
    for an unusable file: the test reports it)."""
    try:
        record, prop = _read(regression)
    except reprofile.ReproError:
        return properties.CONTRACTS
    own = [c for c in properties.CONTRACTS if c.name == record.contract]
    others = [c for c in properties.CONTRACTS if c.name != record.contract]
    return tuple(c for c in (*own, *others) if prop.applies_to_case(c, record.case))


def found_by(regression):
    """``(id, module)`` of the property the case in ``regression`` was found by: a failure to
    replay it is recorded as that property's (None for an unusable file: nothing to record)."""
    try:
        record = reprofile.load(regression, properties.CONTRACTS)
    except reprofile.ReproError:
        return None
    return record.property, record.module


@claim(*properties.CONTRACTS, contracts_of=case_contracts, params=corpus, first=True, recorded_as=found_by)
def test_regression(simacc, regression):
    """Every promoted regression case passes the property it was found by, before any random case."""
    try:
        record, prop = _read(regression)
    except reprofile.ReproError as e:
        pytest.fail(f"{regression}: {e}", pytrace=False)
    if simacc.impl.level not in prop.levels:
        pytest.skip(f"{prop.id} judges the documented draws, and {simacc.impl.spec} is checked at the {simacc.impl.level} level")
    if prop.across_devices and not devices.is_cuda(simacc.device):
        pytest.skip("a property across devices (CPU/CUDA parity) replays under a CUDA parameter")
    error = prop.replay(simacc, record.case)
    if error is not None:
        raise error
