"""simacc's self-tests, by role (as Hypothesis keeps ``cover/``, ``nocover/`` and ``quality/``):
``contract/`` the references, the length sampler, the caller and the strategies against
CONTRACT.md; ``harness/`` what runs a check (loading and calling an implementation, processes,
judging and its statistics, messages, the plugin, the hostile zoo); ``commands/`` each command as
a user runs it; ``meta/`` the catalogue against the zoo, the code's structure and the documents.
Each folder keeps its own helpers; ``conftest.py`` and ``offered.py`` serve all four. A package,
so that helpers import as ``tests.ROLE.NAME`` whichever file pytest collects first."""
