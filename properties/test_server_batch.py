"""A server's batch (CONTRACT.md §11.3), in every run: 1025 requests, two blocks of 512 rows
and a tail of one, whose roots pass 2**15. The drawn cases reach a server's size rarely (each
costs a per-row implementation a tenth of a second), so a bug that only such a batch shows (a
kernel grid that drops its tail block, slots kept in 16 bits) could pass a short run; these
properties build one batch in each token mode and judge every output of it (the DFLASH
layout's, with its own oracles, is in ``test_dflash.py``).
"""

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support


@claim("eagle", "legacy", case=support.server_batches_for_impl)
def test_a_servers_batch_is_simulated_like_a_small_one(simacc, case):
    """A batch of 1025 requests, roots past 2**15, gets the index, counts and predict of §4.2-§4.5 (§11.3)."""
    support.check_every_output(simacc, case, "accept_index", "predict")


@claim("kernel", case=sx.kernel_server_batches())
def test_kernel_a_servers_batch_is_simulated_like_a_small_one(simacc, case):
    """Kernel op: a batch of 1025 requests, roots past 2**15, gets the index, counts and predict_tokens of §8.2 (§11.3)."""
    support.check_every_output(simacc, case, "accept_indices", "predict_tokens")
