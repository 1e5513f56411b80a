"""What the serving-loop properties cost: steps per second and steps per example.

Runs each serving-loop property against its contract's reference (or ``--impl``) in each
grad mode, under a profile (``ci`` by default: what CI runs), and counts the calls the
runner makes. A step is one call of the implementation; an example is one program.

    python benchmarks/serving_loop.py [--profile ci] [--device cpu] [--impl IMPL]
"""

import argparse
import time

from hypothesis import settings

from simacc import properties
from simacc import strategies as sx
from simacc.harness.call import impl
from simacc.harness.call.runner import Runner
from simacc.harness.config import grad_modes, profiles

LOOPS = (("serving_loop_conforms_at_every_step", sx.EAGLE, "exact"),
         ("serving_loop_conforms_at_every_step", sx.EAGLE, "semantic"),
         ("kernel_serving_loop_conforms_at_every_step", sx.KERNEL, "exact"),
         ("dflash_serving_loop_conforms_at_every_step", sx.DFLASH, "exact"),
         ("functional_serving_loop_conforms_at_every_step", sx.FUNCTIONAL, "semantic"))


class Counting(Runner):
    """A runner that counts its calls."""

    calls = 0

    def attempt(self, case, device=None):
        self.calls += 1
        return super().attempt(case, device)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--impl", default=None, help="one implementation instead of each contract's reference")
    args = parser.parse_args(argv)
    chosen = settings(profiles.for_session(args.profile), database=None)
    print(f"{'property':48} {'level':8} {'mode':9} {'s':>6} {'programs':>8} {'steps':>6} {'steps/s':>8} "
          f"{'steps/program':>13}")
    for pid, contract, level in LOOPS:
        loaded = impl.load(args.impl, sx.CONTRACTS, level=level) if args.impl else impl.reference(contract, level)
        prop = properties.find(pid)
        if loaded.record not in prop.contracts or prop.unavailable(args.device):
            continue
        for mode in grad_modes.NAMES:
            with Counting(loaded, args.device, 30, chosen, None, mode) as runner:
                start = time.perf_counter()
                prop.run(runner)
                seconds = time.perf_counter() - start
            programs = runner.examples or 1
            print(f"{pid:48} {level:8} {mode:9} {seconds:6.2f} {programs:8} {runner.calls:6} "
                  f"{runner.calls / seconds:8.0f} {runner.calls / programs:13.1f}")


if __name__ == "__main__":
    main()
