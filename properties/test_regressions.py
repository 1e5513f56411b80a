"""Promoted regression cases: every file of the corpus (``properties/regressions/``, or
``SIMACC_REGRESSIONS``), replayed on every run before any random generation (issue #5).

Each file is a minimal case that once broke some implementation, promoted with
``simacc repro PATH --promote``. It replays the property it was found by, on every device
under test, against the implementation under test when it follows a contract the case
applies to (else *not applicable*), and against that contract's reference by default.
"""

import pytest

from simacc.harness import devices
from simacc.harness import repro_files as reprofile
from simacc.harness.impl import CONTRACTS


def _corpus():
    params = []
    for path in sorted(reprofile.corpus_dir().glob("*.json")):
        try:
            record = reprofile.load(path)
        except reprofile.ReproError:
            params.append(pytest.param(path, id=path.stem))  # the test says what is wrong
            continue
        contracts = [record.contract] + [c for c in CONTRACTS if c != record.contract and record.applies_to(c)]
        params.append(pytest.param(path, id=path.stem, marks=pytest.mark.contracts(*contracts)))
    return params


@pytest.mark.parametrize("regression", _corpus())
def test_regression(impl, device, regression):
    try:
        record = reprofile.load(regression)
    except reprofile.ReproError as e:
        pytest.fail(f"{regression}: {e}", pytrace=False)
    if record.property.across_devices and not devices.is_cuda(device):
        pytest.skip("a property across devices (CPU/CUDA parity) replays under a CUDA parameter")
    error = record.property.replay(impl, device, record.case)
    if error is not None:
        raise error
