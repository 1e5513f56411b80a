"""The ``simacc`` command. Each subcommand lives in the module named for what it does, in the
folder of its product (``checking/``: an implementation; ``serving/``: the engines, their laws
and their logs), and adds itself with ``register(subparsers)``; its handler returns the exit
code (0 success, 1 a conformance failure, 2 a usage error; ``simacc check --help`` lists its
own).

A usage error is one line, from the subcommand it concerns (an unknown option of ``simacc
check`` included, which argparse would blame on ``simacc`` itself), followed by
``try 'simacc check --help'`` instead of a usage block.

A subcommand that sets ``end_process`` ends the process as soon as its output is out,
when ``simacc`` runs as a program: the interpreter's teardown with torch loaded takes
about a second on a busy machine, longer than a small check, and it would wait forever
for a non-daemon thread that the implementation under test left running.

A subcommand that sets ``supervise`` (``repro``, ``mutants``: they call implementations in
their own process) runs, when ``simacc`` runs as a program, in a child process under a
supervisor (:func:`simacc.commands.supervised.supervised`): the command's exit status is the
one the child reports when its work is done, never whatever status the child's process ended
with, so an implementation that ends its process cannot make it a success."""

import argparse
import importlib
import os
import sys

import simacc

# each command's module, in the order --help lists them: checking an implementation, then the engines,
# their laws and their logs
SUBCOMMANDS = {"check": "simacc.commands.checking.check", "repro": "simacc.commands.checking.repro",
               "fuzz": "simacc.commands.checking.fuzz", "mutants": "simacc.commands.checking.mutants",
               "bench": "simacc.commands.checking.bench", "engines": "simacc.commands.serving.engines",
               "laws": "simacc.commands.serving.laws", "observe": "simacc.commands.serving.observe"}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line with a pointer to ``--help``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}; try '{self.prog} --help'\n")


def build_parser(only=None):
    """The ``simacc`` parser with every subcommand, or with the one named ``only``: a command
    imports its own module and no other's (the others took 0.05 to 0.1 s before a check
    started the process that imports torch)."""
    parser = Parser(
        prog="simacc",
        description="Property-based conformance checking for simulated acceptance in "
        "speculative decoding (sglang's generate_simulated_accept_index and relatives, vLLM's synthetic acceptance).",
    )
    parser.add_argument("--version", action="version", version=f"simacc {simacc.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else (only,):
        importlib.import_module(SUBCOMMANDS[name]).register(sub)
    parser.subcommands = sub.choices  # each subcommand's parser, for its own errors
    return parser


def main(argv=None):
    """Run ``simacc ARGV`` and return its exit code; ``argv`` None means this process's
    own command line (``sys.argv``), which is when an ``end_process`` subcommand may end
    the process instead of returning, and when a SIGTERM is taken as a Ctrl-C."""
    if argv is None:
        from simacc.harness.processes import interrupts

        interrupts.stop_on_sigterm()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args, unknown = parser.parse_known_args(argv)
    if args.command is None:
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        parser.print_help()
        return 2
    if unknown:
        parser.subcommands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    supervised_by = getattr(args, "supervised_by", None)
    if argv is None and getattr(args, "supervise", False) and supervised_by is None:
        from simacc.commands.supervised import supervised

        end_process(supervised(sys.argv[1:], args.command))
    if supervised_by is not None:  # the supervised child: say the result, then end at once
        from simacc.harness.processes import watch

        watch.configure(supervised_by)
        code = _run(args, argv)
        watch.report_result(supervised_by, code)
        if argv is None:
            end_process(code)
        return code
    code = _run(args, argv)
    if argv is None and getattr(args, "end_process", False):
        end_process(code)
    return code


def _run(args, argv):
    """The command's exit code; run as a program, a Ctrl-C (or SIGTERM) that the command did
    not take itself ends it with one line and exit 130, not a traceback. Called in a process
    of someone else's (``argv`` given), it is theirs."""
    if argv is not None:
        return args.run(args)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        from simacc.commands.exits import Exit

        print(f"simacc {args.command}: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def end_process(code):
    """Flush the output and end the process with ``code``, skipping the interpreter's
    teardown (and the threads it would wait for), once the fork servers it started have ended
    and been waited for (they reap what they forked: nothing is left ``<defunct>``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    from simacc.harness.processes import forkserver

    forkserver.close_all()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
