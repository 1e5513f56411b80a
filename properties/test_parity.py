"""CPU/CUDA parity: the same case gives the same bytes on a CUDA device and on the CPU
(SPEC.md: one ``L`` from the CPU generator, so every device and every rank agrees).

These properties span two devices: ``device`` is the CUDA device under test and the CPU is
the baseline. They run for each CUDA device ``--device`` selects, and are skipped with the
reason unless a CPU is selected too (issue #14)."""

import pytest
from hypothesis import given

import strategies as sx
from properties import support

pytestmark = [pytest.mark.across_devices, pytest.mark.levels("exact")]
BASELINE = "cpu"


@pytest.mark.contracts("eagle", "legacy")
@given(case=support.eagle_cases())
def test_cuda_matches_cpu_byte_for_byte(impl, device, case):
    on_cuda = impl.run(case, device)
    support.check_same_outputs(f"on {device} (moved to cpu)", on_cuda, impl.run(case, BASELINE), case)


@pytest.mark.contracts("kernel")
@given(case=sx.kernel_cases())
def test_kernel_cuda_matches_cpu_byte_for_byte(impl, device, case):
    on_cuda = impl.run(case, device)
    support.check_same_outputs(f"on {device} (moved to cpu)", on_cuda, impl.run(case, BASELINE), case)


@pytest.mark.contracts("dflash")
@given(case=sx.dflash_cases())
def test_dflash_cuda_matches_cpu_byte_for_byte(impl, device, case):
    on_cuda = impl.run(case, device)
    support.check_same_outputs(f"on {device} (moved to cpu)", on_cuda, impl.run(case, BASELINE), case)
