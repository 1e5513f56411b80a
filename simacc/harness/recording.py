"""Turning a failing property's shrunk case into a repro file, for the pytest plugin.

Hypothesis replays the minimal failing example last, so after a failure the runner's
``last`` holds the shrunk case; the device is the runner's own (a parity property calls the
implementation on the CPU too). The file goes to the repro folder under a name made from the
property, implementation, device and case, so a failure found again by any xdist worker or
run rewrites its own file instead of adding one. Its path and the case summary go to the
report's ``user_properties`` (what ``simacc check`` reads), and a section of the failure
text says how to replay it (so a JUnit report carries it too). Writing a repro file never
breaks the run: a failure to write is reported in that section instead.
"""

import shlex

from simacc.contract import caller
from simacc.harness import repro_files as reprofile
from simacc.harness.settings import shown

SECTION = "simacc repro"


def record(report, excinfo, runner, prop_id, module, repro_dir, invocation_dir):
    """Write the repro file of ``runner``'s last case for property ``prop_id`` and say so in
    ``report``."""
    case = runner.last[0]
    message = str(excinfo.value) if excinfo is not None else ""
    impl = runner.impl
    try:
        repro = reprofile.Repro(prop_id, module, impl.contract, impl.spec, runner.device, message, case, impl.level,
                                runner.context)
        path = reprofile.save(repro, repro_dir)
    except (OSError, reprofile.ReproError) as e:
        section(report, f"case: {case.summary()}\nno repro file: {e}")
        return
    where = shown(path, invocation_dir)
    report.user_properties.append(("simacc_repro", str(path)))
    report.user_properties.append(("simacc_case", case.summary()))
    replay = ["simacc", "repro", str(where), "--impl", impl.spec]
    if impl.fixed_token_id != caller.DEFAULT_TOKEN_ID:  # set by an option, not by this environment
        replay += ["--fixed-token-id", str(impl.fixed_token_id)]
    section(report, f"case: {case.summary()}\nrepro file: {where}\nreplay it: {shlex.join(replay)}")


def section(report, text, title=SECTION):
    """A titled section of the failure text: in the traceback's own sections where it has
    them (the terminal and a JUnit ``<failure>`` both show those), else the report's."""
    sections = getattr(report.longrepr, "addsection", None)
    if sections is not None:
        sections(title, text)
    else:
        report.sections.append((title, text))
