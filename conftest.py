"""pytest wiring of simacc's own repository (the plugin itself is the ``simacc`` entry point,
loaded by name in ``pyproject.toml``'s ``addopts``, which turns autoloading off; there too
``simacc_impl = references`` makes every property run against its own contract's reference).

Tests marked ``slow`` (an install from a built wheel, a check under a pytest-xdist worker)
run only with ``--simacc-run-slow``: CI's suite keeps to a few minutes without them. The
option is namespaced because this file is also read where a project checks an editable
install of simacc from this checkout.

Each process that runs tests makes the copy that fresh processes start from
(:mod:`simacc.harness.processes.fresh`) before the tests are collected: the self-tests import the zoo at
collection, and ranks forked from a copy that already holds an implementation's module would
not import it anew (they would be new interpreters instead, a second of torch each).

Each xdist worker of this suite (not of a project that reads this file through an editable
install) runs torch on its share of the cores, as a simacc command's workers do
(:func:`simacc.harness.call.process_state.share_the_cores`): at torch's own count, a thread a
core in every worker, the threads of one took the cores from the others, and on a 2-core
sandbox a tensor op that wakes a second thread took milliseconds (the catalogue on the
reference, a third more CPU). The property that judges a call's changes still calls at torch's
own count.

Under the ``ci`` profile (``CI`` set) with no number of examples given, the references are
checked at :data:`CI_EXAMPLES` examples a property, not the profile's 200: a user's CI keeps
200, and ``tests/meta/test_zoo.py`` kills every mutant at 200. Another profile, or
``--simacc-max-examples`` / ``SIMACC_MAX_EXAMPLES``, is taken as given."""

import dataclasses
from pathlib import Path

import pytest

CI_EXAMPLES = 100  # Hypothesis's own default: the catalogue's share of the suite's CPU, halved


def pytest_addoption(parser):
    parser.addoption("--simacc-run-slow", action="store_true", help="also run simacc's own slow self-tests")


@pytest.hookimpl(trylast=True)  # after the plugin has resolved its settings
def pytest_configure(config):
    from simacc.harness.plugin import fixtures

    state = config.stash.get(fixtures.STATE, None)
    if state is not None and state.settings.references and state.settings.profile == "ci" \
            and state.settings.max_examples is None:
        state.settings = dataclasses.replace(state.settings, max_examples=CI_EXAMPLES)
    own_suite = config.rootpath.samefile(Path(__file__).parent)  # not a project that reads this file
    if hasattr(config, "workerinput") and own_suite:
        from simacc.harness.call import process_state

        process_state.share_the_cores(config.workerinput.get("workercount", 1))
    config.addinivalue_line("markers", "slow: one of simacc's own self-tests that CI leaves out (run with --simacc-run-slow)")
    config.addinivalue_line("markers", "vllm: runs vLLM's own code; skipped with the reason where vLLM is not importable "
                                       "(docs/vllm.md; select with -m vllm)")
    config.addinivalue_line("markers", "sglang: runs sglang's own code (its DSpark files, its length sampler); skipped with "
                                       "the reason where it is not importable (docs/engines.md, docs/laws.md; select with -m sglang)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--simacc-run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --simacc-run-slow")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    if session.config.pluginmanager.has_plugin("dsession"):
        return  # pytest-xdist's controller: its workers collect and run the tests
    import simacc.properties  # noqa: F401 - names what the catalogue judges with, for the record below
    from simacc.harness.call import impl

    impl.prepare()
