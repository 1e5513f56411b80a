"""The distribution of ``L`` for the functional contract (CONTRACT.md §9): a port draws with its
own key, so no single ``L`` can be predicted, but over keys from seeds ``0..RUNS-1`` the
lengths must follow the documented distribution for the method, for ``x`` below, inside (a
whole number and a fraction) and above ``[1, W]``.

As in ``test_sampling.py``, the empirical CDF is compared with the documented one through the
Dvoretzky-Kiefer-Wolfowitz-Massart bound at a false-alarm rate of 1e-6 per parametrization:
``eps = sqrt(ln(2 / 1e-6) / (2 * RUNS))``, 0.156 for 300 runs (not 1000 as there: a JAX call
through the bridge costs about a millisecond, and the deviations that matter are larger).
sglang-jax centres its Gaussian on ``x`` clamped to ``[1, W]``, which moves the CDF by 0.31 at
``x = 6.5`` and 0.17 at ``x = 0.4``: rejected. Where the contract allows a single length
(match-expected at a whole clamped ``x``), any other is impossible, so ``EXACT_RUNS`` calls
and an exact check replace the bound: no false alarm at all, and a port wrong one time in
five fails with probability 0.999.
"""

import collections

import pytest
import torch

from simacc import strategies as sx
from simacc.contract import jaxbridge
from simacc.harness.judging.assertions import check
from simacc.harness.judging.catalogue import claim
from simacc.harness.judging.distributions import Distribution
from simacc.harness.model.cases import FunctionalCase, TensorArg
from simacc.properties import support

RUNS = 300
EXACT_RUNS = 30
MAX_LEN = 4
BS = 4  # the strategies' (4, W, W) shape, with W = MAX_LEN: its code is compiled already
MATCH_EXPECTED_LENGTHS = [0.4, 2.0, 2.25, 6.5]
MULTINOMIAL_LENGTHS = [0.4, 2.0, 6.5]


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


def check_lengths(simacc, x, method, probabilities):
    """The lengths of the calls follow ``probabilities`` (``P(L = k)``, ``k = 1..MAX_LEN``)."""
    __tracebackhide__ = True
    only = [k for k, p in enumerate(probabilities, 1) if p == 1.0]
    lengths = sampled_lengths(simacc, x, method, EXACT_RUNS if only else RUNS)
    what = f"{method} L counts (x={x}, max_len={MAX_LEN}, keys from seeds 0..{len(lengths) - 1})"
    if only:
        counts = dict(sorted(collections.Counter(lengths).items()))
        check(counts.keys() == {only[0]}, what, counts, f"{{{only[0]}: {len(lengths)}}}, the only length allowed", None,
              distribution=Distribution.of(lengths, probabilities, 0.0, what))
    else:
        support.check_distribution(lengths, probabilities, what)


@pytest.mark.parametrize("x", MATCH_EXPECTED_LENGTHS)
@claim("functional", needs=jaxbridge.missing)
def test_functional_match_expected_length_has_the_documented_distribution(simacc, x):
    """Functional: match-expected lengths over many keys follow §9.2 (DKW bound)."""
    check_lengths(simacc, x, "match-expected", support.match_expected_probabilities(x, MAX_LEN))


@pytest.mark.parametrize("x", MULTINOMIAL_LENGTHS)
@claim("functional", needs=jaxbridge.missing)
def test_functional_multinomial_length_has_the_documented_distribution(simacc, x):
    """Functional: multinomial lengths over many keys are round(clamp(N(x, 1), 1, W)) (§9.3)."""
    check_lengths(simacc, x, "multinomial", support.gaussian_probabilities(x, MAX_LEN))
