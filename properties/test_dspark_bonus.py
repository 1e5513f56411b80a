"""DSpark's simulated bonus (CONTRACT.md §20.1-§20.3): one token a request from its row at
``correct_len``, the argmax where its temperature is at most 0 and a sample of the tempered
softmax otherwise, fresh at every call, its noise seeded from one ``random.getrandbits(31)`` of
Python's global generator.

The statistical properties build their batches from fixed seeds and judge the empirical law by
the CDF test of :mod:`simacc.harness.judging.statistics` at ``statistics.FALSE_ALARM`` (1e-6) per test, whatever stream the implementation
draws from; their sizes keep the zoo's mistakes (the temperature multiplied, ignored, capped, or one
request's for all; one seed for every call; tied maxima broken by anything but the noise) far
past the bound, since upstream's kernel runs a program a verify row in Triton's interpreter.
"""

import random

import torch

from simacc import strategies as sx
from simacc.harness.judging import statistics
from simacc.harness.judging.assertions import check, check_equal
from simacc.harness.judging.catalogue import claim
from simacc.harness.model.cases import TensorArg
from simacc.properties import support
from simacc.strategies import DsparkBonusCase
from simacc.strategies.dspark import dspark_bonus_server_batches

cases = sx.dspark_bonus_cases()
LAW_LOGITS = (0.0, 1.0, 2.0)
HOT_LOGITS = (0.0, 100.0, 200.0)  # at T = 100 the law of LAW_LOGITS at T = 1; capped at 20, T moves the CDF by 0.33
# requests in turn: softmax near [0.25, 0.33, 0.42], [0.0003, 0.018, 0.98] and [0.09, 0.24, 0.67]
LAW_KINDS = ((LAW_LOGITS, 4.0), (LAW_LOGITS, 0.25), (HOT_LOGITS, 100.0))
LAW_REQUESTS = 600  # 200 a kind: eps = 0.198 at 3.3e-7 each; the mistakes of the zoo move a CDF by 0.25 or more
CALLS = 100  # eps = 0.27; one seed for every call gives one token a hundred times, a CDF off by 0.5
# Two tied maxima (0) a vocabulary block apart, every other token far below (-1000: out of reach of the noise, yet
# -1e8 after the kernel's division by 1e-5, finite in float32; the tie at 0 keeps every Gumbel digit in float32)
TIE_VOCAB = 4097
TIE_TOKENS = (0, 4096)
TIE_TEMPERATURES = (1.0, 1e-6)  # alternating requests; 1e-6 is below the kernel's floor of 1e-5
TIE_REQUESTS = 128  # 64 a temperature: eps = 0.33 at 5e-7 each; breaking the tie by index moves the CDF by 0.5
TINY_HELD = 1e-3  # a request at 0 < T <= this is held to its argmax too: any other token has chance <= V exp(-1/T)


def _tokens(outcome, case):
    got = outcome.returned
    check(isinstance(got, torch.Tensor), "type(result)", type(got).__name__, "Tensor", case)
    return got


def _law_case(logits, temperatures, seed):
    """One verify row a request, the same ``logits`` in each (or, given a list of rows, a row
    each), the row at ``correct_len`` 0."""
    bs = len(temperatures)
    rows = list(logits) if isinstance(logits[0], (list, tuple)) else [logits] * bs
    return DsparkBonusCase(
        target_logits=TensorArg(torch.tensor(rows, dtype=torch.float32)),
        correct_len=TensorArg(torch.zeros(bs, dtype=torch.int64)),
        temperatures=TensorArg(torch.tensor(temperatures, dtype=torch.float32).reshape(bs, 1)),
        bs=bs, rows_per_request=1, seed=seed)


def _softmax(logits, temperature):
    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, 0).tolist()


@claim(sx.DSPARK_BONUS, case=cases)
def test_dspark_bonus_is_one_token_a_request_on_the_logits_device(simacc, case):
    """The result is a (bs,) int64 tensor on the logits' device, each entry a token of the vocabulary (§20.1)."""
    outcome = simacc.run(case)
    got = _tokens(outcome, case)
    device = outcome.args["target_logits"].device
    check(tuple(got.shape) == (case.bs,), "result.shape", tuple(got.shape), (case.bs,), case)
    check(got.dtype == torch.int64, "result.dtype", got.dtype, torch.int64, case)
    check(got.device == device, "result.device", got.device, f"{device} (target_logits' device)", case)
    values = got.cpu()
    check(bool(((values >= 0) & (values < case.vocab)).all()), "result", values.tolist(),
          f"tokens of the vocabulary [0, {case.vocab})", case)


@claim(sx.DSPARK_BONUS, case=cases)
def test_dspark_bonus_inputs_are_never_written(simacc, case):
    """target_logits, correct_len and temperatures are never written (§20.1)."""
    support.check_inputs_untouched(simacc.run(case), case, ("target_logits", "correct_len", "temperatures"))


@claim(sx.DSPARK_BONUS, case=sx.dspark_bonus_cases(modes=("greedy", "mixed")))
def test_dspark_greedy_bonus_is_the_argmax_of_the_simulated_row(simacc, case):
    """A request of temperature <= 0 (or <= 1e-3) gets the argmax of its row r * rows_per_request + correct_len[r] (§20.2)."""
    got = _tokens(simacc.run(case), case).cpu()
    rows = torch.arange(case.bs) * case.rows_per_request + case.correct_len.values
    # integer logits, one maximum a row: at T <= 1e-3 another token has chance <= V exp(-1000), nothing in float64
    temperatures = case.temperatures.values.reshape(-1)
    held = temperatures <= torch.tensor(TINY_HELD, dtype=temperatures.dtype)
    expected = torch.where(held, case.target_logits.values[rows].argmax(dim=1), got)

    def role(index):
        r = index[0]
        why = "greedy" if temperatures[r] <= 0 else f"T = {float(temperatures[r]):.3g} <= {TINY_HELD}, all but surely"
        return (f"request {r}'s bonus, {why}: the argmax of target_logits row {int(rows[r])} = "
                f"{r} * {case.rows_per_request} + correct_len[{r}]")

    check_equal("result", got, expected, case, role=role)


@claim(sx.DSPARK_BONUS)
def test_dspark_bonus_follows_the_tempered_softmax(simacc):
    """Requests of temperatures 4, 1/4 and 100 each draw softmax(x / T) of their logits (§20.2, CDF test at 1e-6)."""
    kinds = [LAW_KINDS[r % len(LAW_KINDS)] for r in range(LAW_REQUESTS)]
    case = _law_case([logits for logits, _ in kinds], [temperature for _, temperature in kinds], seed=20)
    tokens = _tokens(simacc.run(case), case).cpu().tolist()
    for k, (logits, temperature) in enumerate(LAW_KINDS):
        drawn = [t + 1 for t in tokens[k :: len(LAW_KINDS)]]
        support.check_distribution(drawn, _softmax(logits, temperature),
                                   f"1 + the bonus of the {len(drawn)} requests of temperature {temperature} over "
                                   f"logits {list(logits)}", statistics.FALSE_ALARM / len(LAW_KINDS))


@claim(sx.DSPARK_BONUS)
def test_dspark_bonus_splits_tied_maxima_at_any_positive_temperature(simacc):
    """Two tied maxima a vocabulary block apart split evenly at T = 1 and at T = 1e-6 (§20.2, CDF test at 1e-6)."""
    logits = [-1000.0] * TIE_VOCAB
    for token in TIE_TOKENS:
        logits[token] = 0.0
    temperatures = [TIE_TEMPERATURES[r % 2] for r in range(TIE_REQUESTS)]
    case = _law_case(logits, temperatures, seed=21)
    tokens = _tokens(simacc.run(case), case).cpu().tolist()
    for k, temperature in enumerate(TIE_TEMPERATURES):
        law = _softmax(logits, temperature)
        drawn = [TIE_TOKENS.index(t) + 1 if t in TIE_TOKENS else 3 for t in tokens[k::2]]
        support.check_distribution(drawn, [law[TIE_TOKENS[0]], law[TIE_TOKENS[1]], 1 - sum(law[t] for t in TIE_TOKENS)],
                                   f"1 for token {TIE_TOKENS[0]}, 2 for token {TIE_TOKENS[1]} (the tied maxima), 3 for "
                                   f"any other, over the {len(drawn)} requests of temperature {temperature}",
                                   statistics.FALSE_ALARM / 2, value="class")


@claim(sx.DSPARK_BONUS)
def test_dspark_bonus_draws_afresh_at_every_call(simacc):
    """Calls seeded apart draw apart: one request of two equal logits gets each half the time (§20.2, CDF test at 1e-6)."""
    calls = (_law_case((0.0, 0.0), [1.0], seed) for seed in range(CALLS))
    drawn = [int(_tokens(simacc.run(case), case)[0]) + 1 for case in calls]
    support.check_distribution(drawn, [0.5, 0.5], f"1 + the bonus of one request over two equal logits, {CALLS} calls")


@claim(sx.DSPARK_BONUS, levels=("exact",), case=sx.dspark_bonus_cases(split_vocabularies=True))
def test_dspark_bonus_draws_one_seed_from_pythons_generator(simacc, case):
    """A sampling call takes one random.getrandbits(31) of Python's generator (all-greedy: one or none), none of torch's (§20.3)."""
    _check_one_seed(simacc.run(case), case)


@claim(sx.DSPARK_BONUS, levels=("exact",), case=dspark_bonus_server_batches())
def test_dspark_bonus_draws_one_seed_for_a_servers_batch(simacc, case):
    """A batch of 1025 requests over a vocabulary of 4097 still takes one random.getrandbits(31) a call (§20.3)."""
    _check_one_seed(simacc.run(case), case)


def _check_one_seed(outcome, case):
    """The call advanced Python's generator by one getrandbits(31) (all-greedy: one or none), torch's not at all."""
    after = random.getstate()
    stream = random.Random(case.seed)
    seen = [stream.getstate()]
    for _ in range(3):
        stream.getrandbits(31)
        seen.append(stream.getstate())
    said = {0: "unchanged (no draw)", 1: "advanced by one random.getrandbits(31)"}
    got = next((said.get(k, f"advanced by {k} getrandbits(31)") for k, state in enumerate(seen) if state == after),
               "advanced by other draws")
    allowed = seen[:2] if case.requests == "greedy" else seen[1:2]
    check(after in allowed, "Python's generator state after the call", got,
          said[1] + (" or unchanged (every request greedy)" if case.requests == "greedy" else ""), case)
    check(not outcome.draws_consumed, "torch's CPU generator state after the call", "advanced",
          "unchanged (the bonus draws from Python's generator only)", case)
