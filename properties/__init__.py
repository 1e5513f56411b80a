"""The property catalogue: claims that every conforming implementation must satisfy.

Each ``test_*`` function is one property; its id is the function name without ``test_``.
The implementation under test comes from the ``impl`` fixture of ``simacc.harness.plugin``.
"""
