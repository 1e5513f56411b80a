"""The harness that drives an implementation, in rooms named for their roles. Each room may
import the rooms above it in this list and none below (the ``rooms`` contract of
``pyproject.toml``, which ``tests/meta/test_structure.py`` runs, fails on an import that points down
the list, and the ``circles`` contract on any import circle):

* :mod:`~simacc.harness.config`: what a session is configured with (contracts, settings,
  profiles, devices, grad modes, statuses);
* :mod:`~simacc.harness.processes`: processes and the files they share (fresh copies and new
  interpreters, heartbeats, event streams, Ctrl-C, whole-file writes);
* :mod:`~simacc.harness.model`: the case model and its file format (cases, programs, repro files);
* :mod:`~simacc.harness.call`: the call and its protection (loading the implementation, the
  runner, the process state, the harness's own objects, output capture);
* :mod:`~simacc.harness.sessions`: running calls and properties elsewhere (tensor-parallel
  ranks, child pytest sessions, in-process runs);
* :mod:`~simacc.harness.judging`: what a property judges with (the ``Property`` record and
  ``claim()``, the assertion helpers, the distribution tests);
* :mod:`~simacc.harness.plugin`: the pytest plugin.

Every room may import :mod:`simacc.contract`; none imports the properties, the strategies,
the commands or the zoo.
"""
