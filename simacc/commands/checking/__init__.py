"""Checking an implementation: ``simacc check``, ``repro``, ``fuzz``, ``mutants`` and ``bench``,
and what they share (the check's session and verdict in :mod:`.conformance` and :mod:`.verdict`,
the zoo's runs in :mod:`.zoo_runs`)."""
