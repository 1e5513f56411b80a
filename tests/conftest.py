"""Fixtures of simacc's self-tests (not shipped: the plugin's fixtures are ``simacc`` and ``simacc_context``)."""

import signal

import pytest

from simacc.harness.processes import forkserver


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """(pytest-xdist's controller) Start the fork server before the workers, which inherit its
    offer: one server, and one rank server, for the whole run, not one each."""
    if session.config.pluginmanager.has_plugin("dsession"):
        _offer_a_fork_server()


@pytest.fixture(scope="session", autouse=True)
def one_fork_server():
    """One fork server for every simacc command these tests start, in this process or as a
    program of their own (they share it through the environment): each would otherwise start
    its own, an import of torch each (a test of a command's own servers takes them out of its
    environment). Under xdist it is the controller's."""
    _offer_a_fork_server()
    yield


def _offer_a_fork_server():
    found = forkserver.server()
    if found is not None:
        forkserver.offer(found)


@pytest.fixture
def ctrl_c():
    """Ctrl-C as on a terminal, even where the suite was started with SIGINT ignored (a
    background job of a shell without job control): this process handles it, and the
    processes it starts get the default disposition back (an ignored signal stays ignored
    across exec, a handled one does not)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
