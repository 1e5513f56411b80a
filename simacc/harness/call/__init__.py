"""The call and its protection: loading an implementation from its ``IMPL`` and inferring its
contract (``impl``), the runner that calls it with a time limit and returns an ``Outcome``
(``runner``), what is restored and checked around each call: the process state
(``process_state``), the harness's own objects and plain tensors (``tamper``, with the
modules the rooms above name as judges in ``judges``), and the bounded output (``capture``).

May import :mod:`~simacc.harness.config`, :mod:`~simacc.harness.processes` and
:mod:`~simacc.harness.model`."""
