"""Hypothesis settings profiles, registered on purpose (issue #3).

* ``default``: quick local runs; random, with the local example database
  (``.hypothesis/examples``, git-ignored) so a failure found once is replayed first the next
  time, even before it is fixed and promoted to the regression corpus (issue #5).
* ``ci``: what Hypothesis loads by itself when ``CI`` is set. Derandomized (the same
  examples on every run, so CI is never flaky), no database, ``print_blob`` on so a CI log
  carries a reproduction blob.
* ``thorough``: nightly fuzzing and ``simacc fuzz``; random, many examples, the same local
  database (``simacc fuzz`` forces a seed per round, and Hypothesis neither reads nor
  writes the database under a forced seed: its finds go to repro files instead).

No deadline anywhere: the first call of a torch op, or of a CUDA kernel, is slow for
reasons that are not the implementation's fault.
"""

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

EXAMPLES = {"default": 50, "ci": 200, "thorough": 2000}
# The impl fixture is function-scoped on purpose: one runner serves every example of a test.
_COMMON = dict(
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

LOCAL_DATABASE = ".hypothesis/examples"  # relative to where pytest runs, like Hypothesis's own default

settings.register_profile(
    "default",
    max_examples=EXAMPLES["default"],
    database=DirectoryBasedExampleDatabase(LOCAL_DATABASE),
    **_COMMON,
)
settings.register_profile(
    "ci", max_examples=EXAMPLES["ci"], derandomize=True, database=None, **_COMMON
)
settings.register_profile(
    "thorough",
    max_examples=EXAMPLES["thorough"],
    database=DirectoryBasedExampleDatabase(LOCAL_DATABASE),
    **_COMMON,
)
