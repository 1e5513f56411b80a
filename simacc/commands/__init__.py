"""The ``simacc`` command and its subcommands: check, repro, fuzz, mutants, bench."""
