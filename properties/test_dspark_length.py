"""DSpark's step length (CONTRACT.md §19.1, §19.2): the one-element buffer receives ``L - 1``, a
correct-draft count in ``[0, gamma]``, with ``L`` from the sampler of §3 at ``max_len = gamma + 1``
and the method read at import; no ``> 0`` check. At the exact level ``L`` is the documented draw;
at both levels its law over many calls is §9's, judged by the CDF test of :mod:`simacc.harness.judging.statistics` at ``statistics.FALSE_ALARM``
(1e-6) per length.
"""

import torch

from simacc import strategies as sx
from simacc.contract.caller import DEFAULT_METHOD
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg
from simacc.properties import support
from simacc.strategies import DsparkLengthCase

cases = sx.dspark_length_cases()
# (gamma, x): at T = 4 one between two counts, one next to the top (a length that never reaches T shows); at
# T = 17 one past 9 (a length sized for a block of 8 drafts never leaves [1, 9]: the CDF at 9 is 1, not 0)
LAW_POINTS = ((3, 2.5), (3, 3.75), (16, 12.5))
LAW_CALLS = 400  # eps = 0.127 at 3.3e-7 each; a top of gamma instead of gamma + 1 moves the CDF at 3 by 0.75


def _count(outcome, case):
    """The count the buffer holds after the call, checked to be one int64 element on its device."""
    buffer = outcome.args["simulated_correct_len"]
    check(tuple(buffer.shape) == (1,) and buffer.dtype == torch.int64, "simulated_correct_len (shape, dtype)",
          (tuple(buffer.shape), buffer.dtype), ((1,), torch.int64), case)
    return int(buffer[0])


@claim(sx.DSPARK_LENGTH, levels=("exact",), case=cases)
def test_dspark_length_is_the_documented_draw(simacc, case):
    """The buffer holds L - 1, L the documented draw with max_len = gamma + 1, and no other draw was made (§19.2)."""
    outcome = simacc.run(case)
    length = case.expected_length()
    check_equal("simulated_correct_len", outcome.args["simulated_correct_len"].cpu(),
                torch.tensor([length - 1]), case, length,
                lambda index: "the step's correct-draft count, L - 1 (L counts the bonus)")
    support.check_documented_draws(outcome, case)


@claim(sx.DSPARK_LENGTH, case=cases)
def test_dspark_length_is_a_count_of_drafts(simacc, case):
    """The buffer holds one count in [0, gamma]: L - 1 for some L in [1, gamma + 1] (§19.2)."""
    outcome = simacc.run(case)
    count = _count(outcome, case)
    check(0 <= count <= case.gamma, "simulated_correct_len", count,
          f"a count of drafts in [0, gamma = {case.gamma}] (L - 1, not L)", case, "drawn by the implementation")


def _law_case(gamma, x, seed):
    return DsparkLengthCase(simulated_correct_len=TensorArg(torch.tensor([-1])), simulate_acc_len=x, gamma=gamma,
                            simulate_acc_method=DEFAULT_METHOD, seed=seed)


def _probabilities(x, width):
    if DEFAULT_METHOD == "multinomial":
        return support.gaussian_probabilities(x, width)
    return support.match_expected_probabilities(x, width)


@claim(sx.DSPARK_LENGTH)
def test_dspark_length_follows_the_documented_law(simacc):
    """Over many steps L follows §9's law for the method read at import, max_len = gamma + 1 (§19.2, CDF test at 1e-6)."""
    for gamma, x in LAW_POINTS:
        calls = (_law_case(gamma, x, seed) for seed in range(LAW_CALLS))
        lengths = [_count(simacc.run(case), case) + 1 for case in calls]
        support.check_distribution(lengths, _probabilities(x, gamma + 1),
                                   f"L over {LAW_CALLS} steps, x={x}, gamma={gamma}, {DEFAULT_METHOD}",
                                   statistics.FALSE_ALARM / len(LAW_POINTS))
