"""simacc's pytest plugin: the ``simacc`` pytest11 entry point (``-p simacc.harness.plugin``
where plugin autoloading is off). This module only registers its parts, each a plugin module
of its own (``pytest_plugins``), and says where simacc's property modules lie.

It is inert in a session that collects none of simacc's properties: its options are all
``--simacc-*``, its two fixtures are ``simacc`` (the implementation under test) and
``simacc_context`` (its grad mode), it loads no Hypothesis profile (simacc's profiles reach
simacc's properties only, :mod:`simacc.harness.config.profiles`), and it touches no test but its own.
Importing it, or any of its parts, imports no torch. Where simacc's properties are collected:

* the settings (:mod:`simacc.harness.config.settings`) are resolved once, by the simacc command
  that started the session (``--simacc-settings``) or else on the controller, and handed to
  xdist workers; the implementation is loaded where the properties run (the
  workers, or the one process with ``-n 0``), never on an xdist controller
  (:mod:`~simacc.harness.plugin.fixtures`);
* no implementation selected is an error (before anything is imported where the arguments
  name the properties), never a check of the built-in references, except where the ini
  option ``simacc_impl = references`` asks for them (simacc's own repository);
* simacc's property modules are imported by their package name, ``simacc.properties.<name>``,
  wherever their files lie, and outside the rootdir their node ids name that package, so a
  JUnit report's ``classname`` carries the module path (:mod:`~simacc.harness.plugin.collection`);
* each property is parametrized by device through its fixture, the serving-loop and aliasing
  ones by grad mode too (``name[cpu-inference]``; every other runs in the first mode
  selected, :mod:`simacc.harness.config.grad_modes`); one that does not apply to the
  implementation's contract or level is deselected and counted, never skipped;
* every test's :class:`~simacc.harness.config.status.Status` travels in its report's
  ``user_properties`` (``simacc_status``), with its examples and repro file
  (:mod:`~simacc.harness.plugin.reports`), and, under a simacc command, in the event stream
  (:mod:`simacc.harness.processes.stream`, written by :mod:`~simacc.harness.plugin.events`);
* the session's processes share a few files (:mod:`simacc.harness.processes.watch`): once the
  implementation has hung :data:`~simacc.harness.processes.watch.HANG_BUDGET` times the remaining
  properties are *not run*, a dead worker's report says what killed it (a watchdog kill is a
  hang), and pytest's internal error in a worker ends that worker, a crash xdist survives.
"""

pytest_plugins = ("simacc.harness.plugin.fixtures", "simacc.harness.plugin.collection",
                  "simacc.harness.plugin.reports", "simacc.harness.plugin.events")
