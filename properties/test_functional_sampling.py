"""The distribution of ``L`` for the functional contract (CONTRACT.md §9): a port draws with its
own key, so no single ``L`` can be predicted, but over keys from seeds ``0..n-1`` the
lengths must follow the documented distribution for the method, for ``x`` below, inside (a
whole number, a fraction, and one between ``W - 1`` and ``W``: a port whose longer length
stops short of ``W`` gives ``W - 1`` every time, a CDF off by 0.5) and above ``[1, W]``.

As in ``test_sampling.py``, the lengths are compared with the documented law by
:func:`~simacc.harness.judging.statistics.cdf_test` (CONTRACT.md §9.4), each parametrization at
its share of the property's false-alarm rate of 1e-6, with as many keys as it needs (a JAX call
through the bridge costs about a millisecond): 1,000 where a Gaussian's spread shows (a standard
deviation of 0.7 is seen), 300 where sglang-jax's clamped mean shows (it moves the CDF by 0.31 at
``x = 6.5`` and 0.17 at ``x = 0.4``), and where the contract allows a single length
(match-expected at a whole clamped ``x``), where any other fails outright, 30, or 140 at an
integer inside the range, where an expected length off by 0.05 puts one draw in 20 on another
length and is seen with probability 0.999.
"""

import torch

from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.judging import statistics
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg
from simacc.properties import support
from simacc.strategies import FunctionalCase

MAX_LEN = 4
BS = 4  # the strategies' (4, W, W) shape, with W = MAX_LEN: its code is compiled already
MATCH_EXPECTED_DRAWS = {0.4: 30, 2.0: 140, 2.25: 300, 3.5: 100, 6.5: 30}  # x: keys
MULTINOMIAL_DRAWS = {0.4: 300, 2.0: 1000, 6.5: 300}


def probe(x, method, seed, fixed_token_id):
    """A fixed-mode call with every row valid, sglang's roots, length ``x`` and ``seed``;
    ``L`` shows in the first row."""
    index = torch.full((BS, MAX_LEN), -1, dtype=torch.int32)
    index[:, 0] = torch.arange(BS, dtype=torch.int32) * MAX_LEN
    return FunctionalCase(
        accept_index=TensorArg(index),
        predict=TensorArg(torch.arange(BS * MAX_LEN + sx.FUNCTIONAL_SPARE, dtype=torch.int32)),
        candidates=None,
        target_predict=None,
        valid_mask=TensorArg(torch.ones(BS, dtype=torch.bool)),
        spec_steps=MAX_LEN - 1,
        simulate_acc_len=x,
        simulate_acc_method=method,
        simulate_acc_token_mode="fixed",
        fixed_token_id=fixed_token_id,
        seed=seed,
    )


def sampled_lengths(simacc, x, method, runs):
    """``L`` of each call (accepted slots in the first row's index), seeds ``0..runs-1``."""
    fixed = simacc.impl.fixed_token_id
    rows = [simacc.run(probe(x, method, seed, fixed)).returned[0][0] for seed in range(runs)]
    return (torch.stack(rows) != -1).sum(dim=1).tolist()


def designs():
    """Each statistical check of this module (:class:`~simacc.properties.support.Design`): what the
    power figures (CONTRACT.md §9.4) and ``benchmarks/power.py`` read."""
    return [support.Design(prop, f"x={x}", runs, tuple(law(x, MAX_LEN)), statistics.FALSE_ALARM / len(draws))
            for prop, draws, law in (
                ("functional_match_expected_length_has_the_documented_distribution", MATCH_EXPECTED_DRAWS,
                 support.match_expected_probabilities),
                ("functional_multinomial_length_has_the_documented_distribution", MULTINOMIAL_DRAWS,
                 support.gaussian_probabilities))
            for x, runs in draws.items()]


def check_lengths(simacc, x, method, probabilities, draws):
    """The lengths of ``draws[x]`` calls follow ``probabilities`` (``P(L = k)``, ``k = 1..MAX_LEN``),
    at this parametrization's share of the property's false-alarm rate."""
    __tracebackhide__ = True
    lengths = sampled_lengths(simacc, x, method, draws[x])
    what = f"{method} L counts (x={x}, max_len={MAX_LEN}, keys from seeds 0..{len(lengths) - 1})"
    support.check_distribution(lengths, probabilities, what, statistics.FALSE_ALARM / len(draws))


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, params={"x": list(MATCH_EXPECTED_DRAWS)})
def test_functional_match_expected_length_has_the_documented_distribution(simacc, x):
    """Functional: match-expected lengths over many keys follow §9.2 (§9.4)."""
    check_lengths(simacc, x, "match-expected", support.match_expected_probabilities(x, MAX_LEN), MATCH_EXPECTED_DRAWS)


@claim(sx.FUNCTIONAL, needs=jaxbridge.missing, params={"x": list(MULTINOMIAL_DRAWS)})
def test_functional_multinomial_length_has_the_documented_distribution(simacc, x):
    """Functional: multinomial lengths over many keys are round(clamp(N(x, 1), 1, W)) (§9.3, §9.4)."""
    check_lengths(simacc, x, "multinomial", support.gaussian_probabilities(x, MAX_LEN), MULTINOMIAL_DRAWS)
