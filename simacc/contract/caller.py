"""What upstream's caller (``eagle_sample``) does around the simulation (CONTRACT.md §5.3):
reading the settings once, validating the token mode, and finding a
``target_predict`` for the real mode when verification produced none.
"""

import math
import os
from dataclasses import dataclass

import torch

from simacc.contract import validation as checks

# The defaults of the simulation function's method and token mode: upstream reads these
# variables once, at import, into the function's signature (CONTRACT.md §5.1).
DEFAULT_METHOD = os.environ.get("SGLANG_SIMULATE_ACC_METHOD", "match-expected")
DEFAULT_TOKEN_MODE = os.environ.get("SGLANG_SIMULATE_ACC_TOKEN_MODE", "fixed")
# The id fixed mode writes, a setting of every contract read the same way (CONTRACT.md §5.2):
# some tokenizers decode 100 to U+FFFD, and benchmark builds set 64. The harness validates the
# variable before a session starts (simacc.harness.config.settings); a bad value fails here, at import.
DEFAULT_TOKEN_ID = int(os.environ.get("SGLANG_SIMULATE_ACC_TOKEN_ID", "100"))


@dataclass(frozen=True)
class SimulationSettings:
    """The three ``SGLANG_SIMULATE_ACC_*`` settings; simulation is on when ``acc_len > 0``."""

    acc_len: float = -1.0
    method: str = "match-expected"
    token_mode: str = "fixed"

    @property
    def enabled(self):
        return self.acc_len > 0

    @classmethod
    def from_env(cls, environ=None):
        """Read the settings with upstream's defaults.

        An unparsable ``SGLANG_SIMULATE_ACC_LEN`` is a ``ValueError`` here, where upstream
        warns and silently turns simulation off. The method is validated at the first
        sample, as upstream does.
        """
        env = os.environ if environ is None else environ
        raw = env.get("SGLANG_SIMULATE_ACC_LEN")
        acc_len = -1.0
        if raw is not None:
            try:
                acc_len = float(raw)
            except ValueError:
                raise ValueError(
                    f"SGLANG_SIMULATE_ACC_LEN must be a number, got {raw!r}"
                ) from None
            if math.isnan(acc_len):
                raise ValueError(f"SGLANG_SIMULATE_ACC_LEN must be a number, got {raw!r}")
        return cls(
            acc_len=acc_len,
            method=env.get("SGLANG_SIMULATE_ACC_METHOD", cls.method),
            token_mode=env.get("SGLANG_SIMULATE_ACC_TOKEN_MODE", cls.token_mode),
        )


def check_token_mode(token_mode, topk):
    """Reject an unknown mode, and the real mode on a tree (``topk != 1``)."""
    checks.check_mode(token_mode)
    if token_mode == "real-draft-token" and topk != 1:
        raise ValueError(
            "simulate_acc_token_mode 'real-draft-token' requires a single-chain draft "
            f"(topk == 1), got topk={topk}"
        )


def target_predict_for(token_mode, target_predict, next_token_logits, bs, draft_token_num):
    """The ``target_predict`` to pass on: in real mode a missing one is the logits' argmax
    as ``(bs, draft_token_num)``; in fixed mode whatever was given (possibly ``None``)."""
    if token_mode != "real-draft-token" or target_predict is not None:
        return target_predict
    if not isinstance(next_token_logits, torch.Tensor):
        raise ValueError("real-draft-token mode needs target_predict or next_token_logits")
    if next_token_logits.dim() != 2 or next_token_logits.shape[0] != bs * draft_token_num:
        raise ValueError(
            f"next_token_logits must be 2-D with bs * draft_token_num = "
            f"{bs * draft_token_num} rows, got shape {tuple(next_token_logits.shape)}"
        )
    return torch.argmax(next_token_logits, dim=-1).reshape(bs, draft_token_num)
