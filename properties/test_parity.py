"""CPU/CUDA parity: the same case gives the same bytes on a CUDA device and on the CPU
(SPEC.md: one ``L`` from the CPU generator, so every device and every rank agrees).

These properties span two devices: ``device`` is the CUDA device under test and the CPU is
the baseline. They run for each CUDA device ``--device`` selects, and are skipped with the
reason unless a CPU is selected too (issue #14)."""

import pytest
import torch
from hypothesis import given

import strategies as sx
from properties import support
from simacc.assertions import check, check_equal

pytestmark = pytest.mark.across_devices
BASELINE = "cpu"


def check_same_outcome(on_cuda, on_cpu, case):
    """Every output (result, every tensor argument after the call, generator state) alike."""
    __tracebackhide__ = True
    if on_cpu.returned is None:
        check(on_cuda.returned is None, "result on cuda", on_cuda.returned, "None (as on cpu)", case)
    else:
        check_equal("result on cuda (moved to cpu)", on_cuda.returned.cpu(), on_cpu.returned, case)
    for name, tensor in on_cpu.args.items():
        if isinstance(tensor, torch.Tensor):
            check_equal(f"{name} on cuda (moved to cpu)", on_cuda.args[name].cpu(), tensor, case)
    same = torch.equal(on_cuda.rng_after, on_cpu.rng_after)
    check(same, "CPU generator state after the cuda call", "different", "the one after the cpu call", case)


@pytest.mark.contracts("eagle", "legacy")
@given(case=support.eagle_cases())
def test_cuda_matches_cpu_byte_for_byte(impl, device, case):
    on_cuda = impl.run(case, device)
    check_same_outcome(on_cuda, impl.run(case, BASELINE), case)


@pytest.mark.contracts("dflash")
@given(case=sx.dflash_cases())
def test_dflash_cuda_matches_cpu_byte_for_byte(impl, device, case):
    on_cuda = impl.run(case, device)
    check_same_outcome(on_cuda, impl.run(case, BASELINE), case)
