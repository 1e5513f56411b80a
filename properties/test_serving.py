"""The serving loop (CONTRACT.md §11.2, §4.6, §17.3, §18.2): across one engine's decode loop, with
requests joining and leaving, buffers kept from step to step (static ones, CUDA-graph style, too)
and every earlier result still held, each step conforms and no step disturbs an earlier result;
a stretch of steps seeded once draws anew at every step.

Each property is a state machine (:mod:`simacc.properties.serving`) and runs in every grad
mode selected (§11.1). A failing program shrinks to a few steps, prints as Hypothesis's
program, and its repro file replays it (``simacc repro``).
"""

from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.judging.catalogue import claim
from simacc.properties import serving, serving_v2


@claim(*sx.EAGLE_LAYOUTS, across_contexts=True, machine=True)
def test_serving_loop_conforms_at_every_step(simacc):
    """Across a decode loop, every step's index, counts and tokens conform, and no step disturbs an earlier result."""
    return serving.EagleLoop.of(simacc)


@claim(sx.KERNEL, across_contexts=True, machine=True)
def test_kernel_serving_loop_conforms_at_every_step(simacc):
    """Across a decode loop, every step of the kernel op conforms, and no step disturbs an earlier index."""
    return serving.KernelLoop.of(simacc)


@claim(sx.DFLASH, across_contexts=True, machine=True)
def test_dflash_serving_loop_conforms_at_every_step(simacc):
    """Across a decode loop, every DFLASH step's counts and tokens conform, and earlier outputs stay intact."""
    return serving.DflashLoop.of(simacc)


@claim(sx.FUNCTIONAL, across_contexts=True, machine=True, needs=jaxbridge.missing)
def test_functional_serving_loop_conforms_at_every_step(simacc):
    """Across a decode loop with a changing mask, every step conforms and L follows its distribution."""
    return serving.FunctionalLoop.of(simacc)


@claim(sx.VLLM_V2, across_contexts=True, machine=True)
def test_vllm_v2_serving_loop_conforms_at_every_step(simacc):
    """Across V2's decode loop, positions advancing by what each step emitted, every step's tokens follow the rules, earlier results stay intact and a request seeded once draws anew at every step."""
    return serving_v2.V2Loop.of(simacc)
