"""Hypothesis strategies for simulated-acceptance cases (import as ``sx``:
``from simacc import strategies as sx``), and the contracts' records.

Each strategy takes what it varies as arguments (token modes, sizes, the fixed token id) and
reads no session state, so it serves any test, a downstream project's included. Each contract
family is one module holding its records (:class:`~simacc.harness.config.contracts.Contract`),
its case types and its strategies; :data:`CONTRACTS` lists every record, as PyTorch's
``op_db`` does, and is what the harness is handed wherever it needs every contract."""

from simacc.harness.config.contracts import named
from simacc.strategies.dspark import (
    DSPARK_ACCEPT,
    DSPARK_BONUS,
    DSPARK_LENGTH,
    DsparkAcceptCase,
    DsparkBonusCase,
    DsparkLengthCase,
    dspark_accept_cases,
    dspark_bonus_cases,
    dspark_length_cases,
)
from simacc.strategies.eagle import (
    DFLASH,
    EAGLE,
    EAGLE_LAYOUTS,
    KERNEL,
    LEGACY,
    ROOT_LAYOUTS,
    DflashCase,
    EagleCase,
    KernelCase,
    chain_cases,
    dflash_cases,
    dflash_server_batches,
    eagle_cases,
    kernel_cases,
    kernel_server_batches,
    roots,
    server_batches,
)
from simacc.strategies.functional import SPARE as FUNCTIONAL_SPARE
from simacc.strategies.functional import FUNCTIONAL, FunctionalCase, functional_cases
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
from simacc.strategies.vllm import (
    VLLM_CONVERSION,
    VLLM_DECISION,
    VLLM_SETTINGS,
    VLLM_V1,
    VLLM_V2,
    ConversionCase,
    DecisionCase,
    SettingsCase,
    V1Case,
    V2Case,
    conversion_cases,
    decision_cases,
    synthetic_settings,
    v1_cases,
    v2_cases,
)

# Every contract, in the order a list of them is shown; the first is what a ``**kwargs`` wrapper
# that names no parameter of any contract is taken for (sglang's call sites pass keywords)
CONTRACTS = (EAGLE, LEGACY, DFLASH, KERNEL, FUNCTIONAL, VLLM_SETTINGS, VLLM_CONVERSION, VLLM_DECISION, VLLM_V1, VLLM_V2,
             DSPARK_LENGTH, DSPARK_BONUS, DSPARK_ACCEPT)


def contract(name):
    """The record of contract ``name``; ``ValueError`` naming the known ones."""
    return named(CONTRACTS, name)


__all__ = [
    "CONTRACTS",
    "ConversionCase",
    "DFLASH",
    "DSPARK_ACCEPT",
    "DSPARK_BONUS",
    "DSPARK_LENGTH",
    "DecisionCase",
    "DflashCase",
    "DsparkAcceptCase",
    "DsparkBonusCase",
    "DsparkLengthCase",
    "EAGLE",
    "EAGLE_LAYOUTS",
    "EagleCase",
    "FUNCTIONAL",
    "FUNCTIONAL_SPARE",
    "FunctionalCase",
    "KERNEL",
    "KernelCase",
    "LEGACY",
    "MAX_SPEC_STEPS",
    "ROOT_LAYOUTS",
    "SettingsCase",
    "V1Case",
    "V2Case",
    "VLLM_CONVERSION",
    "VLLM_DECISION",
    "VLLM_SETTINGS",
    "VLLM_V1",
    "VLLM_V2",
    "acc_lens",
    "bad_acc_lens",
    "bad_methods",
    "bad_token_modes",
    "batch_sizes",
    "chain_cases",
    "contract",
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
