"""Every ``SIMACC_*`` environment variable, read here and nowhere else."""

import os

VARIABLES = {
    "SIMACC_IMPL": "the implementation under test (as --impl)",
    "SIMACC_CONTRACT": "force its contract (as --contract)",
    "SIMACC_LEVEL": "exact or semantic (as --level)",
    "SIMACC_DEVICE": "cpu, cuda or all (as --device)",
    "SIMACC_PROFILE": "Hypothesis settings profile (as --hypothesis-profile)",
    "SIMACC_TIMEOUT": "per-call time limit in seconds (as --simacc-timeout)",
    "SIMACC_XFAILS": "file of expected failures (as --xfails)",
    "SIMACC_REPRO_DIR": "where repro files are written (as --repro-dir)",
    "SIMACC_REGRESSIONS": "folder of promoted regression cases (default properties/regressions)",
    "SIMACC_FIXED_TOKEN_ID": "the id the functional contract's fixed mode must write (as --fixed-token-id; default 100)",
}


def get(name, default=None):
    """The value of ``SIMACC_<name>``, or ``default`` when unset or empty."""
    key = f"SIMACC_{name}"
    assert key in VARIABLES, key
    return os.environ.get(key) or default


def in_effect():
    """``{name: value}`` for every ``SIMACC_*`` variable that is set."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("SIMACC_")}
