"""Programs: a serving-loop run as plain data, as a case is one call's (CONTRACT.md §11.2).

A stateful property's machine (:mod:`simacc.properties.serving`) records what it ran: the
knobs it drew once (an engine's configuration: mode, method, length, widths, capacity,
buffers, seed) and its steps in order, each a rule's name and its arguments. Both hold only
JSON scalars: a program prints as a few readable lines, travels in a repro file (schema
``simacc-repro/2``) and replays on any device, the machine rebuilding every tensor from the
knobs and the steps. What the names mean is the machine's business; this module knows
their shape only.
"""

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class Program:
    """The ``machine`` (its class name), its ``knobs`` (``{name: scalar}``) and its ``steps``
    (``((rule, {argument: scalar}), ...)``)."""

    machine: str
    knobs: dict
    steps: tuple

    is_program = True  # what a stateful property replays (Property.applies_to_case)

    @property
    def variant(self):
        """Its value on its contract's axis of variants: the token mode its engine runs in."""
        return self.knobs.get("mode")

    def size_text(self):
        """Its engine's largest batch and width, as a result row shows a case's size."""
        return f"bs={self.knobs.get('capacity', 0)} W={self.knobs.get('width', 0)}"

    def header(self):
        """``Machine(knob=value, ...)``: the engine the program runs."""
        return f"{self.machine}({', '.join(f'{k}={v!r}' for k, v in self.knobs.items())})"

    def lines(self):
        """The program, one numbered step a line, as ``simacc repro`` prints it."""
        width = len(str(len(self.steps)))
        return [self.header()] + [f"  {n:>{width}}  {call(rule, args)}" for n, (rule, args) in enumerate(self.steps, 1)]

    def summary(self):
        counts = ", ".join(f"{rule} x{n}" for rule, n in Counter(rule for rule, _ in self.steps).items())
        return f"{self.header()}: {len(self.steps)} steps ({counts or 'none'})"

    def __repr__(self):
        return self.summary()


def call(rule, args):
    """One step as it reads in a program: ``rule(argument=value, ...)``."""
    return f"{rule}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
