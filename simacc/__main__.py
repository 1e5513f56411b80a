"""``python -m simacc``: the ``simacc`` command, where the console script is not installed."""

import sys

from simacc.commands.cli import main

sys.exit(main())
