"""A server's batch (CONTRACT.md §11.3), in every run: 16,391 requests, whole blocks of 256 to
16,384 rows (the largest batch the contract covers) and a tail of seven, whose roots pass 2**15.
The drawn cases reach a server's size rarely (each costs a per-row implementation a tenth of a
second), so a bug that only such a batch shows (a kernel grid that drops its tail block or
launches it at a power of two, slots kept in 16 bits, a workspace reused past 2048 rows, an
index built in chunks of 8192 rows) could pass a short run; these properties build one batch in
each token mode, judge every output of it, then call the next step (L=1) while the index is
held (the DFLASH layout's, with its own oracles, is in ``test_dflash.py``).
"""

import dataclasses

from simacc import strategies as sx
from simacc.harness.judging.catalogue import claim
from simacc.properties import support


@claim(*sx.EAGLE_LAYOUTS, case=support.server_batches_for_impl)
def test_a_servers_batch_is_simulated_like_a_small_one(simacc, case):
    """16,391 requests, roots past 2**15: the index, counts and predict of §4.2-§4.5; the index held through the next call (§4.6, §11.3)."""
    support.check_every_output(simacc, case, "accept_index", "predict", dataclasses.replace(case, simulate_acc_len=1.0))


@claim(sx.KERNEL, case=sx.kernel_server_batches())
def test_kernel_a_servers_batch_is_simulated_like_a_small_one(simacc, case):
    """Kernel op, 16,391 requests, roots past 2**15: the index, counts and predict_tokens of §8.2; the index held through the next call (§11.3)."""
    support.check_every_output(simacc, case, "accept_indices", "predict_tokens",
                               dataclasses.replace(case, num_accept_tokens=1))
