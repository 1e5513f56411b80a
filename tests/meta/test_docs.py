"""The reference pages generated from the code (``docs/generate.py``) are up to date: an option
or a property changed without ``python docs/generate.py`` fails here, not in a reader's hands."""

import subprocess
from pathlib import Path

from simacc.harness.processes import forkserver

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_generated_reference_pages_are_up_to_date():
    # python docs/generate.py --check, forked from the session server this suite shares
    done = subprocess.run(forkserver.command([str(DOCS / "generate.py"), "--check"]), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
