"""simacc's vLLM layouts (CONTRACT.md §13-§17) called through vLLM's own code, as each version
ships it: the glue docs/vllm.md gives, for ``simacc check simacc.contract.vllm_glue:NAME`` (and
``simacc engines``).

Each function has the signature of its reference in :mod:`simacc.contract.vllm` or
:mod:`simacc.contract.vllm_v2` and calls vLLM's shipped functions with the arguments vLLM's
model runners build, and nothing more. A version whose runner makes the drafts a grammar
refuses -1 before the sampler (0.33; §15.4) is checked with ``--refused-drafts runner``
(:func:`refused_drafts`), which hands its sampler the drafts so cut, as it hands a port's; the
glue cuts nothing itself, so a draft cut by top-k, top-p, min-p or bad words reaches vLLM's
sampler as it does in vLLM. vLLM is imported on the first call, so this module imports without
it. :data:`CALLS` says where each layout's code lies in each version; ``simacc engines`` reads
the same table from a wheel's files without importing them (:mod:`simacc.commands.serving.engine_api`).
"""

import importlib
import importlib.metadata
import importlib.util
import inspect
import os
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Call:
    """A name the glue calls in vLLM (``Class.method`` for a method) and the modules that have
    held it, oldest first; ``optional``: what the glue does without it (empty: the layout needs it).
    ``cuts``: the runner's step that makes a refused draft -1 before the sampler, which the glue
    does not call: a version that has it is checked with ``--refused-drafts runner`` (§15.4)."""

    name: str
    modules: tuple
    optional: str = ""
    cuts: bool = False


V1_SAMPLER = "vllm.v1.sample.rejection_sampler"  # gone in 0.34.0 with the whole V1 runner
V2_SAMPLER = "vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils"
CALLS = {
    "resolve_synthetic_rates": (Call("SpeculativeConfig._resolve_synthetic_acceptance_rates",
                                     ("vllm.config.speculative",)),),
    "conditional_rates": (Call("unconditional_to_conditional_rates",
                               ("vllm.v1.spec_decode.utils", "vllm.v1.worker.gpu.spec_decode.rejection_sampler")),),
    "v1_synthetic_accept": (Call("_rejection_greedy_sample", (V1_SAMPLER,)),
                            Call("_rejection_random_sample", (V1_SAMPLER,))),
    "v1_synthetic_rejection_sample": (
        Call("rejection_sample", (V1_SAMPLER,)),
        Call("SamplingMetadata", ("vllm.v1.sample.metadata",)),
        Call("LogitsProcessors", ("vllm.v1.sample.logits_processor",)),
        Call("StructuredOutputManager.validate_tokens", ("vllm.v1.structured_output",), cuts=True,
             optional="without it the scheduler keeps a draft its grammar refuses (0.34's trim_spec_tokens)"),
    ),
    "v2_synthetic_rejection_sample": (
        Call("rejection_sample", (V2_SAMPLER,)),
        Call("grammar_invalid_drafts", ("vllm.v1.worker.gpu.structured_outputs",), cuts=True,
             optional="without it the runner passes the drafts a grammar refuses to the sampler as they are"),
    ),
}


class NotInThisVersion(LookupError):
    """A layout whose vLLM code this version does not have (0.34.0 removed V1's)."""


def version():
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return "(no dist-info)"


def find(layout, name):
    """The object ``name`` of ``layout``'s :data:`CALLS` from the first of its modules that has
    it; None for an optional one this version lacks, :class:`NotInThisVersion` for another.
    A module that is missing is a version without it; a module that fails to import for
    another reason (a dependency not installed) raises as it is."""
    call = next(c for c in CALLS[layout] if c.name == name)
    for module in call.modules:
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name and (module == e.name or module.startswith(e.name + ".")):
                continue
            raise
        for part in name.split("."):
            found = getattr(found, part, None)
        if found is not None:
            return found
    if call.optional:
        return None
    said = f"vLLM {version()} has no {name} (looked in {', '.join(call.modules)})"
    raise NotInThisVersion(said + ("; the V1 layouts describe vLLM 0.33 and earlier" if layout.startswith("v1_") else ""))


def refused_drafts(layout):
    """``--refused-drafts`` for ``layout`` in the vLLM on the path: ``runner`` where its runner
    cuts the drafts a grammar refuses before the sampler (a ``cuts`` call of :data:`CALLS`), else
    ``sampler``."""
    return "runner" if any(find(layout, c.name) is not None for c in CALLS[layout] if c.cuts) else "sampler"


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
    resolve = find("resolve_synthetic_rates", "SpeculativeConfig._resolve_synthetic_acceptance_rates")
    return resolve(num_speculative_tokens,
                   None if synthetic_acceptance_rates is None else list(synthetic_acceptance_rates),
                   synthetic_acceptance_length)


def conditional_rates(*, unconditional_rates, device="cpu"):
    """vLLM's conversion (§14), made into the float32 tensor both samplers build from it."""
    convert = find("conditional_rates", "unconditional_to_conditional_rates")
    return torch.tensor(convert(list(unconditional_rates)), dtype=torch.float32, device=device)


def _cu(counts, device):
    return torch.tensor(counts, dtype=torch.int64).cumsum(0).to(device=device, dtype=torch.int32)


def v1_synthetic_accept(*, draft_token_ids, num_draft_tokens, uniform_probs, synthetic_conditional_rates,
                        target_argmax, recovered_token_ids, bonus_token_ids, is_greedy):
    """V1's two synthetic kernels with the uniforms and the rejection tokens given (§16.1)."""
    greedy_sample = find("v1_synthetic_accept", "_rejection_greedy_sample")
    random_sample = find("v1_synthetic_accept", "_rejection_random_sample")
    counts = list(num_draft_tokens)
    device, width = draft_token_ids.device, max(counts, default=0)
    out = torch.full((len(counts), width + 1), -1, dtype=torch.int32, device=device)
    cu = _cu(counts, device)
    drafts = draft_token_ids.to(torch.int32).contiguous()
    uniforms = uniform_probs.to(torch.float64).contiguous()
    bonus = bonus_token_ids.to(torch.int64).contiguous()
    greedy_sample(out, cu, drafts, target_argmax.to(torch.int64).contiguous(), bonus, is_greedy, width, uniforms,
                  synthetic_conditional_rates)
    if not bool(is_greedy.all()):
        unused_probs = torch.zeros((drafts.shape[0], 1), dtype=torch.float32, device=device)  # not read in synthetic mode
        random_sample(out, cu, drafts, None, unused_probs, bonus, recovered_token_ids.to(torch.int32).contiguous(),
                      uniforms, is_greedy, width, synthetic_conditional_rates)
    return out


def _v1_metadata(is_greedy, generators):
    logits_processors = find("v1_synthetic_rejection_sample", "LogitsProcessors")
    sampling_metadata = find("v1_synthetic_rejection_sample", "SamplingMetadata")
    rows, device = is_greedy.shape[0], is_greedy.device
    zeros = torch.zeros(rows, dtype=torch.float32, device=device)
    return sampling_metadata(
        temperature=torch.where(is_greedy, 0.0, 1.0).to(torch.float32),  # 0: vLLM's GREEDY_TEMPERATURE
        all_greedy=bool(is_greedy.all()), all_random=bool((~is_greedy).all()), top_p=None, top_k=None,
        generators=generators, max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=zeros, presence_penalties=zeros, repetition_penalties=zeros + 1,
        output_token_ids=[[] for _ in range(rows)], allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=logits_processors(),
    )


def v1_synthetic_rejection_sample(*, draft_token_ids, num_draft_tokens, target_logits, bonus_token_ids, is_greedy,
                                  generators, synthetic_conditional_rates):
    """V1's ``rejection_sample(..., synthetic_mode=True)`` as V1's sampler calls it (§16.2), the
    drafts as given (0.33's scheduler cut a grammar's refusals before: ``--refused-drafts runner``)."""
    rejection_sample = find("v1_synthetic_rejection_sample", "rejection_sample")
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
    request (``idx_mapping`` the identity) and no draft logits, the drafts as given (0.33's
    runner cut a grammar's refusals before, in ``RejectionSampler.__call__``:
    ``--refused-drafts runner``). A version whose sampler takes ``skip_masked_vocab_blocks``
    (0.34) is told whether any logit is masked, as its runner does for a request with a grammar."""
    rejection_sample = find("v2_synthetic_rejection_sample", "rejection_sample")
    device = target_logits.device
    cu = cu_num_logits.to(torch.int32).contiguous()
    sizes = cu.diff().to(torch.int64)
    requests = sizes.shape[0]
    owner = torch.repeat_interleave(torch.arange(requests, device=device), sizes)
    local = (torch.arange(owner.shape[0], device=device) - cu[:-1].to(torch.int64)[owner]).to(torch.int32)
    logits = target_logits.to(torch.float32).contiguous()
    drafts = draft_sampled.to(torch.int64).contiguous()
    masked = {}
    if "skip_masked_vocab_blocks" in inspect.signature(rejection_sample).parameters:
        masked["skip_masked_vocab_blocks"] = bool(torch.isneginf(logits).any())
    return rejection_sample(
        logits, None, drafts, cu, pos.to(torch.int64).contiguous(),
        torch.arange(requests, dtype=torch.int32, device=device), owner.to(torch.int32), local,
        temperature.to(torch.float32).contiguous(), seed.to(torch.int64).contiguous(), num_speculative_steps,
        synthetic_conditional_rates, **masked,
    )
