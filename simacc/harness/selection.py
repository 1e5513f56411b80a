"""What the session has chosen, read where cases are drawn (after pytest has configured, or
inside the zoo's in-process runs): the implementation under test, with its token modes,
and the token id fixed mode must write where the contract takes it as an argument.

Both are stacks: a session run inside another (``simacc check`` from a test) or an
in-process run pushes its own choice and gives the outer one back when it ends.
"""

import contextlib

from simacc.harness import env

DEFAULT_FIXED_TOKEN_ID = 100  # sglang's; sglang-jax writes 32
MAX_TOKEN_ID = 2**31 - 1  # predict is int32

_UNDER_TEST = []
_FIXED_TOKEN_IDS = []


@contextlib.contextmanager
def testing(implementation):
    """Make ``implementation`` (None: the references) the one under test while inside."""
    _UNDER_TEST.append(implementation)
    try:
        yield implementation
    finally:
        _UNDER_TEST.pop()


def under_test():
    """The implementation under test (None: each property's reference)."""
    return _UNDER_TEST[-1] if _UNDER_TEST else None


def modes_under_test():
    """The token modes the implementation under test can be asked for (both by default)."""
    current = under_test()
    return current.modes if current is not None else ("fixed", "real-draft-token")


def parse_fixed_token_id(text):
    """A fixed token id from an option or variable; ``ValueError`` in one line if it is not
    a whole number that fits in ``predict`` (int32, not negative)."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"the fixed token id must be a whole number, got {text!r}") from None
    if not 0 <= value <= MAX_TOKEN_ID:
        raise ValueError(f"the fixed token id must be in [0, {MAX_TOKEN_ID}] (predict is int32), got {text!r}")
    return value


@contextlib.contextmanager
def checking_fixed_token_id(token_id):
    """Make ``token_id`` the id that checks ask for while inside (``--fixed-token-id``)."""
    _FIXED_TOKEN_IDS.append(parse_fixed_token_id(token_id))
    try:
        yield
    finally:
        _FIXED_TOKEN_IDS.pop()


def fixed_token_id():
    """The id fixed mode must write in this check: the innermost
    :func:`checking_fixed_token_id`, else ``SIMACC_FIXED_TOKEN_ID``, else 100."""
    if _FIXED_TOKEN_IDS:
        return _FIXED_TOKEN_IDS[-1]
    return parse_fixed_token_id(env.get("FIXED_TOKEN_ID", DEFAULT_FIXED_TOKEN_ID))
