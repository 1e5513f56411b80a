"""Self-tests of the serving loop, the grad modes and programs: a failing program replays
from its repro file (and the file is refused when hostile), the grad mode is a test
parameter that the header names, the length check over a burst fails a port whose
generator never advances, and every configuration the strategies draw is one a file may
hold. Runs stay small: a few programs, ``-n 0``, in this process."""

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import torch
from hypothesis import Phase, given, settings

import simacc
from simacc import properties, zoo
from simacc.commands import cli
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner
from simacc.harness.config import grad_modes, profiles
from simacc.harness.config import settings as opts
from simacc.harness.model import repro_files as reprofile
from simacc.harness.model.programs import Program
from simacc.properties import serving, serving_v2, support
from simacc.strategies import serving as sv
from simacc.strategies import vllm as vl

REPO = Path(__file__).resolve().parents[2]
LOOP = "serving_loop_conforms_at_every_step"
FEW = settings(profiles.for_session("ci"), database=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])


def failing_program(spec, prop_id=LOOP, context="inference"):
    """Run the serving property ``prop_id`` on ``spec`` until it fails; ``(runner, error)``."""
    prop = properties.find(prop_id)
    with Runner(impl.load(spec), "cpu", 30, FEW, None, context) as runner:
        try:
            prop.run(runner)
        except AssertionError as e:
            return runner, e
    raise AssertionError(f"{spec} passed {prop_id}")


def test_a_failing_program_replays_from_its_repro_file_and_prints_its_steps(tmp_path, capsys):
    spec = zoo.MUTANTS["index_from_a_pool_of_buffers"].spec
    runner, error = failing_program(spec)
    program = runner.last[0]
    assert isinstance(program, Program) and program.steps
    record = reprofile.Repro(LOOP, "simacc.properties.test_serving", "eagle", spec, "cpu", str(error), program,
                             "exact", "inference")
    path = reprofile.save(record, tmp_path)
    assert json.loads(path.read_text())["schema"] == reprofile.PROGRAM_SCHEMA
    assert cli.main(["repro", str(path), "--trust-recorded-impl"]) == 1
    out = capsys.readouterr().out
    assert "program   EagleLoop(mode=" in out and "  1  " in out and "under inference" in out
    # the pool hands out a buffer still held: seen sharing its storage, or writing into it first
    assert "FAIL: index shares storage with" in out or "written in place since it was returned" in out, out
    assert cli.main(["repro", str(path), "--impl", "simacc:generate_simulated_accept_index"]) == 0
    assert "pass: serving_loop_conforms_at_every_step holds" in capsys.readouterr().out


def test_a_program_round_trips_through_its_file_and_a_case_file_keeps_schema_1(tmp_path):
    program = Program("EagleLoop", {"mode": "fixed", "x": float("inf"), "graphs": True, "seed": 2**32 - 1},
                      (("join", {"count": 3}), ("step", {}), ("leave", {"first": 0, "count": 1})))
    record = reprofile.Repro(LOOP, "m", "eagle", "a:b", "cpu", "msg", program, "exact", "no_grad")
    again = reprofile.parse(reprofile.dumps(record))
    assert (again.case.machine, again.case.knobs, again.case.steps) == (program.machine, program.knobs, program.steps)
    assert again.context == "no_grad" and again.digest() == record.digest()
    old = json.loads((REPO / "properties/regressions").glob("*.json").__next__().read_text())
    assert old["schema"] == reprofile.SCHEMA and "context" not in old
    assert reprofile.parse(json.dumps(old)).context is None


def _program_file(**changes):
    program = {"machine": "EagleLoop", "knobs": {"mode": "fixed"}, "steps": [["step", {}]]}
    program.update(changes)
    return json.dumps({"schema": reprofile.PROGRAM_SCHEMA, "property": LOOP, "module": "m", "contract": "eagle",
                       "impl": "a:b", "device": "cpu", "message": "", "program": program})


@pytest.mark.parametrize("changes, problem", [
    ({"machine": "os.system"}, "is not a class name"),
    ({"steps": [["step"]]}, "a step must be [rule, {arguments}]"),
    ({"steps": [["step", {"count": [1]}]]}, "must be a number, true, false or a short string"),
    ({"knobs": {"../x": 1}}, "invalid name"),
    ({"steps": [["step", {}]] * (reprofile.MAX_PROGRAM_STEPS + 1)}, "at most"),
])
def test_a_hostile_program_file_is_refused_with_one_line(changes, problem):
    with pytest.raises(reprofile.ReproError) as caught:
        reprofile.parse(_program_file(**changes))
    assert problem in str(caught.value) and "\n" not in str(caught.value)


GOOD = {"mode": "fixed", "method": "match-expected", "width": 3, "x": 1.5, "capacity": 4, "graphs": True,
        "quiet": False, "nodes": 3, "tokens": True, "dtype": "int64", "vocab": 16, "seed": 0}


@pytest.mark.parametrize("knobs, steps, problem", [
    ({"mode": "fixed"}, (), "knobs must be"),
    (GOOD, (("step", {"count": 1}),), "is not one of"),
    (GOOD, (("teardown", {}),), "is not one of"),
    ({**GOOD, "capacity": 10**6}, (), "out of range"),
    ({**GOOD, "graphs": 1}, (), "out of range"),
    ({**GOOD, "mode": "real-draft-token", "nodes": 9}, (), "nodes must be"),
    ({**GOOD, "x": 0.0}, (), "outside the contract"),
])
def test_a_program_its_machine_cannot_run_is_refused_before_any_call(knobs, steps, problem):
    program = Program("EagleLoop", knobs, steps)
    with Runner(impl.reference("eagle"), "cpu") as runner:
        with pytest.raises(reprofile.ReproError, match=problem):
            serving.EagleLoop.of(runner).replay(program)
        assert runner.last is None  # nothing was called


@pytest.mark.parametrize("layout, engines, modes", [
    (serving.EagleLoop, sv.eagle_engines, simacc.TOKEN_MODES),
    (serving.KernelLoop, sv.kernel_engines, simacc.TOKEN_MODES),
    (serving.DflashLoop, sv.dflash_engines, simacc.TOKEN_MODES),
    (serving.FunctionalLoop, sv.functional_engines, simacc.TOKEN_MODES),
    (serving_v2.V2Loop, sv.v2_engines, vl.GREEDY),
])
def test_every_engine_the_strategies_draw_is_one_a_program_file_may_hold(layout, engines, modes):
    machine = serving.machine_for(layout, modes)(None)
    quiet = machine.quiet_knobs
    if quiet is not None:  # the fixed programs' knobs too (a layout with an x takes the method as well)
        machine.check_program(Program(layout.__name__, {**quiet, "method": "multinomial"} if "x" in quiet else quiet, ()))

    @settings(database=None, derandomize=True, max_examples=50, phases=[Phase.generate])
    @given(engines(modes=modes))
    def check(knobs):
        machine.check_program(Program(layout.__name__, knobs, (("join", {"count": 1}), ("step", {}))))

    check()


def test_the_grad_mode_option_selects_in_order_and_refuses_a_bad_one_in_one_line():
    assert grad_modes.expand("all") == ("inference", "no_grad")
    assert grad_modes.expand("no_grad, inference,no_grad") == ("no_grad", "inference")
    assert opts.resolve({}, environ={}).contexts == ("inference", "no_grad")
    with pytest.raises(opts.SettingsError, match=r"^SIMACC_CONTEXT: 'train' is not a grad mode"):
        opts.resolve({}, environ={"SIMACC_CONTEXT": "train"})


def test_an_inference_tensor_is_written_only_in_inference_mode():
    with torch.inference_mode():
        made = torch.zeros(2)
    with grad_modes.of_tensor(made):
        made.add_(1)  # outside the mode this raises
    plain = torch.zeros(2)
    with grad_modes.of_tensor(plain):
        assert not torch.is_inference_mode_enabled()


def _pytest(*args):
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        for name in [k for k in __import__("os").environ if k.startswith("SIMACC_")]:
            mp.delenv(name)
        code = pytest.main(["-p", "no:cacheprovider", "--rootdir", str(REPO), "--simacc-device=cpu",
                            "--simacc-max-examples=3", "--simacc-seed=0", *args])
    return int(code), out.getvalue()


def test_each_grad_mode_runs_in_sessions_of_its_own_and_the_header_says_which():
    code, out = _pytest(str(REPO / "properties"), "--co", "-k", "aliases or serving or index_rows")
    assert code == 0
    assert ("simacc: grad modes inference (every property), no_grad (the serving-loop and aliasing properties), "
            "each in processes of its own; this session runs inference only (--simacc-run-context runs another; "
            "simacc check runs each)") in out
    for shown in ("test_result_aliases_no_input[cpu-inference]", "test_serving_loop_conforms_at_every_step[cpu-inference]",
                  "test_index_rows_are_root_plus_range_then_minus_one[cpu]"):
        assert shown in out
    assert "no_grad]" not in out  # deselected: a process runs one grad mode (CONTRACT.md §11.5)
    code, out = _pytest(str(REPO / "properties"), "--co", "--simacc-run-context=no_grad", "-k",
                        "aliases or serving or index_rows")
    assert code == 0 and "this session runs no_grad only" in out
    assert "test_result_aliases_no_input[cpu-no_grad]" in out and "test_serving_loop_conforms_at_every_step[cpu-no_grad]" in out
    assert "inference]" not in out and "index_rows_are_root_plus_range_then_minus_one" not in out
    # a later mode's session collects only the modules of the properties run in every mode
    code, out = _pytest(str(REPO / "properties"), "--co", "-q", "--simacc-run-context=no_grad")
    both = _pytest(*(str(REPO / "properties" / name) for name in ("test_inputs.py", "test_serving.py")), "--co", "-q",
                   "--simacc-run-context=no_grad")[1]
    collected = re.search(r"^\d+/(\d+) tests collected", out, re.M)
    assert code == 0 and collected and collected[0] in both, out
    code, out = _pytest(str(REPO / "properties"), "--co", "--simacc-context=no_grad", "-k", "aliases")
    assert "simacc: grad modes no_grad (every property)" in out
    assert "test_result_aliases_no_input[cpu-no_grad]" in out and "[cpu-inference]" not in out


def test_a_run_context_that_is_not_selected_is_a_usage_error():
    code, out = _pytest(str(REPO / "properties"), "--co", "--simacc-context=inference", "--simacc-run-context=no_grad")
    assert code == 4


def test_an_implementation_decorated_with_inference_mode_passes_where_the_result_is_written():
    spec = zoo.CORRECT["decorated_with_inference_mode"].spec
    for mode in ("inference", "no_grad"):
        code, out = _pytest(str(REPO / "properties" / "test_inputs.py"), str(REPO / "properties" / "test_serving.py"),
                            f"--simacc-impl={spec}", f"--simacc-run-context={mode}", "-k",
                            "aliases or serving_loop_conforms", "-q")
        assert code == 0, out
        assert "2 passed" in out, out


STUCK = '''
import torch
import simacc

def never_advances(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
                   simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
    """A port whose own generator was captured once and never advances: the same L every call."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return simacc.generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates,
                                                      target_predict, bs, spec_steps, simulate_acc_len,
                                                      simulate_acc_method, simulate_acc_token_mode)
'''


def test_a_burst_rejects_a_semantic_port_whose_generator_never_advances(tmp_path):
    (tmp_path / "stuck.py").write_text(STUCK)
    quiet = Program("EagleLoop", {**GOOD, "x": 2.5, "quiet": True}, (("join", {"count": 2}), ("burst", {})))
    prop = properties.find(LOOP)
    with Runner(impl.load(f"{tmp_path / 'stuck.py'}:never_advances", level="semantic"), "cpu") as runner:
        error = prop.replay(runner, quiet)
    assert isinstance(error, AssertionError) and "L counts over a burst of 128 steps" in str(error)
    with Runner(impl.reference("eagle", "semantic"), "cpu") as runner:
        assert prop.replay(runner, quiet) is None


def test_a_burst_rejects_a_semantic_port_whose_lengths_repeat_every_16_calls_and_passes_one_that_continues():
    # each length with the documented law: only the repeat test sees the burst's copies (§9.1)
    quiet = Program("EagleLoop", {**GOOD, "x": 2.5, "quiet": True}, (("join", {"count": 2}), ("burst", {})))
    prop = properties.find(LOOP)
    with Runner(impl.load("simacc.zoo.sampling:own_stream_reseeded_every_16_calls", level="semantic"), "cpu") as runner:
        error = prop.replay(runner, quiet)
    assert isinstance(error, AssertionError) and "step i against step i + 16 (§9.1" in str(error), error
    with Runner(impl.load("simacc.zoo.sampling:own_stream_continued", level="semantic"), "cpu") as runner:
        assert prop.replay(runner, quiet) is None


def test_a_v2_program_with_a_length_outside_its_knob_is_refused():
    knobs = {**serving_v2.V2Loop.quiet_knobs, "length": 4.5}  # K = 3: at most 4
    with Runner(impl.reference("vllm_v2"), "cpu") as runner:
        with pytest.raises(reprofile.ReproError, match="outside"):
            serving_v2.V2Loop.of(runner).replay(Program("V2Loop", knobs, (("join", {"count": 1}),)))
        assert runner.last is None


@pytest.mark.parametrize("mode", [torch.inference_mode, torch.no_grad])
def test_a_held_result_keeps_no_reference_to_the_result_object(mode):
    import sys

    with mode():
        result = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    before = sys.getrefcount(result)
    alias, copy, version = support.held(result)
    assert sys.getrefcount(result) == before  # a pool counting references sees the result free
    assert version == (None if result.is_inference() else result._version)  # inference tensors keep no count
    assert support.shares_storage(alias, result) and not support.shares_storage(copy, result)
    assert torch.equal(alias, result) and torch.equal(copy, result)
