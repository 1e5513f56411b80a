"""pytest wiring of simacc's own repository: the plugin (a pytest11 entry point wherever
simacc is installed; here by name, since ``addopts`` turns plugin autoloading off), and in
``pyproject.toml`` the ``simacc_impl = references`` that makes every property run against its
own contract's reference. Elsewhere a run without ``--simacc-impl`` is a usage error."""

pytest_plugins = ("simacc.harness.plugin",)
