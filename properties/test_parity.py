"""CPU/CUDA parity: the same case gives the same bytes on a CUDA device and on the CPU
(CONTRACT.md §3.1: one ``L`` from the CPU generator, so every device and every rank agrees).

These properties span two devices: the runner's device is the CUDA device under test and the
CPU is the baseline. They run for each CUDA device the session selects, and are skipped with
the reason unless a CPU is selected too."""

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support


@claim(*sx.EAGLE_LAYOUTS, levels=("exact",), across_devices=True, case=support.eagle_cases_for_impl())
def test_cuda_matches_cpu_byte_for_byte(simacc, case):
    """A case gives the same bytes on each CUDA device as on the CPU (§3.1)."""
    support.check_parity(simacc, case)


@claim(sx.KERNEL, levels=("exact",), across_devices=True, case=sx.kernel_cases())
def test_kernel_cuda_matches_cpu_byte_for_byte(simacc, case):
    """Kernel op: a case gives the same bytes on each CUDA device as on the CPU (§8)."""
    support.check_parity(simacc, case)


@claim(sx.DFLASH, levels=("exact",), across_devices=True, case=sx.dflash_cases())
def test_dflash_cuda_matches_cpu_byte_for_byte(simacc, case):
    """DFLASH: a case gives the same bytes on each CUDA device as on the CPU (§7)."""
    support.check_parity(simacc, case)
