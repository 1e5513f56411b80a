"""Hypothesis strategies for simulated-acceptance cases (import as ``sx``)."""

from strategies.cases import (
    ROOT_LAYOUTS,
    chain_cases,
    dflash_cases,
    eagle_cases,
    kernel_cases,
    roots,
)
from strategies.functional import SPARE as FUNCTIONAL_SPARE
from strategies.functional import functional_cases
from strategies.scalars import (
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
from strategies.tensors import (
    arbitrary_int32,
    decode_layouts,
    fill,
    int_tensors,
    layout_codes,
    layouts,
    token_dtypes,
)

__all__ = [
    "FUNCTIONAL_SPARE",
    "MAX_SPEC_STEPS",
    "ROOT_LAYOUTS",
    "acc_lens",
    "arbitrary_int32",
    "bad_acc_lens",
    "bad_methods",
    "bad_token_modes",
    "batch_sizes",
    "chain_cases",
    "decode_layouts",
    "dflash_cases",
    "eagle_cases",
    "fill",
    "functional_cases",
    "int_tensors",
    "kernel_cases",
    "layout_codes",
    "layouts",
    "methods",
    "roots",
    "seeds",
    "spec_steps",
    "token_dtypes",
    "token_modes",
    "vocab_sizes",
]
