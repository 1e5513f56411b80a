"""The modules whose code judges an implementation, named by the rooms above the call (the
catalogue's oracles, the strategies its cases come from, the assertion helpers) so that
:func:`simacc.harness.call.tamper.baseline` imports and records them before the first
implementation is imported: no implementation can be the first to import, and so patch, what
judges it. Torch-free, so that naming them costs nothing."""

_NAMED = {"all": [], "quick": []}


def judged_with(*modules, quick=False):
    """Name ``modules`` (dotted names) as judging an implementation too; ``quick``: every
    call's outcome is compared through them, so they are looked at after each call, not only
    after each property."""
    _NAMED["all"].extend(modules)
    if quick:
        _NAMED["quick"].extend(modules)


def named(quick=False):
    """The modules :func:`judged_with` named (only the quick ones with ``quick``), in order."""
    return tuple(_NAMED["quick" if quick else "all"])
