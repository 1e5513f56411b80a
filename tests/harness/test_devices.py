"""The device helper: spellings, where tensors actually live, and which devices
are usable. CI has no GPU, so the CUDA spellings are checked without CUDA (nothing here
initialises it) and the multi-GPU case with a stand-in for torch's device count."""

import pytest
import torch

from simacc.harness.config import devices

SPELLINGS = ["cpu", "cpu:0", "cuda", "cuda:0", "cuda:1", "meta"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_spelling_parses_to_a_torch_device(spelling):
    assert devices.parse(spelling) == torch.device(spelling)


@pytest.mark.parametrize("spelling", ["gpu", "cuda:-1", "tpu:0", "", "cpu:x", "mps"])
def test_anything_else_is_a_value_error_naming_it(spelling):
    with pytest.raises(ValueError, match=repr(spelling)):
        devices.parse(spelling)


@pytest.mark.parametrize("spelling, where", [("cpu", "cpu"), ("cpu:0", "cpu"), ("meta", "meta"),
                                             ("cuda", "cuda:0"), ("cuda:0", "cuda:0"), ("cuda:1", "cuda:1")])
def test_a_spelling_resolves_to_the_device_its_tensors_report(spelling, where):
    assert devices.resolve(spelling) == torch.device(where)


@pytest.mark.parametrize("spelling", ["cpu", "cpu:0", "meta"])
def test_a_tensor_made_on_a_spelling_is_on_its_resolved_device(spelling):
    # the first GPU run's bug, in CPU form: torch.device("cpu:0") != tensor.device
    assert torch.zeros(1, device=spelling).device == devices.resolve(spelling)


@pytest.mark.parametrize("a, b, same", [
    ("cpu", "cpu:0", True), ("cuda", "cuda:0", True), ("cuda:0", "cuda:1", False), ("cpu", "cuda", False),
    ("cpu", "meta", False), (torch.device("cpu:0"), "cpu", True), ("cuda:1", torch.device("cuda", 1), True),
])
def test_two_spellings_of_one_device_are_the_same_device(a, b, same):
    assert devices.same(a, b) is same and devices.same(b, a) is same


@pytest.mark.parametrize("selection, expanded", [
    ("all", ("cpu", "cuda")), ("cpu", ("cpu",)), ("cpu,cuda:1", ("cpu", "cuda:1")),
    ("all,cuda:1", ("cpu", "cuda", "cuda:1")), ("cpu, cpu", ("cpu",)), ("cpu,cpu:0", ("cpu", "cpu:0")),
])
def test_a_selection_expands_to_its_spellings_in_order(selection, expanded):
    assert devices.expand(selection) == expanded


@pytest.mark.parametrize("selection", ["", ",", "cpu,gpu"])
def test_a_selection_that_names_no_device_or_a_bad_one_is_refused(selection):
    with pytest.raises(ValueError):
        devices.expand(selection)


def test_the_cpu_and_meta_are_always_available():
    assert devices.unavailable("cpu") is None and devices.unavailable("cpu:0") is None
    assert devices.unavailable("meta") is None


def test_without_cuda_every_cuda_spelling_says_why(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for spelling in ("cuda", "cuda:0", "cuda:1"):
        assert devices.unavailable(spelling) == devices.NO_CUDA


def test_with_one_gpu_a_second_one_is_missing_and_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert devices.unavailable("cuda") is None and devices.unavailable("cuda:0") is None
    assert devices.unavailable("cuda:1") == "no cuda:1: torch.cuda.device_count() is 1"


def test_the_default_generator_of_the_cpu_is_torchs():
    assert devices.default_generator("cpu") is torch.default_generator
    assert devices.default_generator("cpu:0") is torch.default_generator


@pytest.mark.parametrize("spelling", ["cuda", "cuda:0"])
def test_cudas_default_generator_is_found_before_cuda_is_initialised(monkeypatch, spelling):
    """``torch.cuda.default_generators`` is an empty tuple until CUDA is initialised: read before
    the index initialised it, it failed a worker's first CUDA call with an IndexError that its
    replay did not repeat (benchmarks/gpu_check.sh). A stand-in for torch's lazy start here."""
    generator = torch.Generator()

    def start():
        monkeypatch.setattr(torch.cuda, "default_generators", (generator,))

    monkeypatch.setattr(torch.cuda, "default_generators", ())
    monkeypatch.setattr(torch.cuda, "init", start)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: start() or 0)
    assert devices.default_generator(spelling) is generator


def test_a_call_on_cuda_has_that_devices_generator_seeded_from_the_case(monkeypatch):
    """vLLM's V1 draws on its tensors' device: the runner seeds that device's default generator
    as it seeds the CPU's, so that two ranks, or a replay, draw alike whatever calls their
    processes made before (on an H200, two ranks of the reference disagreed without it). A
    stand-in for CUDA's generator here; V2 draws from its own seeds, so only the CPU's is seeded."""
    from simacc.harness.call import impl
    from simacc.harness.call.runner import Runner
    from simacc.harness.model.cases import seeded

    cuda = torch.Generator()
    monkeypatch.setattr(torch.cuda, "default_generators", (cuda,))
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    runner = Runner(impl.reference("vllm_v1"), "cuda")
    runner._seed(7, runner._generators("cuda"))
    assert torch.equal(cuda.get_state(), seeded(torch.Generator(), 7).get_state())
    assert runner._generators("cpu") == (torch.default_generator,)
    assert Runner(impl.reference("vllm_v2", "semantic"), "cuda")._generators("cuda") == (torch.default_generator,)
