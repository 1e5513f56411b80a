"""What a session is configured with, read by every other room: the type of a contract's record
(``contracts``; the records live with their strategies, ``simacc.strategies``), one ``Settings``
record per session and every option (``settings``), the Hypothesis profiles and example databases
(``profiles``), device names (``devices``), grad modes (``grad_modes``), a test's ``Status`` and its
order of severity (``status``), and the served model's tokenizer (``tokenizer``).

Imports nothing of simacc but :mod:`simacc.contract` (and, for a record's ``spec``, simacc's
public names, which are the contract's); torch-free (a command's own process
reads these without importing torch)."""
