"""The ``simacc`` command. Each subcommand lives in the module named for what it does and
adds itself with ``register(subparsers)``; its handler returns the exit code
(0 success, 1 a conformance failure, 2 a usage error)."""

import argparse
import importlib
import sys

import simacc

SUBCOMMANDS = ("check", "repro", "fuzz", "mutants", "bench")  # module names under simacc/, in the order --help lists them


def build_parser():
    parser = argparse.ArgumentParser(
        prog="simacc",
        description="Property-based conformance checking for simulated acceptance in "
        "speculative decoding (sglang's generate_simulated_accept_index and relatives).",
    )
    parser.add_argument("--version", action="version", version=f"simacc {simacc.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"simacc.{name}").register(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
