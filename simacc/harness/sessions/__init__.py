"""Running calls and properties elsewhere: tensor-parallel ranks, each a process that imported
the implementation anew (``ranks``), simacc's properties as a pytest session in a child
process and the supervisor of every child of a command (``session``), and ``Property``
records run in this process without pytest, each later grad mode in a fresh one
(``inprocess``).

May import every room above it: :mod:`~simacc.harness.config`,
:mod:`~simacc.harness.processes`, :mod:`~simacc.harness.model`, :mod:`~simacc.harness.call`."""
