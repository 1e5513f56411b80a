"""The functional contract's machinery: inference and the ``jax`` call style, the
torch <-> JAX bridge, the check's fixed token id, the case strategy, and the zoo's port in
sglang-jax's convention."""

import pytest
import torch
from hypothesis import find, given, settings

from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.call import impl
from simacc.harness.config import settings as opts
from simacc.strategies.functional import SHAPES

needs_jax = pytest.mark.skipif(jaxbridge.missing() is not None, reason=str(jaxbridge.missing()))


def functional_signature(*, accept_index, predict, candidates, target_predict, valid_mask, spec_steps,
                         simulate_acc_len, simulate_acc_method, simulate_acc_token_mode, fixed_token_id, rng):
    return accept_index, predict, valid_mask


def test_a_functional_signature_is_called_in_the_jax_style():
    assert impl.infer_style(functional_signature) == ("functional", "jax")


def test_a_keyword_wrapper_forced_to_functional_is_called_in_the_jax_style():
    def wrapper(**kwargs):
        pass

    assert impl.infer_style(wrapper, "functional") == ("functional", "jax")


def test_a_lazy_module_is_imported_at_its_first_attribute_not_before():
    lazy = jaxbridge.LazyModule("simacc_selftest_no_such_module")  # what lets simacc import without jax
    with pytest.raises(ModuleNotFoundError, match="simacc_selftest_no_such_module"):
        lazy.anything


# -- the bridge ---------------------------------------------------------------------------


@needs_jax
def test_contiguous_int32_tensors_are_shared_with_jax_and_int64_becomes_int32():
    predict, tokens = torch.arange(6, dtype=torch.int32), torch.arange(4, dtype=torch.int64)
    shared = jaxbridge.to_jax(predict)
    torch.from_dlpack(shared)[0] = 99  # what a port writing into its input would do
    assert predict[0] == 99
    assert str(jaxbridge.to_jax(tokens).dtype) == "int32"


@needs_jax
def test_a_strided_tensor_reaches_jax_with_its_values():
    strided = torch.arange(10, dtype=torch.int32)[::2]
    assert jaxbridge.to_jax(strided).tolist() == [0, 2, 4, 6, 8]


@needs_jax
@pytest.mark.parametrize("seed", [7, 0, 2**31 - 1, 2**31, 2**32 - 1])  # a case's seeds: uint32
def test_a_call_gets_a_key_from_the_seed_and_returns_new_torch_tensors(seed):
    seen = {}

    def port(**arrays):
        seen.update(arrays)
        return arrays["accept_index"], arrays["predict"], arrays["valid_mask"]

    index = torch.zeros((2, 3), dtype=torch.int32)
    got = jaxbridge.call(port, {"accept_index": index, "predict": torch.ones(4, dtype=torch.int32),
                                "valid_mask": torch.tensor([True, False]), "rng": seed, "spec_steps": 2})
    eager = jaxbridge.jax.random.PRNGKey(seed)  # the key the compiled one must be, bit for bit
    assert seen["rng"].dtype == eager.dtype and seen["rng"].tolist() == eager.tolist() and seen["spec_steps"] == 2
    assert [(t.dtype, tuple(t.shape)) for t in got] == [(torch.int32, (2, 3)), (torch.int32, (4,)), (torch.bool, (2,))]
    assert got[0].data_ptr() != index.data_ptr()


@needs_jax
def test_a_missing_key_stays_none():
    seen = {}

    def port(**arrays):
        seen.update(arrays)
        return (jaxbridge.jnp.zeros(1),) * 3

    jaxbridge.call(port, {"rng": None})
    assert seen["rng"] is None


@needs_jax
def test_a_result_that_is_not_three_arrays_is_a_one_line_type_error():
    with pytest.raises(TypeError, match=r"returns \('index', 'predict', 'lens'\), got a tuple of 2$"):
        jaxbridge.call(lambda **arrays: (1, 2), {"rng": 0})


# -- the fixed token id -------------------------------------------------------------------


def test_the_fixed_token_id_is_the_option_then_the_variable_then_100():
    assert opts.resolve({}, environ={}).fixed_token_id is None
    assert impl.reference("functional").fixed_token_id == 100
    assert opts.resolve({}, environ={"SIMACC_FIXED_TOKEN_ID": "7"}).fixed_token_id == 7
    assert opts.resolve({"fixed_token_id": 32}, environ={"SIMACC_FIXED_TOKEN_ID": "7"}).fixed_token_id == 32
    assert impl.reference("functional", fixed_token_id=32).fixed_token_id == 32


@pytest.mark.parametrize("text, fragment", [("abc", "must be a whole number, got 'abc'"),
                                            ("-1", "must be in [0, 2147483647]"),
                                            (str(2**31), "must be in [0, 2147483647]")])
def test_a_bad_fixed_token_id_is_a_one_line_value_error(text, fragment):
    with pytest.raises(ValueError) as raised:
        opts.fixed_token_id(text)
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


# -- the case strategy --------------------------------------------------------------------


@settings(max_examples=30)
@given(case=sx.functional_cases())
def test_functional_cases_draw_menu_shapes_with_disjoint_roots_inside_predict(case):
    bs, width = case.accept_index.values.shape
    columns = case.candidates.values.shape[1] if case.candidates is not None else width
    assert (bs, width, columns) in SHAPES or case.candidates is None
    roots = sorted(case.accept_index.values[:, 0].tolist())
    assert all(b - a >= columns for a, b in zip(roots, roots[1:]))
    assert all(0 <= r <= case.predict.values.shape[0] - columns for r in roots)
    if case.simulate_acc_token_mode == "real-draft-token":
        assert columns == width


@settings(max_examples=10)
@given(case=sx.functional_cases(missing_columns=1))
def test_missing_columns_gives_real_mode_candidates_one_column_short(case):
    assert case.simulate_acc_token_mode == "real-draft-token"
    assert case.candidates.values.shape[1] == case.max_len - 1 == case.target_predict.values.shape[1]


def minimal(strategy, condition=lambda case: True):
    return find(strategy, condition, settings=settings(database=None))


def test_functional_cases_shrink_toward_an_empty_batch_then_one_valid_request_in_fixed_mode():
    assert minimal(sx.functional_cases()).bs == 0
    case = minimal(sx.functional_cases(), lambda case: case.bs > 0)
    assert case.accept_index.values.tolist() == [[0]] and case.valid_mask.values.tolist() == [True]
    assert (case.simulate_acc_token_mode, case.simulate_acc_len, case.seed) == ("fixed", 1.0, 0)


@settings(max_examples=5, database=None)
@given(case=sx.functional_cases(fixed_token_id=32))
def test_cases_carry_the_fixed_token_id_asked_for(case):
    assert case.fixed_token_id == 32


# -- the zoo's port in sglang-jax's convention --------------------------------------------


def test_the_port_reads_its_settings_from_simulate_acc_variables():
    from simacc.zoo import sglang_jax

    environ = {"SIMULATE_ACC_LEN": "2.5", "SIMULATE_ACC_METHOD": "multinomial", "SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}
    config = sglang_jax.SimulatedAcceptanceConfig
    assert sglang_jax._load_config(environ) == config(True, 2.5, "multinomial", "real-draft-token")
    assert sglang_jax._load_config({}) == config(False, -1.0, "match-expected", "fixed")


@needs_jax
def test_with_simulation_off_the_port_hands_its_inputs_back():
    from simacc.zoo import sglang_jax

    arrays = {name: jaxbridge.jnp.zeros(2, jaxbridge.jnp.int32) for name in ("accept_index", "predict", "accept_lens")}
    off = sglang_jax._load_config({})
    got = sglang_jax.accept(off, sglang_jax.gaussian_length, **arrays, candidates=None,
                            target_predict=None, valid_mask=None, spec_steps=1, topk=1, rng=None)
    assert got == (arrays["accept_index"], arrays["predict"], arrays["accept_lens"])


@needs_jax
def test_the_port_rejects_real_mode_on_trees():
    from simacc.zoo import sglang_jax

    jnp = jaxbridge.jnp
    with pytest.raises(ValueError, match="topk == 1, got topk=2"):
        sglang_jax.accept(sglang_jax.SimulatedAcceptanceConfig(True, 2.0, "match-expected", "real-draft-token"),
                          sglang_jax.gaussian_length,
                          accept_index=jnp.zeros((1, 2), jnp.int32), predict=jnp.zeros(2, jnp.int32),
                          accept_lens=jnp.zeros(1, jnp.int32), candidates=jnp.zeros((1, 2), jnp.int32),
                          target_predict=jnp.zeros((1, 2), jnp.int32), valid_mask=jnp.ones(1, bool), spec_steps=1,
                          topk=2, rng=jaxbridge.jax.random.PRNGKey(0))
