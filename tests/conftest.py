"""Fixtures of simacc's self-tests (not shipped: the plugin's fixtures are ``simacc`` and ``simacc_context``)."""

import signal

import pytest


@pytest.fixture
def ctrl_c():
    """Ctrl-C as on a terminal, even where the suite was started with SIGINT ignored (a
    background job of a shell without job control): this process handles it, and the
    processes it starts get the default disposition back (an ignored signal stays ignored
    across exec, a handled one does not)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
