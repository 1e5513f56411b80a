"""What property modules share: case strategies that follow the implementation under test.

A legacy implementation has only the fixed token mode, so the case strategies read the
session's selection lazily (when the first example is drawn, after pytest has configured).
"""

from hypothesis import strategies as st

import strategies as sx
from simacc import plugin


def eagle_cases(**kwargs):
    """``sx.eagle_cases`` restricted to the token modes of the implementation under test."""
    return st.deferred(lambda: sx.eagle_cases(modes=plugin.modes_under_test(), **kwargs))


def expected_index(case):
    """The index SPEC.md requires, computed the plain way (rows, not tensor ops)."""
    import torch

    length = case.expected_length()
    rows = [[root + j if j < length else -1 for j in range(case.max_len)] for root in case.roots]
    return torch.tensor(rows, dtype=torch.int32).reshape(case.bs, case.max_len)
