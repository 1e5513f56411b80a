"""Bad arguments (CONTRACT.md §4.0, §3.4).

The implementation must raise before it writes or draws anything. For a length that is not
``> 0`` any exception will do (upstream asserts; the contract does not require a type). An
unknown method must be a ``ValueError`` that names the method, as every upstream path does
(they share the sampler): a caller that catches it to report a bad setting must be able to
rely on it.
"""

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support

CONTRACTS = sx.EAGLE_LAYOUTS


@claim(*CONTRACTS, case=support.eagle_cases_for_impl(acc_lens=sx.bad_acc_lens()))
def test_rejects_nonpositive_or_nan_length_before_writing(simacc, case):
    """A length <= 0 or NaN raises before anything is written or drawn (§4.0)."""
    support.check_rejected_untouched(simacc.attempt(case), case)


@claim(*CONTRACTS, case=support.eagle_cases_for_impl(methods=sx.bad_methods()))
def test_rejects_unknown_method_before_writing(simacc, case):
    """An unknown method raises a ValueError naming it, before anything is written or drawn (§3.4)."""
    support.check_rejected_untouched(simacc.attempt(case), case, naming=case.simulate_acc_method)
