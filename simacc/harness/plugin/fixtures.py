"""The plugin's options, what it knows of a session, and the fixtures that hand a property the
implementation under test: one place for what a test of simacc's is given.

The settings are resolved once, by the command that starts the session (handed over whole,
``--simacc-settings``) or else on the controller, and handed to xdist workers; the
implementation is loaded (:func:`load`) where the properties run, the first time a test or
the collection asks, never on an xdist controller.
"""

import dataclasses
import json

import pytest

from simacc.harness.config import settings as opts
from simacc.harness.processes import stream, watch

NO_IMPL = ("no implementation selected: pass --simacc-impl 'package.module:function' (or set SIMACC_IMPL) "
           "to say what simacc's properties check")
IMPORT_LIMIT = 4  # importing the implementation may take this many per-call time limits


@dataclasses.dataclass
class State:
    """What the plugin knows about one session."""

    settings: opts.Settings
    stream: str | None
    impl: object = None  # the Implementation under test, once loaded (None: the references)
    impl_error: str | None = None  # why it cannot be checked (it would not load, no database), one line
    hypothesis: object = None  # the Hypothesis settings simacc's properties run under
    xfails: dict = dataclasses.field(default_factory=dict)
    deselected: dict = dataclasses.field(default_factory=dict)  # {nodeid: reason} not applicable
    loaded: bool = False
    prefix: str | None = None  # the session's shared files (simacc.harness.processes.watch)
    outer_prefix: str | None = None  # this process's before (a session run inside another's process gives them back)
    started: tuple | None = None  # the process state and threads before its first call (process_state.started)


STATE = pytest.StashKey[State]()


def state(config):
    """The plugin's :class:`State` of ``config``."""
    return config.stash[STATE]


def pytest_addoption(parser):
    group = parser.getgroup("simacc", "simacc: simulated-acceptance conformance")
    opts.add_arguments(group, opts.OPTIONS, pytest=True)
    group.addoption("--simacc-stream", dest="simacc_stream", default=None, metavar="PATH",
                    help="(for simacc's own commands) append the session's events to PATH")
    group.addoption("--simacc-settings", dest="simacc_settings", default=None, metavar="JSON",
                    help="(for simacc's own commands) the session's settings as the command resolved them, read as "
                         "they are (the --simacc-* options and SIMACC_* are not read again)")
    parser.addini("simacc_impl", "the implementation simacc's properties check when neither --simacc-impl nor "
                  "SIMACC_IMPL names one ('references': each property's own contract's reference)")


def pytest_configure(config):
    handed = getattr(config, "workerinput", {}).get("simacc_settings")
    if handed:  # resolved by the controller of this worker
        chosen = opts.Settings.from_json(json.loads(handed))
    elif config.getoption("simacc_settings"):  # resolved by the command that started the session
        chosen = _handed(config)
    else:
        try:
            chosen = opts.resolve(opts.given(config.option), root=config.invocation_params.dir, home=config.rootpath,
                                  ini={"impl": config.getini("simacc_impl") or None})
        except opts.SettingsError as e:
            raise pytest.UsageError(str(e)) from None
    given = getattr(config, "workerinput", {}).get("simacc_prefix")
    path = config.getoption("simacc_stream")
    config.stash[STATE] = State(chosen, path, prefix=given or path or watch.plain_prefix())


def _handed(config):
    """The settings ``--simacc-settings`` carries: the whole record, so no other ``--simacc-*``
    option may be given beside it (it would be dropped without a word)."""
    beside = [opts.OPTIONS[name].flag(True) for name, value in opts.given(config.option).items() if value is not None]
    if beside:
        raise pytest.UsageError(f"--simacc-settings carries the whole settings; give no other --simacc-* option "
                                f"beside it (got {', '.join(beside)})")
    try:
        return opts.Settings.from_json(json.loads(config.getoption("simacc_settings")))
    except (ValueError, TypeError, AttributeError) as e:
        raise pytest.UsageError(f"--simacc-settings: not the settings simacc writes ({e})") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist controller) Hand the resolved settings and the session's files to a worker."""
    node.workerinput["simacc_settings"] = json.dumps(state(node.config).settings.to_json())
    node.workerinput["simacc_prefix"] = state(node.config).prefix


def item_property(item):
    """The :class:`~simacc.harness.judging.catalogue.Property` a test runs, or None (not one of simacc's)."""
    from simacc.harness.judging.catalogue import property_of

    return property_of(getattr(item, "function", None))


def item_params(item):
    """A property test's own parameters: neither its device nor its grad mode."""
    return {k: v for k, v in item.callspec.params.items() if k not in ("simacc", "simacc_context")}


def load(config):
    """Load the implementation under test once (the properties' own references for
    ``references``); a failure is kept as the session's ``impl_error``."""
    from simacc.harness.call import impl
    from simacc.harness.judging import catalogue

    st = state(config)
    if st.loaded:
        return
    st.loaded = True
    chosen = st.settings
    from simacc.harness.config import profiles

    try:
        st.hypothesis = profiles.for_session(chosen.profile, chosen.max_examples, config.invocation_params.dir,
                                             chosen.database, chosen.database_readonly)
    except profiles.DatabaseError as e:
        st.impl_error = str(e)
        stream.emit(st.stream, "impl_error", message=st.impl_error)
        return
    st.outer_prefix = watch.prefix()
    watch.configure(st.prefix)
    if chosen.references:
        return
    watch.beat(IMPORT_LIMIT * chosen.timeout)  # a supervisor ends an import that never finishes
    try:
        st.impl = impl.load(chosen.impl, catalogue.checked(), chosen.contract, chosen.level, chosen.fixed_token_id,
                            chosen.refused_drafts)
    except impl.ImplError as e:
        st.impl_error = str(e)
        stream.emit(st.stream, "impl_error", message=st.impl_error)
        return
    finally:
        watch.rest()
    if st.stream and hasattr(config, "workerinput"):  # a command's worker, never a user's process
        from simacc.harness.call import process_state

        process_state.share_the_cores(config.workerinput.get("workercount", 1))
    if st.stream:
        import hypothesis
        import torch

        import simacc

        loaded = st.impl
        stream.emit(st.stream, "implementation", spec=loaded.spec, contract=loaded.contract, style=loaded.style,
                    writes_a_fixed_id=loaded.record.writes_a_fixed_id,
                    samples_drafts_against_logits=loaded.record.samples_drafts_against_logits,
                    contract_from=loaded.contract_from, level=loaded.level, source=loaded.source,
                    version=loaded.version, fixed_token_id=loaded.fixed_token_id,
                    cuda_available=torch.cuda.is_available(), torch=torch.__version__,
                    hypothesis=hypothesis.__version__, simacc=simacc.__version__)


@pytest.fixture
def simacc_context(request):
    """The grad mode this test calls the implementation in: its parameter, or the first mode
    the session selects (:mod:`simacc.harness.config.grad_modes`)."""
    return getattr(request, "param", None) or state(request.config).settings.contexts[0]  # as collection._context


@pytest.fixture
def simacc(request, simacc_context):
    """The implementation under test on this test's device and in its grad mode, as a
    :class:`~simacc.harness.call.runner.Runner` (simacc's properties only)."""
    from simacc.harness.call.runner import Runner

    prop = item_property(request.node)
    if prop is None or not hasattr(request, "param"):
        pytest.fail("the simacc fixture serves simacc's own properties only", pytrace=False)
    st = state(request.config)
    if st.settings.impl is None:
        pytest.fail(NO_IMPL, pytrace=False)
    load(request.config)
    if st.impl_error:
        pytest.fail(st.impl_error, pytrace=False)
    hung = watch.hang_count()
    if hung >= watch.HANG_BUDGET:
        raise NotRun(f"not run: the implementation hangs ({hung} calls outlasted the {st.settings.timeout:g} s "
                     "time limit)")
    capture = request.config.getoption("capture", "fd") != "no"  # -s: the implementation's output goes through
    if st.started is None:
        from simacc.harness.call import process_state

        st.started = process_state.started()
    with Runner(implementation_of(request.node), request.param, st.settings.timeout, st.hypothesis,
                st.settings.seed, capture=capture, context=simacc_context) as runner:
        yield runner
    # HypoFuzz sets an item up again after tearing it down, and pytest then fills only the
    # fixtures its funcargs lack: a runner left there is a closed one (HypoFuzz 25.11.1 stops)
    for name in ("simacc", "simacc_context"):
        (request.node.funcargs or {}).pop(name, None)


def implementation_of(item):
    """The implementation ``item`` checks: the one under test, or its property's reference."""
    from simacc.harness.call import impl

    st = state(item.config)
    if st.impl is not None:
        return st.impl
    contract = item_property(item).applies_to(item_params(item))[0]
    return impl.reference(contract, st.settings.level, st.settings.fixed_token_id)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last of a run of simacc's tests in this process (the process's last test, or
    one a host project's test follows), once its fixtures are torn down: what a thread an
    implementation's call started changed in the process since the run's first call fails that
    test, whenever the thread acted (§11.4; :func:`~simacc.harness.call.runner.check_the_end`).
    A host's own tests are never judged: the next run of simacc's starts from the state it finds."""
    st = state(item.config)
    last = nextitem is None or item_property(nextitem) is None
    if last and st.started is not None and st.impl is not None and item_property(item) is not None:
        from simacc.harness.call.runner import check_the_end

        start, st.started = st.started, None
        check_the_end(st.impl, start)


class NotRun(pytest.skip.Exception):
    """A property that was never run: the implementation hangs (:data:`watch.HANG_BUDGET`)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After each of simacc's properties, the whole harness is checked (the quick check
    after each call covers what judges that call): a change fails the property."""
    result = yield
    if item_property(item) is not None and state(item.config).loaded:
        from simacc.harness.call import tamper

        tamper.check(full=True, when="during this property")
    return result
