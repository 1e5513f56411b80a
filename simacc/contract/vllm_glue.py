"""simacc's vLLM layouts (CONTRACT.md §13-§17) called through vLLM's own code, as each version
ships it: the glue docs/vllm.md gives, for ``simacc check simacc.contract.vllm_glue:NAME`` (and
``simacc engines``).

Each function has the signature of its reference in :mod:`simacc.contract.vllm` or
:mod:`simacc.contract.vllm_v2` and calls vLLM's shipped functions with the arguments vLLM's
model runners build, and does first what the version's runner does before them (§15.4: 0.33
turns the drafts a grammar refuses into placeholders; 0.34 does not). vLLM is imported on the
first call, so this module imports without it. :data:`CALLS` says where each layout's code lies
in each version; ``simacc engines`` reads the same table from a wheel's files without importing
them (:mod:`simacc.commands.engine_api`).
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
    held it, oldest first; ``optional``: what the glue does without it (empty: the layout needs it)."""

    name: str
    modules: tuple
    optional: str = ""


V1_SAMPLER = "vllm.v1.sample.rejection_sampler"  # gone in 0.34.0 with the whole V1 runner
V2_SAMPLER = "vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils"
CALLS = {
    "resolve_synthetic_rates": (Call("SpeculativeConfig._resolve_synthetic_acceptance_rates",
                                     ("vllm.config.speculative",)),),
    "conditional_rates": (Call("unconditional_to_conditional_rates",
                               ("vllm.v1.spec_decode.utils", "vllm.v1.worker.gpu.spec_decode.rejection_sampler")),),
    "v1_synthetic_accept": (Call("_rejection_greedy_sample", (V1_SAMPLER,)),
                            Call("_rejection_random_sample", (V1_SAMPLER,))),
    "v1_synthetic_rejection_sample": (Call("rejection_sample", (V1_SAMPLER,)),
                                      Call("SamplingMetadata", ("vllm.v1.sample.metadata",)),
                                      Call("LogitsProcessors", ("vllm.v1.sample.logits_processor",))),
    "v2_synthetic_rejection_sample": (
        Call("rejection_sample", (V2_SAMPLER,)),
        Call("grammar_invalid_drafts", ("vllm.v1.worker.gpu.structured_outputs",),
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


def unavailable():
    """Why vLLM's synthetic paths cannot run here (one line), or None (docs/vllm.md says how)."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not importable (docs/vllm.md: the wheel's vllm/ and its dist-info on PYTHONPATH)"
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "no GPU and TRITON_INTERPRET is not 1: vLLM's Triton kernels cannot run here"
    return None


def _acceptable(target_logits, drafts, rows, owner, index, counts):
    """Each request's count of drafts before the first its grammar refuses (``n_r`` when none
    does): vLLM's ``num_acceptable_drafts``. A refused draft is a token (``>= 0``) whose
    processed logit at ``rows`` (the row that verifies it) is -inf, as a grammar's bitmask
    writes it (§15.4); ``owner`` and ``index`` are each draft's request and place in it."""
    refused = (drafts >= 0) & (target_logits[rows, drafts.clamp(min=0)] == -torch.inf)
    return counts.scatter_reduce(0, owner[refused], index[refused], "amin")


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
    """V1's ``rejection_sample(..., synthetic_mode=True)`` as V1's sampler calls it (§16.2), after
    V1's scheduler: each request's drafts from the first its grammar refuses on are -1 (0.33's
    ``Scheduler.update_draft_token_ids_in_output``: ``validate_tokens``, then -1 padding),
    a refused draft being one whose processed logit is -inf (§15.4)."""
    rejection_sample = find("v1_synthetic_rejection_sample", "rejection_sample")
    counts = list(num_draft_tokens)
    device = target_logits.device
    n = torch.tensor(counts, dtype=torch.int64, device=device)
    owner = torch.repeat_interleave(torch.arange(len(counts), device=device), n)
    index = torch.arange(owner.shape[0], device=device) - (n.cumsum(0) - n)[owner]
    drafts = draft_token_ids.to(torch.int64)
    acceptable = _acceptable(target_logits, drafts, torch.arange(drafts.shape[0], device=device), owner, index, n)
    drafts = drafts.masked_fill(index >= acceptable[owner], -1).to(torch.int32)
    return rejection_sample(
        drafts.contiguous(), counts, max(counts, default=0), _cu(counts, device), None,
        target_logits.to(torch.float32).contiguous(), bonus_token_ids.to(torch.int64).contiguous(),
        _v1_metadata(is_greedy, generators), synthetic_mode=True,
        synthetic_conditional_rates=synthetic_conditional_rates,
    )


def _v2_grammar_step(target_logits, drafts, cu, owner, local):
    """``drafts`` as the version's V2 runner hands them to the sampler (§15.4). 0.33's runner
    makes each request's drafts from the first its grammar refuses on -1
    (``grammar_invalid_drafts``: a draft at local position ``> num_acceptable_drafts``, then
    ``RejectionSampler.__call__``'s ``masked_fill``); 0.34 has no such step. That rule is
    applied here, not by calling vLLM's function, which stages its limits in pinned memory
    that a CPU does not have."""
    if find("v2_synthetic_rejection_sample", "grammar_invalid_drafts") is None:
        return drafts
    counts = cu.diff().to(torch.int64) - 1
    rows = (torch.arange(drafts.shape[0], device=drafts.device) - 1).clamp(min=0)  # draft i verified one place before
    index = local.to(torch.int64) - 1  # entry start of each request (index -1) is no draft
    acceptable = _acceptable(target_logits, torch.where(index >= 0, drafts, -1), rows, owner, index, counts)
    return drafts.masked_fill(local.to(torch.int64) > acceptable[owner], -1)


def v2_synthetic_rejection_sample(*, target_logits, draft_sampled, cu_num_logits, pos, temperature, seed,
                                  num_speculative_steps, synthetic_conditional_rates):
    """V2's ``rejection_sample`` as its model runner calls it (§17), one request state per
    request (``idx_mapping`` the identity) and no draft logits, after the runner's grammar step
    (:func:`_v2_grammar_step`). A version whose sampler takes ``skip_masked_vocab_blocks``
    (0.34) is told whether any logit is masked, as its runner does for a request with a grammar."""
    rejection_sample = find("v2_synthetic_rejection_sample", "rejection_sample")
    device = target_logits.device
    cu = cu_num_logits.to(torch.int32).contiguous()
    sizes = cu.diff().to(torch.int64)
    requests = sizes.shape[0]
    owner = torch.repeat_interleave(torch.arange(requests, device=device), sizes)
    local = (torch.arange(owner.shape[0], device=device) - cu[:-1].to(torch.int64)[owner]).to(torch.int32)
    logits = target_logits.to(torch.float32).contiguous()
    drafts = _v2_grammar_step(logits, draft_sampled.to(torch.int64), cu, owner, local).contiguous()
    masked = {}
    if "skip_masked_vocab_blocks" in inspect.signature(rejection_sample).parameters:
        masked["skip_masked_vocab_blocks"] = bool(torch.isneginf(logits).any())
    return rejection_sample(
        logits, None, drafts, cu, pos.to(torch.int64).contiguous(),
        torch.arange(requests, dtype=torch.int32, device=device), owner.to(torch.int32), local,
        temperature.to(torch.float32).contiguous(), seed.to(torch.int64).contiguous(), num_speculative_steps,
        synthetic_conditional_rates, **masked,
    )
