"""pytest hooks that turn a failing property's shrunk case into a repro file (issue #5)."""
