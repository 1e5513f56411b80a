"""simacc's DSpark layouts (CONTRACT.md §19, §21) called through sglang 0.5.23's serving code: the
step's length as ``TargetVerifyExecutor.begin_simulated_step`` draws it, and the accept by the
separate ops the fused tail stands for (``dspark_verify.py``), for ``simacc check
simacc.contract.dspark_serving_glue:NAME`` (and ``simacc engines``).

Unlike :mod:`simacc.contract.dspark_glue` this module imports sglang's serving modules when it
is imported, so that a check where they do not import says so before anything runs: they need
sglang's serving dependencies (docs/engines.md).
"""

from types import SimpleNamespace

import torch
from sglang.kernels.ops.speculative.dflash import compute_dflash_correct_drafts_and_bonus
from sglang.kernels.ops.speculative.dspark.simulated_bonus import simulated_bonus_select_partials
from sglang.srt.speculative.dspark_components import dspark_verify
from sglang.srt.speculative.spec_tp_sync import SpecTpSync, SpecTpSyncSite

_ONE_RANK = SpecTpSync(SimpleNamespace(world_size=1, rank_in_group=0))  # no broadcast: nothing to send to


def begin_simulated_step(*, simulated_correct_len, simulate_acc_len, gamma):
    """``TargetVerifyExecutor.begin_simulated_step`` on an executor holding this buffer, length
    and ``gamma``; the method is the one ``spec_utils`` read at import (§19.1)."""
    executor = SimpleNamespace(_simulated_correct_len=simulated_correct_len, _simulate_acc_len=float(simulate_acc_len),
                               gamma=int(gamma))
    dspark_verify.TargetVerifyExecutor.begin_simulated_step(executor)


def eager_accept(*, candidates, target_predict, seq_lens, verify_lens, gate, correct_len_out, bonus_out,
                 cap_trim_lens_out, commit_lens_out, new_seq_lens_out, out_tokens_out, simulated_correct_len=None,
                 bonus_in=None, bonus_parts=None, gated_commit_lens_out=None):
    """The static epilogue's accept without the fused tail (``_accept_static_greedy``, §21.4): the
    greedy accept of ``AcceptGreedy`` (given the target's argmax ids, the step after its argmax),
    the fold's bonus in place of its own where one is supplied, ``build_accept_outs`` into the
    buffers' first ``bs`` rows with the simulated length, then the commits gated."""
    bs, width = candidates.shape
    target = target_predict.reshape(bs, width) if target_predict is not None else candidates.new_zeros((bs, width))
    correct_len, bonus = compute_dflash_correct_drafts_and_bonus(candidates=candidates, target_predict=target)
    if bonus_parts is not None:
        part_val, part_idx, vocab = bonus_parts
        bonus = simulated_bonus_select_partials(part_val=part_val[:bs], part_idx=part_idx[:bs], vocab=vocab)
    elif bonus_in is not None:
        bonus = bonus_in[:bs].to(bonus.dtype)
    out = dspark_verify.AcceptOuts(correct_len=correct_len_out[:bs], bonus=bonus_out[:bs],
                                   cap_trim_lens=cap_trim_lens_out[:bs], commit_lens=commit_lens_out[:bs],
                                   new_seq_lens=new_seq_lens_out[:bs], out_tokens=out_tokens_out[:bs])
    accept = dspark_verify.build_accept_outs(
        correct_len=correct_len, bonus=bonus, cap_trim_lens=torch.zeros_like(correct_len), prefix_lens=seq_lens[:bs],
        draft_tokens=candidates[:, 1:].contiguous(), gamma=width - 1, verify_num_draft_tokens=width, tp_sync=_ONE_RANK,
        sync_site=SpecTpSyncSite.DSPARK_ACCEPT_GRAPH, simulated_correct_len=simulated_correct_len, out=out)
    if gated_commit_lens_out is not None:
        gated_commit_lens_out[:bs] = torch.minimum(accept.commit_lens, verify_lens[:bs].to(torch.int32)) * gate
