"""simacc's vLLM layouts (CONTRACT.md §13-§17) called through vLLM 0.33.0's own code: the glue
docs/vllm.md gives, for ``simacc check simacc.contract.vllm_glue:NAME`` (and ``simacc engines``).

Each function has the signature of its reference in :mod:`simacc.contract.vllm` or
:mod:`simacc.contract.vllm_v2` and calls vLLM's shipped functions with the arguments vLLM's
model runners build. vLLM is imported on the first call, so this module imports without it.
"""

import importlib.util
import os

import torch


def unavailable():
    """Why vLLM's synthetic paths cannot run here (one line), or None (docs/vllm.md says how)."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not importable (docs/vllm.md: the wheel's vllm/ and its dist-info on PYTHONPATH)"
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "no GPU and TRITON_INTERPRET is not 1: vLLM's Triton kernels cannot run here"
    return None


def resolve_synthetic_rates(*, num_speculative_tokens, synthetic_acceptance_rates=None,
                            synthetic_acceptance_length=None):
    """vLLM's config-time resolution of the two knobs (§13)."""
    from vllm.config.speculative import SpeculativeConfig

    return SpeculativeConfig._resolve_synthetic_acceptance_rates(
        num_speculative_tokens, None if synthetic_acceptance_rates is None else list(synthetic_acceptance_rates),
        synthetic_acceptance_length)


def conditional_rates(*, unconditional_rates, device="cpu"):
    """vLLM's conversion (§14), made into the float32 tensor both samplers build from it (0.34
    moved it into V2's rejection sampler; 0.33 has it in ``vllm.v1.spec_decode.utils``)."""
    try:
        from vllm.v1.worker.gpu.spec_decode.rejection_sampler import unconditional_to_conditional_rates
    except ImportError:
        from vllm.v1.spec_decode.utils import unconditional_to_conditional_rates

    return torch.tensor(unconditional_to_conditional_rates(list(unconditional_rates)), dtype=torch.float32,
                        device=device)


def _cu(counts, device):
    return torch.tensor(counts, dtype=torch.int64).cumsum(0).to(device=device, dtype=torch.int32)


def v1_synthetic_accept(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                        target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """V1's two synthetic kernels with the uniforms and the rejection tokens given (§16.1)."""
    from vllm.v1.sample import rejection_sampler as rs

    counts = list(num_draft_tokens)
    device, width = draft_token_ids.device, max(counts, default=0)
    out = torch.full((len(counts), width + 1), -1, dtype=torch.int32, device=device)
    cu = _cu(counts, device)
    drafts = draft_token_ids.to(torch.int32).contiguous()
    uniforms = uniform_probs.to(torch.float64).contiguous()
    bonus = bonus_token_ids.to(torch.int64).contiguous()
    rs._rejection_greedy_sample(out, cu, drafts, target_argmax.to(torch.int64).contiguous(), bonus, is_greedy, width,
                                uniforms, synthetic_conditional_rates)
    if not bool(is_greedy.all()):
        unused_probs = torch.zeros((drafts.shape[0], 1), dtype=torch.float32, device=device)  # not read in synthetic mode
        rs._rejection_random_sample(out, cu, drafts, None, unused_probs, bonus, recovered_token_ids.to(torch.int32).contiguous(),
                                    uniforms, is_greedy, width, synthetic_conditional_rates)
    return out


def _v1_metadata(is_greedy, generators):
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    rows, device = is_greedy.shape[0], is_greedy.device
    zeros = torch.zeros(rows, dtype=torch.float32, device=device)
    return SamplingMetadata(
        temperature=torch.where(is_greedy, 0.0, 1.0).to(torch.float32),  # 0: vLLM's GREEDY_TEMPERATURE
        all_greedy=bool(is_greedy.all()), all_random=bool((~is_greedy).all()), top_p=None, top_k=None,
        generators=generators, max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=zeros, presence_penalties=zeros, repetition_penalties=zeros + 1,
        output_token_ids=[[] for _ in range(rows)], allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=LogitsProcessors(),
    )


def v1_synthetic_rejection_sample(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                                  generators, synthetic_conditional_rates):
    """V1's ``rejection_sample(..., synthetic_mode=True)`` as V1's sampler calls it (§16.2)."""
    from vllm.v1.sample.rejection_sampler import rejection_sample

    counts = list(num_draft_tokens)
    device = target_logits.device
    return rejection_sample(
        draft_token_ids.to(torch.int32).contiguous(), counts, max(counts, default=0), _cu(counts, device), None,
        target_logits.to(torch.float32).contiguous(), bonus_token_ids.to(torch.int64).contiguous(),
        _v1_metadata(is_greedy, generators), synthetic_mode=True,
        synthetic_conditional_rates=synthetic_conditional_rates,
    )


def v2_synthetic_rejection_sample(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                  num_speculative_steps, synthetic_conditional_rates):
    """V2's ``rejection_sample`` as its model runner calls it (§17), one request state per
    request (``idx_mapping`` the identity) and no draft logits."""
    from vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils import rejection_sample

    device = target_logits.device
    cu = cu_num_logits.to(torch.int32).contiguous()
    sizes = cu.diff().to(torch.int64)
    requests = sizes.shape[0]
    owner = torch.repeat_interleave(torch.arange(requests, device=device), sizes)
    local = torch.arange(owner.shape[0], device=device) - cu[:-1].to(torch.int64)[owner]
    return rejection_sample(
        target_logits.to(torch.float32).contiguous(), None, draft_sampled.to(torch.int64).contiguous(), cu,
        pos.to(torch.int64).contiguous(), torch.arange(requests, dtype=torch.int32, device=device),
        owner.to(torch.int32), local.to(torch.int32), temperature.to(torch.float32).contiguous(),
        seed.to(torch.int64).contiguous(), num_speculative_steps, synthetic_conditional_rates,
    )
