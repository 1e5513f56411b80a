"""simacc's own Hypothesis settings profiles, applied to simacc's properties only.

They are registered under simacc's names (``simacc-default``, ``simacc-ci``,
``simacc-thorough``) and never loaded: a host project's own profile, the ``ci`` profile
Hypothesis loads when ``CI`` is set, and every ``@given`` test outside simacc keep their
settings. Each property builds its Hypothesis test with :func:`for_session` when it runs.

* ``default``: quick local runs; random, with a local example database so that a failure
  found once is replayed first the next time, before it is fixed and promoted.
* ``ci``: derandomized (the same examples every run, so CI is never flaky), no database,
  ``print_blob`` on so a CI log carries a reproduction blob.
* ``thorough``: ``simacc fuzz``; random, many examples, the local database.

No deadline anywhere: the first call of a torch op, or of a CUDA kernel, is slow for
reasons that are not the implementation's fault. Every value that matters is stated, so a
host's changes to Hypothesis's ``default`` profile do not reach these.
"""

from pathlib import Path

from hypothesis import HealthCheck, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase

EXAMPLES = {"default": 50, "ci": 200, "thorough": 2000}
LOCAL = {"default": True, "ci": False, "thorough": True}  # whether the local example database is used
DATABASE = ".hypothesis/examples"  # under the folder the session started in, like Hypothesis's own
_COMMON = dict(
    deadline=None,
    print_blob=True,
    verbosity=Verbosity.normal,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

for _name, _examples in EXAMPLES.items():
    settings.register_profile(
        f"simacc-{_name}",
        parent=settings.get_profile("default"),
        max_examples=_examples,
        derandomize=_name == "ci",
        database=None,
        **_COMMON,
    )


def for_session(name, max_examples=None, root="."):
    """The Hypothesis settings of profile ``name`` (``default``, ``ci``, ``thorough``) for a
    session started in ``root``: its example database there, ``max_examples`` overriding."""
    chosen = settings.get_profile(f"simacc-{name}")
    overrides = {}
    if LOCAL[name]:
        overrides["database"] = DirectoryBasedExampleDatabase(str(Path(root).resolve() / DATABASE))
    if max_examples:
        overrides["max_examples"] = max_examples
    return settings(chosen, **overrides) if overrides else chosen

