"""Root pytest wiring: everything lives in the ``simacc.harness.plugin`` pytest plugin, so that
``simacc check`` gets the same fixtures, options and profiles from an installed package."""

pytest_plugins = ("simacc.harness.plugin",)
