"""Hypothesis strategies for simulated-acceptance cases (import as ``sx``:
``from simacc import strategies as sx``).

Each takes what it varies as arguments (token modes, sizes, the fixed token id) and reads no
session state, so it serves any test, a downstream project's included."""

from simacc.strategies.cases import (
    ROOT_LAYOUTS,
    chain_cases,
    dflash_cases,
    dflash_server_batches,
    eagle_cases,
    kernel_cases,
    kernel_server_batches,
    roots,
    server_batches,
)
from simacc.strategies.dspark import dspark_accept_cases, dspark_bonus_cases, dspark_length_cases
from simacc.strategies.functional import SPARE as FUNCTIONAL_SPARE
from simacc.strategies.functional import functional_cases
from simacc.strategies.scalars import (
    MAX_SPEC_STEPS,
    acc_lens,
    bad_acc_lens,
    bad_methods,
    bad_token_modes,
    batch_sizes,
    methods,
    seeds,
    spec_steps,
    token_modes,
    vocab_sizes,
)
from simacc.strategies.tensors import token_dtypes
from simacc.strategies.vllm import conversion_cases, decision_cases, synthetic_settings, v1_cases, v2_cases

# Each contract's cases, for a property every contract shares (``cases_for_impl`` in
# ``simacc.properties.support``): the strategy, and the attributes of the implementation under
# test it is given as keyword arguments (its token modes, its fixed id).
BY_CONTRACT = {
    "eagle": (eagle_cases, ("modes",)),
    "legacy": (eagle_cases, ("modes",)),
    "dflash": (dflash_cases, ()),
    "kernel": (kernel_cases, ()),
    "functional": (functional_cases, ("fixed_token_id",)),
    "vllm_settings": (synthetic_settings, ()),
    "vllm_conversion": (conversion_cases, ()),
    "vllm_decision": (decision_cases, ()),
    "vllm_v1": (v1_cases, ()),
    "vllm_v2": (v2_cases, ()),
    "dspark_length": (dspark_length_cases, ()),
    "dspark_bonus": (dspark_bonus_cases, ()),
    "dspark_accept": (dspark_accept_cases, ()),
}

__all__ = [
    "BY_CONTRACT",
    "FUNCTIONAL_SPARE",
    "MAX_SPEC_STEPS",
    "ROOT_LAYOUTS",
    "acc_lens",
    "bad_acc_lens",
    "bad_methods",
    "bad_token_modes",
    "batch_sizes",
    "chain_cases",
    "conversion_cases",
    "decision_cases",
    "dflash_cases",
    "dflash_server_batches",
    "dspark_accept_cases",
    "dspark_bonus_cases",
    "dspark_length_cases",
    "eagle_cases",
    "functional_cases",
    "kernel_cases",
    "kernel_server_batches",
    "methods",
    "roots",
    "seeds",
    "server_batches",
    "spec_steps",
    "synthetic_settings",
    "token_dtypes",
    "token_modes",
    "v1_cases",
    "v2_cases",
    "vocab_sizes",
]
