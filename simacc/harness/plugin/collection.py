"""Which of simacc's properties a session runs, and as which tests: its property modules
collected by package name, each property parametrized by device (and grad mode), what does
not apply to the implementation deselected with the reason, and the xfails file's entries
marked. Every decision about a test before it runs is here.
"""

import importlib
import sys

import pytest

from simacc.harness.config import settings as opts
from simacc.harness.config.settings import properties_dir
from simacc.harness.plugin.fixtures import NO_IMPL, implementation_of, item_params, item_property, load, state
from simacc.harness.processes import stream


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


def pytest_ignore_collect(collection_path, config):
    """A session of a later grad mode than the first collects only the property modules that
    hold a property run in every mode: every test of the others would be deselected there,
    after a quarter of a second of collecting them (``simacc check`` starts that session
    beside the first, before anything says which tests it will run)."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    chosen = state(config).settings
    if chosen.process_context == chosen.contexts[0] or collection_path.resolve().parent != properties_dir():
        return None
    from simacc.harness.judging.catalogue import property_of

    module = importlib.import_module(f"simacc.properties.{collection_path.stem}")
    declared = (property_of(value) for value in vars(module).values())
    return None if any(prop.across_contexts for prop in declared if prop is not None) else True


def is_ours(nodeid, config):
    """Whether the test ``nodeid`` is one of simacc's properties."""
    path = nodeid.split("::")[0]
    return path.startswith("simacc/properties/") or (config.rootpath / path).resolve().parent == properties_dir()


@pytest.hookimpl(trylast=True)  # the device last in a test's id: name[0.4-cpu]
def pytest_generate_tests(metafunc):
    """Each property's tests as :meth:`Property.tests` lists them (the in-process runs take the
    same), its device and grad mode through the fixtures."""
    from simacc.harness.judging.catalogue import property_of

    prop = property_of(metafunc.function)
    if prop is None:
        return
    chosen = state(metafunc.config).settings
    tests = prop.tests(chosen.devices, chosen.contexts, chosen)
    names = list(tests[0].params) if tests else []  # none: pytest's "empty parameter set" skip
    fixtures = ["simacc", "simacc_context"] if prop.across_contexts else ["simacc"]
    metafunc.parametrize(
        [*names, *fixtures],
        [pytest.param(*t.params.values(), t.device, *([t.context] if prop.across_contexts else []), id=t.suffix,
                      marks=(pytest.mark.skip(reason=t.skip),) if t.skip else ()) for t in tests],
        indirect=fixtures)


def property_id(item):
    """``name`` or ``name[device]`` without the ``test_`` prefix: how xfails and reports
    name a property."""
    return item.name.removeprefix("test_")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """No implementation for a session whose arguments name simacc's properties is the usage
    error at once, before any worker starts or torch is imported (seconds); a session that
    reaches them otherwise (a folder above theirs) has it after collection, below."""
    config = session.config
    if state(config).settings.impl is None and not hasattr(config, "workerinput") and _names_properties(config):
        raise pytest.UsageError(NO_IMPL)


def _names_properties(config):
    """Whether an argument of the session is simacc's properties folder or a module or test of
    it: by path, or by package name under ``--pyargs`` (read, never imported: importing one
    imports torch)."""
    folder = properties_dir()
    for arg in config.args:
        name = arg.split("::")[0]
        if config.option.pyargs and (name == "simacc.properties" or name.startswith("simacc.properties.")):
            return True
        path = (config.invocation_params.dir / name).resolve()
        if folder in (path, path.parent):
            return True
    return False


def pytest_collection_modifyitems(session, config, items):
    ours = [item for item in items if item_property(item) is not None]
    if not ours:
        return
    st = state(config)
    worker = hasattr(config, "workerinput")
    if st.settings.impl is None:
        if not worker:
            raise pytest.UsageError(NO_IMPL)
        return  # the controller stops the session (pytest_xdist_node_collection_finished)
    load(config)
    if st.impl_error and not worker:
        raise pytest.UsageError(st.impl_error)
    keep = _selected(config, ours) if st.settings.properties else set(ours)
    if st.impl_error and st.stream:
        keep = set()  # a command says it in one line; a plain session fails each property with it
    if st.impl_error is None:
        for item in ours:
            reason = item_property(item).not_applicable(implementation_of(item), item.callspec.params["simacc"],
                                                        item_params(item))
            if reason and item in keep:
                keep.discard(item)
                st.deselected[item.nodeid] = reason
    running = st.settings.process_context
    elsewhere = {item for item in keep if _context(item, st.settings) != running}  # another mode's processes run it
    keep -= elsewhere
    if elsewhere:  # a command starts the sessions of those modes only (harness.session)
        stream.emit(st.stream, "other_modes", modes=sorted({_context(item, st.settings) for item in elsewhere}),
                    nodeids=sorted(item.nodeid for item in elsewhere))
    dropped = [item for item in ours if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
    if st.deselected:
        stream.emit(st.stream, "not_applicable", items=st.deselected)
    _mark_xfails(config, [item for item in items if item in keep])
    if st.impl_error is None:
        _give_hypothesis_tests(st, [item for item in items if item in keep])
    first = [item for item in items if item in keep and item_property(item).first]
    items[:] = first + [item for item in items if item not in first]  # known failures before random ones


def _give_hypothesis_tests(st, items):
    """Each item of a property that draws holds its Hypothesis test for this implementation
    and device under the session's settings (``Property.hypothesis_test``), marked
    ``hypothesis`` as Hypothesis's plugin marks one: ``-m hypothesis`` selects it, and HypoFuzz
    (``hypothesis fuzz -- --pyargs simacc.properties ...``) fuzzes it. pytest itself runs the
    property's record (:func:`pytest_pyfunc_call`). HypoFuzz fuzzes only tests whose database
    is Hypothesis's default, and keeps its finds there: in its run, the session's database
    becomes that default."""
    for item in items:
        prop = item_property(item)
        if prop.is_hypothesis_test:
            item.obj = prop.hypothesis_test(implementation_of(item), item.callspec.params["simacc"], item_params(item),
                                            st.hypothesis, st.settings.seed)
            if item.get_closest_marker("hypothesis") is None:  # Hypothesis's plugin may have looked before
                item.add_marker("hypothesis")
    detection = sys.modules.get("hypofuzz.detection")  # imported by HypoFuzz's command, never here
    if detection is not None and detection.in_hypofuzz_run():
        import hypothesis

        hypothesis.settings.register_profile("simacc-hypofuzz", parent=hypothesis.settings.default,
                                             database=st.hypothesis.database)
        hypothesis.settings.load_profile("simacc-hypofuzz")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A property runs through its record (``Property.run``: the database's examples first
    when seeded, a stateful property's fixed programs, the examples counted, the process
    checked afterwards), whatever test its item holds for Hypothesis's tools."""
    prop = item_property(pyfuncitem)
    if prop is None:
        return None
    prop.run(pyfuncitem.funcargs["simacc"], **item_params(pyfuncitem))
    return True


def _context(item, chosen):
    """The grad mode ``item`` calls the implementation in (as its ``simacc_context`` fixture says)."""
    return item.callspec.params.get("simacc_context") or chosen.contexts[0]


def _selected(config, ours):
    """The items ``--simacc-property`` selects: ``id``, ``id[device]`` or a shell pattern."""
    from simacc.harness.judging.catalogue import selects

    wanted = state(config).settings.properties
    return {item for item in ours if any(selects(w, property_id(item)) for w in wanted)}


def _mark_xfails(config, items):
    st = state(config)
    if st.settings.xfails is None:
        return
    st.xfails = opts.read_xfails(st.settings.xfails)
    unused = dict(st.xfails)
    for item in items:
        for entry in (property_id(item), item_property(item).id):
            if entry in st.xfails:
                unused.pop(entry, None)
                item.add_marker(pytest.mark.xfail(reason=f"listed in the xfails file (line {st.xfails[entry]})",
                                                  strict=True))
                item.stash[LISTED] = True
                break
    if hasattr(config, "workerinput"):
        return  # the controller warns once
    for entry, line in unused.items():
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(f"xfails file line {line}: {entry!r} matches no property"), stacklevel=2
        )


LISTED = pytest.StashKey[bool]()  # the test is in the xfails file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """(xdist controller) A session that collects simacc's properties with no implementation
    selected stops here, with one line."""
    if state(node.config).settings.impl is None and any(is_ours(nodeid, node.config) for nodeid in ids):
        raise pytest.UsageError(NO_IMPL)
