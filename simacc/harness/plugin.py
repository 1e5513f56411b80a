"""simacc's pytest plugin: the ``simacc`` pytest11 entry point (``-p simacc.harness.plugin``
where plugin autoloading is off).

It is inert in a session that collects none of simacc's properties: its options are all
``--simacc-*``, its one fixture is ``simacc`` (with ``simacc_context``, its grad mode), it
loads no Hypothesis profile (simacc's profiles reach simacc's properties only,
:mod:`simacc.harness.profiles`), and it touches no test but its own. Where simacc's properties are collected:

* the settings (:mod:`simacc.harness.settings`) are resolved once, on the controller, and
  handed to xdist workers; the implementation is loaded where the properties run (the
  workers, or the one process with ``-n 0``), never on an xdist controller;
* no implementation selected is an error, never a check of the built-in references, except
  where the ini option ``simacc_impl = references`` asks for them (simacc's own repository);
* simacc's property modules are imported by their package name, ``simacc.properties.<name>``,
  wherever their files lie, and outside the rootdir their node ids name that package, so a
  JUnit report's ``classname`` carries the module path;
* each property is parametrized by device through its fixture, the serving-loop and aliasing
  ones by grad mode too (``name[cpu-inference]``; every other runs in the first mode
  selected, :mod:`simacc.harness.grad_modes`); one that does not apply to the
  implementation's contract or level is deselected and counted, never skipped;
* every test's :class:`~simacc.harness.status.Status` travels in its report's
  ``user_properties`` (``simacc_status``), with its examples and repro file, and, under a
  simacc command, in the event stream (:mod:`simacc.harness.stream`);
* the session's processes share a few files (:mod:`simacc.harness.watch`): once the
  implementation has hung :data:`~simacc.harness.watch.HANG_BUDGET` times the remaining
  properties are *not run*, a dead worker's report says what killed it (a watchdog kill is a
  hang), and pytest's internal error in a worker ends that worker, a crash xdist survives.
"""

import dataclasses
import functools
import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from simacc.harness import grad_modes
from simacc.harness import settings as opts
from simacc.harness import stream, watch
from simacc.harness.status import Status

NO_IMPL = ("no implementation selected: pass --simacc-impl 'package.module:function' (or set SIMACC_IMPL) "
           "to say what simacc's properties check")
CRASH = ("the worker process died while running it (a segfault, os._exit, or a kill from outside such as the "
         "out-of-memory killer)")
IMPORT_LIMIT = 4  # importing the implementation may take this many per-call time limits


@dataclasses.dataclass
class _Session:
    """What the plugin knows about one session."""

    settings: opts.Settings
    stream: str | None
    impl: object = None  # the Implementation under test, once loaded (None: the references)
    impl_error: str | None = None  # why it cannot be checked (it would not load, no database), one line
    seed: int | None = None  # the seed its properties run with (profiles.seed_for)
    hypothesis: object = None  # the Hypothesis settings simacc's properties run under
    xfails: dict = dataclasses.field(default_factory=dict)
    deselected: dict = dataclasses.field(default_factory=dict)  # {nodeid: reason} not applicable
    loaded: bool = False
    prefix: str | None = None  # the session's shared files (simacc.harness.watch)


_SESSION = pytest.StashKey[_Session]()


def pytest_addoption(parser):
    group = parser.getgroup("simacc", "simacc: simulated-acceptance conformance")
    opts.add_arguments(group, opts.OPTIONS, pytest=True)
    group.addoption("--simacc-stream", dest="simacc_stream", default=None, metavar="PATH",
                    help="(for simacc's own commands) append the session's events to PATH")
    parser.addini("simacc_impl", "the implementation simacc's properties check when neither --simacc-impl nor "
                  "SIMACC_IMPL names one ('references': each property's own contract's reference)")


@functools.cache
def properties_dir():
    """Where simacc's property modules lie (found, not imported)."""
    return Path(importlib.util.find_spec("simacc.properties").origin).resolve().parent


def session(config):
    """The plugin's :class:`_Session` of ``config``."""
    return config.stash[_SESSION]


def pytest_configure(config):
    if hasattr(config, "workerinput") and "simacc_settings" in config.workerinput:
        chosen = opts.Settings.from_json(config.workerinput["simacc_settings"])
    else:
        try:
            chosen = opts.resolve(opts.given(config.option), root=config.invocation_params.dir, home=config.rootpath)
        except opts.SettingsError as e:
            raise pytest.UsageError(str(e)) from None
        if chosen.impl is None and config.getini("simacc_impl"):
            chosen = dataclasses.replace(chosen, impl=config.getini("simacc_impl"))
    given = getattr(config, "workerinput", {}).get("simacc_prefix")
    path = config.getoption("simacc_stream")
    config.stash[_SESSION] = _Session(chosen, path, prefix=given or path or watch.plain_prefix())
    config.pluginmanager.register(_Deaths(config), "simacc-deaths")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Reporter(path, config), "simacc-stream")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist controller) Hand the resolved settings and the session's files to a worker."""
    node.workerinput["simacc_settings"] = session(node.config).settings.to_json()
    node.workerinput["simacc_prefix"] = session(node.config).prefix


# -- collection ---------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path, parent):
    """simacc's properties folder is a plain directory to pytest: its modules are imported
    by package name (below), never as a top-level ``properties`` package of the rootdir."""
    if path.resolve() == properties_dir():
        return pytest.Dir.from_parent(parent, path=path)
    return None


class PropertyModule(pytest.Module):
    """A module of ``simacc.properties``, imported by that name wherever its file lies."""

    def _getobj(self):
        return importlib.import_module(f"simacc.properties.{self.path.stem}")


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if module_path.resolve().parent != properties_dir() or not module_path.name.startswith("test_"):
        return None
    nodeid = None
    try:
        module_path.resolve().relative_to(parent.config.rootpath.resolve())
    except ValueError:  # outside the rootdir: the node id names the package, not the file's folder
        nodeid = f"simacc/properties/{module_path.name}"
    return PropertyModule.from_parent(parent, path=module_path, nodeid=nodeid)


def _property(item):
    from simacc.harness.catalogue import property_of

    return property_of(getattr(item, "function", None))


@pytest.hookimpl(trylast=True)  # the device last in a test's id: name[0.4-cpu]
def pytest_generate_tests(metafunc):
    from simacc.harness import devices
    from simacc.harness.catalogue import property_of

    prop = property_of(metafunc.function)
    if prop is None:
        return
    chosen = session(metafunc.config).settings
    if prop.params is not None:
        for name, values in prop.params(chosen).items():
            metafunc.parametrize(name, values)
    selected = chosen.devices
    cuda = [d for d in selected if devices.is_cuda(d)]
    if not prop.across_devices:
        params = [_device(d, prop.unavailable(d)) for d in selected]
    elif not cuda:  # one CPU parameter, which Property.not_applicable then deselects
        params = [_device(selected[0], None)]
    elif len(cuda) == len(selected):
        params = [_device(d, "it compares this CUDA device with the CPU, and the devices selected (--device) "
                          "include no CPU") for d in cuda]
    else:
        params = [_device(d, prop.unavailable(d)) for d in cuda]
    metafunc.parametrize("simacc", params, indirect=True)
    if prop.across_contexts:
        metafunc.parametrize("simacc_context", prop.contexts(chosen.contexts), indirect=True)


def _device(spelling, skip_reason):
    marks = (pytest.mark.skip(reason=skip_reason),) if skip_reason else ()
    return pytest.param(spelling, id=spelling, marks=marks)


def property_id(item):
    """``name`` or ``name[device]`` without the ``test_`` prefix: how xfails and reports
    name a property."""
    return item.name.removeprefix("test_")


def _load(config):
    """Load the implementation under test once (the properties' own references for
    ``references``); a failure is kept as the session's ``impl_error``."""
    from simacc.harness import impl

    st = session(config)
    if st.loaded:
        return
    st.loaded = True
    chosen = st.settings
    from simacc.harness import profiles

    st.seed = profiles.seed_for(chosen.profile, chosen.database, chosen.seed)
    try:
        st.hypothesis = profiles.for_session(chosen.profile, chosen.max_examples, config.invocation_params.dir,
                                             chosen.database, chosen.database_readonly)
    except profiles.DatabaseError as e:
        st.impl_error = str(e)
        stream.emit(st.stream, "impl_error", message=st.impl_error)
        return
    watch.configure(st.prefix)
    if chosen.references:
        return
    watch.beat(IMPORT_LIMIT * chosen.timeout)  # a supervisor ends an import that never finishes
    try:
        st.impl = impl.load(chosen.impl, chosen.contract, chosen.level, chosen.fixed_token_id)
    except impl.ImplError as e:
        st.impl_error = str(e)
        stream.emit(st.stream, "impl_error", message=st.impl_error)
        return
    finally:
        watch.rest()
    if st.stream:
        import hypothesis
        import torch

        import simacc

        loaded = st.impl
        stream.emit(st.stream, "implementation", spec=loaded.spec, contract=loaded.contract, style=loaded.style,
                    contract_from=loaded.contract_from, level=loaded.level, source=loaded.source,
                    version=loaded.version, fixed_token_id=loaded.fixed_token_id,
                    cuda_available=torch.cuda.is_available(), torch=torch.__version__,
                    hypothesis=hypothesis.__version__, simacc=simacc.__version__)


def pytest_collection_modifyitems(session, config, items):
    ours = [item for item in items if _property(item) is not None]
    if not ours:
        return
    st = config.stash[_SESSION]
    worker = hasattr(config, "workerinput")
    if st.settings.impl is None:
        if not worker:
            raise pytest.UsageError(NO_IMPL)
        return  # the controller stops the session (pytest_xdist_node_collection_finished)
    _load(config)
    if st.impl_error and not worker:
        raise pytest.UsageError(st.impl_error)
    keep = _selected(config, ours) if st.settings.properties else set(ours)
    if st.impl_error and st.stream:
        keep = set()  # a command says it in one line; a plain session fails each property with it
    if st.impl_error is None:
        for item in ours:
            reason = _property(item).not_applicable(_implementation(item), item.callspec.params["simacc"], _params(item))
            if reason and item in keep:
                keep.discard(item)
                st.deselected[item.nodeid] = reason
    running = st.settings.process_context
    elsewhere = {item for item in keep if _context(item, st.settings) != running}  # another mode's processes run it
    keep -= elsewhere
    if elsewhere:  # a command starts the sessions of those modes only (harness.session)
        stream.emit(st.stream, "other_modes", modes=sorted({_context(item, st.settings) for item in elsewhere}))
    dropped = [item for item in ours if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
    if st.deselected:
        stream.emit(st.stream, "not_applicable", items=st.deselected)
    _mark_xfails(config, [item for item in items if item in keep])
    first = [item for item in items if item in keep and _property(item).id == "regression"]
    items[:] = first + [item for item in items if item not in first]  # known failures before random ones


def _context(item, chosen):
    """The grad mode ``item`` calls the implementation in (as its ``simacc_context`` fixture says)."""
    return item.callspec.params.get("simacc_context") or chosen.contexts[0]


def _params(item):
    return {k: v for k, v in item.callspec.params.items() if k not in ("simacc", "simacc_context")}


def _selected(config, ours):
    """The items ``--simacc-property`` selects: ``id``, ``id[device]`` or a shell pattern."""
    from simacc.harness.catalogue import selects

    wanted = session(config).settings.properties
    return {item for item in ours if any(selects(w, property_id(item)) for w in wanted)}


def _mark_xfails(config, items):
    st = session(config)
    if st.settings.xfails is None:
        return
    st.xfails = opts.read_xfails(st.settings.xfails)
    unused = dict(st.xfails)
    for item in items:
        for entry in (property_id(item), _property(item).id):
            if entry in st.xfails:
                unused.pop(entry, None)
                item.add_marker(pytest.mark.xfail(reason=f"listed in the xfails file (line {st.xfails[entry]})",
                                                  strict=True))
                item.stash[_LISTED] = True
                break
    if hasattr(config, "workerinput"):
        return  # the controller warns once
    for entry, line in unused.items():
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(f"xfails file line {line}: {entry!r} matches no property"), stacklevel=2
        )


_LISTED = pytest.StashKey[bool]()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """(xdist controller) A session that collects simacc's properties with no implementation
    selected stops here, with one line."""
    if session(node.config).settings.impl is None and any(_is_ours(nodeid, node.config) for nodeid in ids):
        raise pytest.UsageError(NO_IMPL)


def _is_ours(nodeid, config):
    path = nodeid.split("::")[0]
    return path.startswith("simacc/properties/") or (config.rootpath / path).resolve().parent == properties_dir()


# -- running --------------------------------------------------------------------------------------


@pytest.fixture
def simacc_context(request):
    """The grad mode this test calls the implementation in: its parameter, or the first mode
    the session selects (:mod:`simacc.harness.grad_modes`)."""
    return getattr(request, "param", None) or session(request.config).settings.contexts[0]  # as _context says


@pytest.fixture
def simacc(request, simacc_context):
    """The implementation under test on this test's device and in its grad mode, as a
    :class:`~simacc.harness.runner.Runner` (simacc's properties only)."""
    from simacc.harness.runner import Runner

    prop = _property(request.node)
    if prop is None or not hasattr(request, "param"):
        pytest.fail("the simacc fixture serves simacc's own properties only", pytrace=False)
    st = session(request.config)
    if st.settings.impl is None:
        pytest.fail(NO_IMPL, pytrace=False)
    _load(request.config)
    if st.impl_error:
        pytest.fail(st.impl_error, pytrace=False)
    hung = watch.hang_count()
    if hung >= watch.HANG_BUDGET:
        raise NotRun(f"not run: the implementation hangs ({hung} calls outlasted the {st.settings.timeout:g} s "
                     "time limit)")
    capture = request.config.getoption("capture", "fd") != "no"  # -s: the implementation's output goes through
    with Runner(_implementation(request.node), request.param, st.settings.timeout, st.hypothesis, st.seed,
                capture=capture, context=simacc_context) as runner:
        yield runner


def _implementation(item):
    """The implementation ``item`` checks: the one under test, or its property's reference."""
    from simacc.harness import impl

    st = session(item.config)
    if st.impl is not None:
        return st.impl
    contract = _property(item).applies_to(_params(item))[0]
    return impl.reference(contract, st.settings.level, st.settings.fixed_token_id)


class NotRun(pytest.skip.Exception):
    """A property that was never run: the implementation hangs (:data:`watch.HANG_BUDGET`)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After each of simacc's properties, the whole harness is checked (the quick check
    after each call covers what judges that call): a change fails the property."""
    result = yield
    if _property(item) is not None and session(item.config).loaded:
        from simacc.harness import tamper

        tamper.check(full=True, when="during this property")
    return result


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    prop = _property(item)
    if prop is None:
        return report
    runner = getattr(item, "funcargs", {}).get("simacc")
    if call.when == "setup":
        report.user_properties += [("simacc_property", prop.id), ("simacc_device", item.callspec.params["simacc"]),
                                   ("simacc_sections", prop.sections)]
    if call.when == "call":
        examples = getattr(runner, "examples", None)
        if examples is not None:
            report.user_properties.append(("simacc_examples", examples))
        output = runner.output if runner is not None else ""
        if output:
            report.sections.append(("Captured output of the implementation (simacc)", output))
        if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception) \
                and getattr(runner, "last", None) is not None and not item.stash.get(_LISTED, False):
            _record(item, call, report, runner)
        if call.excinfo is not None:
            from simacc.harness import distributions

            distributions.report(report, call.excinfo.value)  # observed against expected, for the reports
    status = _status(item, call)
    if status is not None:
        item.stash[_STATUS] = status
    if report.when == "teardown":
        report.user_properties.append(("simacc_status", item.stash.get(_STATUS, Status.PASS).value))
        if _NOT_RUN in item.stash:
            report.user_properties.append(("simacc_not_run", item.stash[_NOT_RUN]))
    return report


_STATUS = pytest.StashKey[Status]()


def _status(item, call):
    """The test's status as of this phase (None: nothing new)."""
    listed = item.stash.get(_LISTED, False)
    if call.excinfo is None:
        return (Status.XPASS if listed else Status.PASS) if call.when == "call" else None
    if call.excinfo.errisinstance(NotRun):
        item.stash[_NOT_RUN] = str(call.excinfo.value)
        return Status.NOT_RUN
    if call.excinfo.errisinstance(pytest.skip.Exception):
        return Status.SKIPPED
    if call.excinfo.errisinstance(pytest.xfail.Exception):
        return Status.XFAIL
    if listed and call.when == "call":
        return Status.XFAIL
    from simacc.harness.runner import ImplementationHung

    return Status.HUNG if call.excinfo.errisinstance(ImplementationHung) else Status.FAIL


_NOT_RUN = pytest.StashKey[str]()


def _record(item, call, report, runner):
    from simacc.harness import recording
    from simacc.harness import repro_files as reprofile

    prop = _property(item)
    pid, module = prop.id, prop.module
    if prop.id == "regression":  # a corpus case names its own property
        try:
            record = reprofile.load(item.callspec.params["regression"])
        except reprofile.ReproError:
            return
        pid, module = record.property, record.module
    elif not prop.replayable:
        return  # not a property over one case: nothing a file could replay
    st = session(item.config)
    recording.record(report, call.excinfo, runner, pid, module, st.settings.repro_dir, item.config.invocation_params.dir)


# -- what the session reports ------------------------------------------------------------------


def pytest_report_header(config):
    st = session(config)
    chosen = st.settings
    if chosen.impl is None:
        return None
    if chosen.references:
        under_test = "each property's own contract's reference (simacc_impl = references)"
    else:
        where, version = _locate(chosen.impl)
        under_test = f"{chosen.impl} ({where}{f', version {version}' if version else ''})"
    from simacc.harness import profiles

    seed = profiles.seed_for(chosen.profile, chosen.database, chosen.seed)
    seed = seed if seed is not None else ("fixed (derandomized)" if chosen.profile == "ci" else "random")
    lines = [
        f"simacc: implementation {under_test}",
        f"simacc: level {chosen.level}; devices {', '.join(chosen.devices)}; profile simacc-{chosen.profile}"
        + (f", max_examples {chosen.max_examples}" if chosen.max_examples else "") + f"; seed {seed}",
        "simacc: example database " + profiles.describe(chosen.profile, chosen.database, chosen.database_readonly,
                                                        config.invocation_params.dir),
        f"simacc: grad modes {grad_modes.describe(chosen.contexts, chosen.process_context)}"
        + (" (--simacc-run-context runs another; simacc check runs each)" if len(chosen.contexts) > 1 else ""),
    ]
    variables = opts.in_effect()
    if variables:
        lines.append("simacc: " + " ".join(f"{k}={v}" for k, v in variables.items()))
    return lines


def _locate(spec):
    """``(file, version)`` of an IMPL, found without running any of its code: the version from
    the installed distribution's metadata, else a literal ``__version__`` in the package."""
    import ast
    from importlib import metadata

    where, _, _ = spec.rpartition(":")
    if where.endswith(".py") or "/" in where:
        return str(Path(where).resolve()), ""
    from importlib.machinery import PathFinder

    parts, path, found, top = where.split("."), None, None, None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])  # each finder asked as an import would, nothing executed
        found = next(filter(None, (getattr(f, "find_spec", lambda *a: None)(name, path) for f in sys.meta_path)), None)
        if found is None and path is None:  # loading looks in the working directory last (impl.py)
            found = PathFinder.find_spec(name, [os.getcwd()])
        if found is None:
            return f"module {where}, not found", ""
        top = top or found
        path = found.submodule_search_locations
    names = metadata.packages_distributions().get(parts[0], [])
    if names:
        return found.origin or where, metadata.version(names[0])
    try:
        tree = ast.parse(Path(top.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, TypeError, ValueError):
        return found.origin or where, ""
    version = next((node.value.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(getattr(t, "id", None) == "__version__" for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)), "")
    return found.origin or where, version


class _Reporter:
    """(``--simacc-stream``, on the controller) The session's events for the command that
    started it: what was collected, each test as it starts and its result as it ends (a
    worker that died under a test included), warnings, pytest's internal error, and the end
    (with why the tests that never ran did not)."""

    def __init__(self, path, config):
        self.path = path
        self.config = config
        self.phases = {}
        self.crashes = 0

    def pytest_collection_finish(self, session):
        if session.items:  # without xdist; with it the workers collect
            stream.emit(self.path, "collected", nodeids=[item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        stream.emit(self.path, "collected", nodeids=list(ids))

    def pytest_collectreport(self, report):
        if report.failed:
            stream.emit(self.path, "collect_error", nodeid=report.nodeid, message=str(report.longrepr).strip())

    def pytest_runtest_logstart(self, nodeid, location):
        stream.emit(self.path, "started", nodeid=nodeid)

    def pytest_runtest_logreport(self, report):
        phases = self.phases.setdefault(report.nodeid, [])
        phases.append(report)
        if report.when in ("teardown", "???"):  # ???: xdist, the worker died under this test
            self.crashes += report.when == "???"
            del self.phases[report.nodeid]
            stream.emit(self.path, "result", **_result(report.nodeid, phases))

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        if issubclass(warning_message.category, pytest.PytestConfigWarning):
            stream.emit(self.path, "warning", message=str(warning_message.message))

    def pytest_internalerror(self, excrepr, excinfo):
        stream.emit(self.path, "internal_error", message=_last_line(excrepr))

    def pytest_sessionfinish(self, session, exitstatus):
        ended = Status.ERROR if exitstatus == pytest.ExitCode.INTERNAL_ERROR else Status.NOT_RUN
        for nodeid, phases in self.phases.items():  # started, never finished
            stream.emit(self.path, "result", **_result(nodeid, phases, ended))
        stream.emit(self.path, "finished", exitstatus=int(exitstatus), not_run=self._not_run(exitstatus))
        self.exitstatus = int(exitstatus)

    def _not_run(self, exitstatus):
        """Why a collected test never ran, as far as this process knows (empty: it does not)."""
        hung = watch.hang_count(session(self.config).prefix)
        if hung >= watch.HANG_BUDGET:
            return f"the implementation hangs ({hung} calls outlasted the time limit)"
        if self.crashes:
            return f"pytest-xdist stopped replacing its crashed workers after {self.crashes} crash(es)"
        if exitstatus == pytest.ExitCode.INTERNAL_ERROR:
            return "pytest stopped with an internal error"
        return ""


class _Deaths:
    """How the session's processes died, named. On the xdist controller, a dead worker's
    report (``???``) gets the status and line its last words give (:func:`watch.last_words`:
    a watchdog or supervisor kill is a hang, counted against the hang budget); otherwise it
    is a crash. In a worker that runs simacc's properties, pytest's internal error (the
    implementation broke pytest, or ran it out of memory) becomes the worker's death, which
    xdist survives by starting another, where a worker that finishes with tests left makes
    xdist's controller fail with an internal error of its own."""

    def __init__(self, config):
        self.config = config
        self.collected = False  # (xdist controller) some worker has collected, so it loaded the implementation

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """(xdist controller) A worker that dies before any worker has collected died
        importing the implementation (where it is loaded): the session stops with that one
        line, a usage error, instead of starting worker after worker to die the same way."""
        st = session(self.config)
        if error is None or self.collected or st.settings.impl is None or st.settings.references:
            return
        words = watch.last_words(st.prefix)
        message = (f"IMPL {st.settings.impl!r}: the process importing it died before it said what it loaded: "
                   + (words[1] if words else f"{error} (os._exit, or a crash, while it was imported?)"))
        stream.emit(st.stream, "impl_error", message=message)
        pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when != "???" or not _is_ours(report.nodeid, self.config):
            return
        prefix = session(self.config).prefix
        kind, line = watch.last_words(prefix) or ("crash", "")
        status = {"watchdog": Status.HUNG, "killed": Status.HUNG, "internal": Status.ERROR}.get(kind, Status.CRASHED)
        line = f"the worker process died while running it: {line}" if line else CRASH
        if status == Status.HUNG:
            watch.note_hang(prefix)
        report.user_properties += [("simacc_status", status.value), ("simacc_death", line)]
        report.longrepr = f"{report.longrepr}\n{line}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr, excinfo):
        if not (hasattr(self.config, "workerinput") and session(self.config).loaded):
            return
        watch.say_last_words("internal", f"pytest failed in it with an internal error (the implementation may have "
                                         f"broken pytest, or run it out of memory): {_last_line(excrepr)}",
                             prefix_=session(self.config).prefix)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(pytest.ExitCode.INTERNAL_ERROR))


def _last_line(excrepr):
    lines = [line for line in str(excrepr).strip().splitlines() if line.strip()]
    return stream.clip(lines[-1].removeprefix("E").strip() if lines else "", 500)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Under a simacc command (``--simacc-stream``), the last thing a process of the session
    does: end at once. Everything is said by now; the interpreter's teardown would only keep
    the command waiting, forever with a non-daemon thread the implementation left running.
    A plain pytest session ends as pytest ends it, and its controller removes the session's
    shared files."""
    if not config.getoption("simacc_stream", None):
        if _SESSION in config.stash and not hasattr(config, "workerinput"):
            watch.clean(session(config).prefix)
        return
    reporter = config.pluginmanager.get_plugin("simacc-stream")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(getattr(reporter, "exitstatus", 0))


def _result(nodeid, phases, unfinished=Status.NOT_RUN):
    """One test's result from its phase reports, as the stream carries it; ``unfinished`` is
    the status of a test that started and never reached its teardown."""
    props = {}
    for r in phases:
        props.update(dict(r.user_properties))
    status, message, cut_short = props.get("simacc_status"), "", False
    failed = next((r for r in phases if r.failed), None)
    skipped = next((r for r in phases if r.skipped and isinstance(r.longrepr, tuple)), None)
    if any(r.when == "???" for r in phases):
        status, message = props.get("simacc_status", Status.CRASHED.value), props.get("simacc_death", CRASH)
    elif status is None:  # never reached its teardown
        status, message, cut_short = unfinished.value, "the run ended before this test finished", True
    elif status == Status.NOT_RUN.value:
        message = props.get("simacc_not_run", "")
    elif failed is not None:
        crash = getattr(failed.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(failed.longrepr).strip().splitlines()[-1]
        if failed.when != "call":
            message = f"error in {failed.when}: {message}"
    elif skipped is not None:
        message = skipped.longrepr[2].removeprefix("Skipped: ")
    return dict(nodeid=nodeid, property=props.get("simacc_property"), device=props.get("simacc_device"),
                sections=props.get("simacc_sections"), status=status, message=message,
                examples=props.get("simacc_examples"),
                seconds=sum(getattr(r, "duration", 0.0) for r in phases), repro=props.get("simacc_repro"),
                case=props.get("simacc_case"), distribution=props.get("simacc_distribution"), unfinished=cut_short)
