"""simacc: a property-based verification harness for simulated acceptance in speculative
decoding. The contract it checks is ``simacc/contract/CONTRACT.md``; this package holds its
reference.

The names below are imported on first use (PEP 562), so that importing any part of simacc,
its pytest plugin above all, does not import torch: a project that has simacc installed
pays nothing for it in a pytest session that does not use it.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "SimulationSettings": "simacc.contract.caller",
    "check_token_mode": "simacc.contract.caller",
    "target_predict_for": "simacc.contract.caller",
    "FIXED_TOKEN_ID": "simacc.contract.reference",
    "apply_dflash_simulated_acceptance": "simacc.contract.reference",
    "generate_simulated_accept_index": "simacc.contract.reference",
    "legacy_generate_simulated_accept_index": "simacc.contract.reference",
    "simulated_accept": "simacc.contract.reference",
    "verify_chain_greedy": "simacc.contract.reference",
    "METHODS": "simacc.contract.sampling",
    "sample_simulated_acc_len": "simacc.contract.sampling",
    "TOKEN_MODES": "simacc.contract.validation",
    "conditional_rates": "simacc.contract.vllm",
    "resolve_synthetic_rates": "simacc.contract.vllm",
    "synthetic_accept": "simacc.contract.vllm",
    "synthetic_rejection_sample": "simacc.contract.vllm",
    "keyed_uniforms": "simacc.contract.vllm_v2",
    "synthetic_rejection_sample_v2": "simacc.contract.vllm_v2",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simacc' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_EXPORTS])
