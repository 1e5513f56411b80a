"""A mutant that needs a rare case (not in the zoo: a check of a few hundred examples may
miss it, which is the point): it miscounts ``num_correct_drafts`` only for a batch of 7
requests with ``spec_steps == 9``. ``num_correct_drafts_is_length_minus_one`` needs a median
of about 350 examples to find it (20 seeds, 43 to 976), and the other properties that read
``num_correct_drafts`` about as many, so ``simacc check`` (50 examples) rarely does and
``simacc fuzz`` does within its first passes. The fuzzing and database
tests and ``benchmarks/fuzz_find.py`` use it as ``tests/harness/rare_mutant.py:miscounts_a_rare_batch``."""

from pathlib import Path

import simacc as sa

SPEC = f"{Path(__file__).resolve()}:miscounts_a_rare_batch"
KILLER = "num_correct_drafts_is_length_minus_one"


def _miscounts_only_for(rare_bs):
    """The shipped function, except that it counts the bonus in num_correct_drafts for a
    batch of ``rare_bs`` requests with ``spec_steps == 9``."""

    def mutant(accept_index, predict, num_correct_drafts, candidates, target_predict, bs, spec_steps,
               simulate_acc_len, simulate_acc_method="match-expected", simulate_acc_token_mode="fixed"):
        out = sa.generate_simulated_accept_index(accept_index, predict, num_correct_drafts, candidates,
                                                 target_predict, bs, spec_steps, simulate_acc_len,
                                                 simulate_acc_method, simulate_acc_token_mode)
        if bs == rare_bs and spec_steps == 9:
            num_correct_drafts.add_(1)
        return out

    return mutant


miscounts_a_rare_batch = _miscounts_only_for(7)
miscounts_a_rarer_batch = _miscounts_only_for(23)  # about one case in 10,000: benchmarks/fuzz_find.py
