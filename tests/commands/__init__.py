"""The commands as a user runs them: check, repro, fuzz, engines, laws, observe, and their output."""
