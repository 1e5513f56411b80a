"""Validating ``type=`` callables shared by the pytest options and the subcommands: each
raises ``argparse.ArgumentTypeError`` with the bad value quoted."""

import argparse

DEVICE_CHOICES = ("cpu", "cuda", "all")


def device_choice(value):
    if value not in DEVICE_CHOICES:
        raise argparse.ArgumentTypeError(f"must be one of {DEVICE_CHOICES}, got {value!r}")
    return value


def positive_number(unit):
    """A ``type=`` for a number of ``unit`` (seconds, minutes) that must be > 0."""

    def parse(value):
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of {unit}, got {value!r}") from None
        if not number > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {value!r}")
        return number

    return parse


positive_seconds = positive_number("seconds")


def positive_int(value):
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value!r}")
    return number


def workers(value):
    """pytest-xdist's ``-n``: ``auto`` or a count >= 0 (0 runs in one process)."""
    if value == "auto":
        return value
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number >= 0, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value!r}")
    return str(number)
