"""simacc: a property-based verification harness for simulated acceptance in speculative
decoding. The contract it checks is SPEC.md; this package holds its reference."""

from simacc.contract.caller import (
    SimulationSettings,
    check_token_mode,
    target_predict_for,
)
from simacc.contract.reference import (
    FIXED_TOKEN_ID,
    apply_dflash_simulated_acceptance,
    generate_simulated_accept_index,
    legacy_generate_simulated_accept_index,
    simulated_accept,
    verify_chain_greedy,
)
from simacc.contract.sampling import METHODS, sample_simulated_acc_len
from simacc.contract.validation import TOKEN_MODES

__version__ = "0.1.0"

__all__ = [
    "FIXED_TOKEN_ID",
    "METHODS",
    "TOKEN_MODES",
    "SimulationSettings",
    "apply_dflash_simulated_acceptance",
    "check_token_mode",
    "generate_simulated_accept_index",
    "legacy_generate_simulated_accept_index",
    "sample_simulated_acc_len",
    "simulated_accept",
    "target_predict_for",
    "verify_chain_greedy",
]
