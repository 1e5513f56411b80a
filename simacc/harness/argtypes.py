"""Validating ``type=`` callables shared by the pytest options and the subcommands: each
raises ``argparse.ArgumentTypeError`` with the bad value quoted."""

import argparse

DEVICE_HELP = "cpu, cuda, all, an indexed one (cpu:0, cuda:1) or a comma-separated list (cpu,cuda:1)"


def _checked(parse, value):
    """``parse(value)``, its ``ValueError`` (a one-line reason) turned into argparse's error."""
    try:
        return parse(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def device_choice(value):
    """A device selection (:func:`simacc.harness.devices.expand`), returned as given."""
    from simacc.harness import devices

    _checked(devices.expand, value)
    return value


def one_device(value):
    """A single device spelling (``cpu``, ``cuda:1``), not ``all`` or a list."""
    from simacc.harness import devices

    _checked(devices.parse, value)
    return value


def fixed_token_id(value):
    """A token id for fixed mode to write (``--fixed-token-id``)."""
    from simacc.harness import selection

    return _checked(selection.parse_fixed_token_id, value)


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
