"""Turning a failing property's shrunk case into a repro file, for the pytest plugin.

Hypothesis replays the minimal failing example last, so after a failure the runner's
``last`` holds the shrunk case; the device is the runner's own (a parity property calls the
implementation on the CPU too). The file goes to the repro folder under a name made from the
property, implementation, device and case, so a failure found again by any xdist worker or
run rewrites its own file instead of adding one. Its path and the case summary go to the
report's ``user_properties`` (what ``simacc check`` reads), and a section of the failure
text says how to replay it (so a JUnit report carries it too). Writing a repro file never
breaks the run: a failure to write is reported in that section instead.

:func:`replay_command` is the one way a replay command is written (the commands' failure
blocks, fuzz's summary and this section); this module imports torch only once it records.
"""

import shlex

from simacc.harness.config.settings import shown

SECTION = "simacc repro"


def record(report, excinfo, runner, prop_id, module, repro_dir, invocation_dir):
    """Write the repro file of ``runner``'s last case for property ``prop_id`` and say so in
    ``report``."""
    from simacc.contract import caller  # here: a command builds replay commands without torch
    from simacc.harness.model import repro_files as reprofile

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
    report.user_properties.append(("simacc_size", case.size_text()))
    fixed = impl.fixed_token_id if impl.fixed_token_id != caller.DEFAULT_TOKEN_ID else None
    section(report, f"case: {case.summary()}\nrepro file: {where}\n"
                    f"replay it: {replay_command(impl.spec, repro=where, fixed_token_id=fixed)}")


def replay_command(spec, *, repro=None, test=None, fixed_token_id=None, seed=None, database=None, tokenizer=None):
    """The one line that replays a failure of the implementation ``spec``: ``simacc repro FILE
    --impl IMPL`` when its repro file was written (``repro``; the file names an implementation,
    but repro imports only the one it is given), else a check of that one ``test`` in one
    process, with the run's ``seed`` and ``database`` (which replays the example); None with
    neither. ``fixed_token_id`` and ``tokenizer`` are passed on when the run had them."""
    fixed = [] if fixed_token_id is None else ["--fixed-token-id", str(fixed_token_id)]
    if repro:
        return shlex.join(["simacc", "repro", str(repro), "--impl", spec, *fixed])
    if not test:
        return None
    command = ["simacc", "check", spec, "--property", test, "-n", "0", *fixed]
    if seed is not None:
        command += ["--seed", str(seed)]
    if database:
        command += ["--database", database]
    if tokenizer:
        command += ["--tokenizer", str(tokenizer)]
    return shlex.join(command)


def section(report, text, title=SECTION):
    """A titled section of the failure text: in the traceback's own sections where it has
    them (the terminal and a JUnit ``<failure>`` both show those), else the report's."""
    sections = getattr(report.longrepr, "addsection", None)
    if sections is not None:
        sections(title, text)
    else:
        report.sections.append((title, text))
