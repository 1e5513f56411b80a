"""The glue of ``docs/jax.md``, run as written: it adapts a port whose config is a frozen
record imported by name (sglang-jax's shape) to simacc's functional contract. The zoo's two
ports of that shape stand for ``my_port.simulate``. Against the correct one it passes the
whole catalogue with ``--fixed-token-id 32`` (and fails fixed mode without it); against the
one with sglang-jax's clamped-mean Gaussian it fails the multinomial distribution property
outside ``[1, W]``.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from simacc import properties
from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner
from simacc.harness.config import profiles
from simacc.harness.config.status import Status
from simacc.harness.sessions import inprocess
from simacc.properties import test_functional_sampling as sampling
from simacc.zoo import sglang_jax, sglang_jax_clamped

pytestmark = pytest.mark.skipif(jaxbridge.missing() is not None, reason=str(jaxbridge.missing()))

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "jax.md"
FIXED_PROPERTY = "functional_fixed_mode_fills_predict_with_the_fixed_id"
ACCEPTING = settings(profiles.for_session("ci"), database=None, max_examples=10,
                     phases=[Phase.explicit, Phase.reuse, Phase.generate])


def documented_glue():
    """The code block of docs/jax.md that starts with ``# glue.py``."""
    text = GUIDE.read_text()
    start = text.index("```python\n# glue.py\n") + len("```python\n")
    return text[start:text.index("```", start)]


@pytest.fixture
def glued(tmp_path, monkeypatch):
    """``glued(port)``: the documented glue.py, with ``port`` as ``my_port.simulate``, loaded as an
    IMPL. ``my_port`` is a package on disk (a rank imports the glue anew, CONTRACT.md §11.7)
    whose ``simulate`` module is ``port`` itself."""
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    path = tmp_path / "glue.py"
    path.write_text(documented_glue())
    (tmp_path / "my_port").mkdir()
    (tmp_path / "my_port" / "__init__.py").write_text("")

    def load(port, fixed_token_id=None):
        (tmp_path / "my_port" / "simulate.py").write_text(
            f"import importlib, sys\nsys.modules[__name__] = importlib.import_module({port.__name__!r})\n")
        for name in ("my_port", "my_port.simulate"):
            monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.setattr(port, "SIMULATED_ACCEPTANCE_CONFIG", port.SIMULATED_ACCEPTANCE_CONFIG)  # restored after
        return impl.load(f"{path}:generate", sx.CONTRACTS, fixed_token_id=fixed_token_id)

    yield load
    for name in ("my_port", "my_port.simulate"):
        sys.modules.pop(name, None)


def test_the_documented_glue_is_a_functional_impl(glued):
    loaded = glued(sglang_jax)
    assert (loaded.contract, loaded.style) == ("functional", "jax")


def test_the_glued_port_passes_every_property_with_fixed_token_id_32(glued):
    results = inprocess.run(glued(sglang_jax, sglang_jax.FIXED_TOKEN_ID), "cpu", properties.every_property(),
                            settings=ACCEPTING)
    applicable = [r for r in results if r.status != Status.NOT_APPLICABLE]
    failed = [f"{r.id}: {r.status} {r.message} [{r.case}]" for r in applicable if r.status != Status.PASS]
    assert applicable and not failed, failed


def test_without_fixed_token_id_32_the_glued_port_fails_fixed_mode(glued):
    results = inprocess.run(glued(sglang_jax), "cpu", [properties.find(FIXED_PROPERTY)], settings=ACCEPTING)
    assert [(r.id, r.status) for r in results] == [(f"{FIXED_PROPERTY}[cpu]", Status.FAIL)]
    assert "should be 100" in results[0].message


def test_the_glued_clamped_mean_port_fails_the_multinomial_distribution_above_the_width(glued):
    with Runner(glued(sglang_jax_clamped)) as runner, pytest.raises(AssertionError, match="multinomial L counts"):
        sampling.test_functional_multinomial_length_has_the_documented_distribution(simacc=runner, x=6.5)
