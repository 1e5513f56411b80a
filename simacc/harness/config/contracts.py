"""The contracts an implementation can follow, one record each, in the manner of PyTorch's
OpInfo: what identifies the contract in a signature, how each call style orders the
arguments, which arguments a call may leave out, its reference, its case type and its token
modes. Loading an implementation, the call styles, the cases, the benchmarks and repro files
all read these records (CONTRACT.md §4, §6-§10).

Adding a contract: a record here, its reference in :mod:`simacc.contract`, a case type in
:mod:`simacc.harness.model.cases`, a strategy registered in ``simacc.strategies.BY_CONTRACT``, a
property module and zoo entries (ARCHITECTURE.md, "Where to add").
"""

from dataclasses import dataclass, field

TOKEN_MODES = ("fixed", "real-draft-token")
VLLM_KNOBS = ("rates", "length", "both", "neither")  # the synthetic knobs a vLLM settings case gives
VLLM_REQUESTS = ("greedy", "random", "mixed")  # which requests of a vLLM batch (or a DSpark bonus's) sample
LEVELS = ("exact", "semantic")
# who keeps a draft its grammar refuses from being accepted in vLLM's samplers (CONTRACT.md §15.4): the sampler
# (vLLM 0.34 on: its runner passes the draft on) or the runner (vLLM 0.33: -1 from it on, before the sampler)
REFUSED_DRAFTS = ("sampler", "runner")
METHOD, MODE = "simulate_acc_method", "simulate_acc_token_mode"

EAGLE_PARAMS = ("accept_index", "predict", "num_correct_drafts", "candidates", "target_predict", "bs", "spec_steps",
                "simulate_acc_len", METHOD, MODE)
LEGACY_ORDER = ("accept_index", "predict", "num_correct_drafts", "bs", "spec_steps", "simulate_acc_len", METHOD)
OLDEST_ORDER = ("accept_index", "predict", "num_correct_drafts", "simulate_acc_len", "bs", "spec_steps")
# what the third parameter of the legacy function was called over the releases (CONTRACT.md §6)
LEGACY_THIRD = ("accept_length", "num_accepted_drafts", "num_correct_drafts")
METHODS = ("multinomial", "match-expected")  # a DSpark length case's mode: the method read at import (§19)
DSPARK_ACCEPT_PARAMS = ("candidates", "target_predict", "seq_lens", "verify_lens", "gate", "correct_len_out",
                        "bonus_out", "cap_trim_lens_out", "commit_lens_out", "new_seq_lens_out", "out_tokens_out")
DSPARK_BONUSES = ("target", "bonus_in", "bonus_parts")  # where a DSpark accept case's bonus comes from (§21.2)
# the variables an sglang server that simulates acceptance has set when it imports the function (CONTRACT.md §5.4)
SGLANG_SIMULATION = ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE")


@dataclass(frozen=True)
class Contract:
    """One contract.

    ``params`` are the keyword names whose presence in a signature identifies it (called
    in ``keyword_style``). ``orders`` maps each positional call style to its argument order;
    a signature whose leading parameters follow one (``aliases`` allowed) is called in that
    style. ``omissions`` maps each style to the sets of
    arguments a call in that style may leave out so that their defaults apply: any
    defaulted keyword, positionally only a trailing run. ``level`` forces a conformance
    level (a port in another array library draws ``L`` its own way).
    """

    name: str
    params: tuple
    reference: str
    case_name: str  # the name of its case type in simacc.harness.model.cases (a room above this one)
    keyword_style: str | None = "keywords"  # None: recognised by position only
    aliases: dict = field(default_factory=dict)  # other names a parameter had in older releases
    orders: dict = field(default_factory=dict)
    omissions: dict = field(default_factory=dict)
    modes: tuple = TOKEN_MODES  # the modes its cases come in: sglang's token modes, vLLM's knobs or requests
    level: str | None = None
    # where its random draws come from, all of it state the caller controls (CONTRACT.md §11.7):
    # "torch" (torch's default generator: the CPU's, and a CUDA device's own for a call there) and
    # "random" (Python's global generator), which the runner seeds from the case before each call,
    # or "inputs" (a key or seeds among its arguments); empty for a layout that is handed its
    # randomness (the kernel op's L, the decision's uniforms) or draws none
    draws: tuple = ("torch",)
    # the variables of its engine's simulated acceptance, set in the process that imports it (sglang's;
    # vLLM's knobs are its config's, none of them in its environment: vllm 0.33, vllm/envs.py)
    server_env: tuple = SGLANG_SIMULATION

    @property
    def writes_a_fixed_id(self):
        """Whether its implementations have a fixed token mode, and so a fixed id (sglang's)."""
        return "fixed" in self.modes

    @property
    def samples_drafts_against_logits(self):
        """Whether it walks drafts against the target's processed logits, whose -inf entries a
        grammar writes (vLLM's samplers): where ``--refused-drafts`` applies (CONTRACT.md §15.4)."""
        return "target_logits" in self.params and bool({"draft_token_ids", "draft_sampled"} & set(self.params))

    def accepts(self, case):
        """Whether an implementation of this contract can be asked ``case``."""
        return type(case).__name__ == self.case_name and case.mode in self.modes


CONTRACTS = {
    c.name: c
    for c in (
        Contract(
            "eagle", EAGLE_PARAMS, "simacc:generate_simulated_accept_index", "EagleCase",
            orders={"positional": EAGLE_PARAMS},
            omissions={"keywords": ((METHOD,), (MODE,), (METHOD, MODE)), "positional": ((MODE,), (METHOD, MODE))},
        ),
        Contract(
            "legacy", LEGACY_ORDER, "simacc:legacy_generate_simulated_accept_index", "EagleCase",
            keyword_style=None, orders={"legacy": LEGACY_ORDER, "oldest": OLDEST_ORDER},
            aliases={"num_correct_drafts": LEGACY_THIRD}, omissions={"legacy": ((METHOD,),)}, modes=("fixed",),
        ),
        Contract(
            "dflash",
            ("candidates", "target_predict", "accept_len", "commit_lens", "bonus", "out_tokens", "simulate_acc_len",
             METHOD, MODE),
            "simacc:apply_dflash_simulated_acceptance", "DflashCase",
            omissions={"keywords": (("next_token_logits",),)},
        ),
        Contract(
            "kernel",
            ("accept_indices", "predict_tokens", "num_correct_drafts", "candidate_tokens", "target_tokens", "width",
             "num_accept_tokens", "real_tokens"),
            "simacc:simulated_accept", "KernelCase", draws=(),
        ),
        Contract(
            "functional",
            ("accept_index", "predict", "candidates", "target_predict", "valid_mask", "spec_steps", "simulate_acc_len",
             METHOD, MODE, "fixed_token_id", "rng"),
            "simacc.contract.functional:simulated_acceptance", "FunctionalCase",
            keyword_style="jax", level="semantic", draws=("inputs",),
        ),
        # vLLM's synthetic acceptance (CONTRACT.md Part II): keyword-only layouts, their cases'
        # modes being the knobs given or which requests sample
        Contract(
            "vllm_settings", ("num_speculative_tokens", "synthetic_acceptance_rates", "synthetic_acceptance_length"),
            "simacc:resolve_synthetic_rates", "SettingsCase", modes=VLLM_KNOBS, draws=(),
            server_env=(),
        ),
        Contract("vllm_conversion", ("unconditional_rates", "device"), "simacc:conditional_rates", "ConversionCase",
                 modes=("rates",), draws=(), server_env=()),
        Contract(
            "vllm_decision",
            ("draft_token_ids", "num_draft_tokens", "uniform_probs", "synthetic_conditional_rates", "target_argmax",
             "recovered_token_ids", "bonus_token_ids", "is_greedy"),
            "simacc:synthetic_accept", "DecisionCase", modes=VLLM_REQUESTS, draws=(), server_env=(),
        ),
        Contract(
            "vllm_v1",
            ("draft_token_ids", "num_draft_tokens", "target_logits", "bonus_token_ids", "is_greedy", "generators",
             "synthetic_conditional_rates"),
            "simacc:synthetic_rejection_sample", "V1Case", modes=VLLM_REQUESTS, server_env=(),
        ),
        Contract(
            "vllm_v2",
            ("target_logits", "draft_sampled", "cu_num_logits", "pos", "temperature", "seed", "num_speculative_steps",
             "synthetic_conditional_rates"),
            "simacc:synthetic_rejection_sample_v2", "V2Case", modes=VLLM_REQUESTS, level="semantic",
            draws=("inputs",), server_env=(),
        ),
        # sglang's DSpark (CONTRACT.md Part III): the step's length, the simulated bonus (drawn from Python's
        # global generator) and the accept under a simulated length; no fixed mode, so no fixed id
        Contract(
            "dspark_length", ("simulated_correct_len", "simulate_acc_len", "gamma"),
            "simacc.contract.dspark:begin_simulated_step", "DsparkLengthCase", modes=METHODS,
        ),
        Contract(
            "dspark_bonus", ("target_logits", "correct_len", "temperatures", "bs", "rows_per_request"),
            "simacc.contract.dspark:simulated_bonus_sample", "DsparkBonusCase", modes=VLLM_REQUESTS,
            draws=("random",),
        ),
        Contract(
            "dspark_accept", DSPARK_ACCEPT_PARAMS, "simacc.contract.dspark:static_accept_tail", "DsparkAcceptCase",
            modes=DSPARK_BONUSES, draws=(),
        ),
    )
}
NAMES = tuple(CONTRACTS)


def fixed_id_text(contract, token_id, source=None):
    """``; fixed token id 100 (default)`` for a header, or nothing for a contract without a
    fixed mode (vLLM's); a contract not known yet (None: nothing loaded) shows the setting."""
    if contract is not None and not get(contract).writes_a_fixed_id:
        return ""
    return f"; fixed token id {token_id}" + (f" ({source})" if source else "")


def refused_drafts_text(contract, who):
    """``; refused drafts cut by the runner`` for a header of vLLM's samplers checked so, else nothing."""
    if contract is None or not get(contract).samples_drafts_against_logits:
        return ""
    who = "cut by the runner" if who == "runner" else "reach the sampler"
    return f"; refused drafts {who} (§15.4)"


def get(name):
    """The record of contract ``name``; ``ValueError`` naming the known ones."""
    try:
        return CONTRACTS[name]
    except KeyError:
        raise ValueError(f"unknown contract {name!r}; expected one of {', '.join(NAMES)}") from None
