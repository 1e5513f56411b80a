"""The harness that drives an implementation: loading it (``impl``), the case model, the
runner that calls it safely, devices, the pytest plugin, the property catalogue and its
in-process runs, repro files and the session's selections."""
