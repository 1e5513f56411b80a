"""Fixtures of simacc's self-tests (not shipped: the plugin's fixtures are ``simacc`` and ``simacc_context``)."""

import signal

import pytest

from simacc.harness.processes import forkserver


@pytest.fixture(scope="session", autouse=True)
def one_fork_server():
    """One fork server for every simacc command these tests start, in this process or as a
    program of their own (they share it through the environment): each would otherwise start
    its own, an import of torch each (a test of a command's own servers takes them out of its
    environment)."""
    found = forkserver.server()
    if found is not None:
        forkserver.offer(found)
    yield


@pytest.fixture
def ctrl_c():
    """Ctrl-C as on a terminal, even where the suite was started with SIGINT ignored (a
    background job of a shell without job control): this process handles it, and the
    processes it starts get the default disposition back (an ignored signal stays ignored
    across exec, a handled one does not)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
