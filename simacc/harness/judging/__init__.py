"""What a property judges with: the ``Property`` record and ``claim()`` (``catalogue``), the
comparisons every property goes through (``assertions``), and the distribution tests of the
statistical properties (``distributions``).

May import every room above it but the plugin."""
