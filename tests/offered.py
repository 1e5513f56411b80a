"""What the tests that start a simacc command as a program of its own share: its environment."""

import os

from simacc.harness.processes import forkserver


def without_settings():
    """This process's environment without its ``SIMACC_*`` settings, the session server it
    offers kept (tests/conftest.py): a command started with it shares that server instead of
    starting two of its own, each an import of torch."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SIMACC_") or k.startswith(forkserver.ADDRESS)}
