"""The case model and its file format: one frozen case type per layout (``cases``), a stateful
property's program of steps (``programs``), repro files and their validation
(``repro_files``), writing them and the replay command a failure prints (``recording``), and
what a failure message says of its case (``explain``).

May import :mod:`simacc.harness.config` and :mod:`simacc.harness.processes`."""
