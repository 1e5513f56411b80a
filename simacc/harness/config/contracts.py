"""The type of a contract's record, in the manner of PyTorch's OpInfo: what identifies the
contract in a signature, how each call style orders the arguments, which arguments a call may
leave out, its reference, its case type, its strategy and its variants. Loading an
implementation, the call styles, the cases, the benchmarks and repro files all read these
records (CONTRACT.md §4, §6-§10).

The records themselves live with their case types and strategies, one module per contract
family, and are listed once in ``simacc.strategies.CONTRACTS`` (the rooms above the harness):
the harness knows no contract by name and is handed the list where it needs every contract
(ARCHITECTURE.md, "Where to add").
"""

from dataclasses import dataclass, field

LEVELS = ("exact", "semantic")
# who keeps a draft its grammar refuses from being accepted in vLLM's samplers (CONTRACT.md §15.4): the sampler
# (vLLM 0.34 on: its runner passes the draft on) or the runner (vLLM 0.33: -1 from it on, before the sampler)
REFUSED_DRAFTS = ("sampler", "runner")
METHOD, MODE = "simulate_acc_method", "simulate_acc_token_mode"

# the variables an sglang server that simulates acceptance has set when it imports the function (CONTRACT.md §5.4)
SGLANG_SIMULATION = ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE")


@dataclass(frozen=True)
class Contract:
    """One contract, holding the objects it describes.

    ``params`` are the keyword names whose presence in a signature identifies it (called
    in ``keyword_style``). ``orders`` maps each positional call style to its argument order;
    a signature whose leading parameters follow one (``aliases`` allowed) is called in that
    style. ``omissions`` maps each style to the sets of
    arguments a call in that style may leave out so that their defaults apply: any
    defaulted keyword, positionally only a trailing run. ``level`` forces a conformance
    level (a port in another array library draws ``L`` its own way). Its cases come in
    ``variants``, the values of an axis its own word names (``variant``: sglang's "token mode",
    vLLM's "knobs given" or "requests", DSpark's "method" or "bonus source"), which a case says
    as its ``variant``. ``reference`` is its
    reference function, ``case`` its case type, ``strategy`` the strategy that draws its cases
    for a property every contract shares, given the attributes ``takes`` names of the
    implementation under test (its token modes, its fixed id) as keywords.
    """

    name: str
    params: tuple
    reference: object
    case: type
    strategy: object
    variant: str  # what its variants are, in the words of a message ("token mode", "requests")
    variants: tuple
    takes: tuple = ()
    keyword_style: str | None = "keywords"  # None: recognised by position only
    aliases: dict = field(default_factory=dict)  # other names a parameter had in older releases
    orders: dict = field(default_factory=dict)
    omissions: dict = field(default_factory=dict)
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

    def __hash__(self):  # its dicts make the generated hash fail; a name is unique within a list
        return hash(self.name)

    @property
    def spec(self):
        """Its reference as an ``IMPL`` string, for loading elsewhere and for replay commands:
        simacc's public name for it where it has one (``simacc:generate_simulated_accept_index``),
        else ``module:qualname``."""
        import simacc  # its public names are the contract's (PEP 562: torch-free until asked)

        name = self.reference.__qualname__
        if getattr(simacc, name, None) is self.reference:
            return f"simacc:{name}"
        return f"{self.reference.__module__}:{name}"

    @property
    def writes_a_fixed_id(self):
        """Whether its implementations have a fixed token mode, and so a fixed id (sglang's)."""
        return "fixed" in self.variants

    @property
    def samples_drafts_against_logits(self):
        """Whether it walks drafts against the target's processed logits, whose -inf entries a
        grammar writes (vLLM's samplers): where ``--refused-drafts`` applies (CONTRACT.md §15.4)."""
        return "target_logits" in self.params and bool({"draft_token_ids", "draft_sampled"} & set(self.params))

    def accepts(self, case):
        """Whether an implementation of this contract can be asked ``case``."""
        return type(case) is self.case and case.variant in self.variants


def fixed_id_text(writes, token_id, source=None):
    """``; fixed token id 100 (default)`` for a header, or nothing where the contract writes no
    fixed id (``writes``: its record's :attr:`~Contract.writes_a_fixed_id`; vLLM's write none); a
    contract not known yet (None: nothing loaded) shows the setting."""
    if writes is False:
        return ""
    return f"; fixed token id {token_id}" + (f" ({source})" if source else "")


def refused_drafts_text(applies, who):
    """``; refused drafts cut by the runner`` for a header of vLLM's samplers checked so (``applies``:
    the record's :attr:`~Contract.samples_drafts_against_logits`), else nothing."""
    if not applies:
        return ""
    who = "cut by the runner" if who == "runner" else "reach the sampler"
    return f"; refused drafts {who} (§15.4)"


def named(records, name):
    """The record called ``name`` among ``records``; ``ValueError`` naming the known ones."""
    for record in records:
        if record.name == name:
            return record
    raise ValueError(f"unknown contract {name!r}; expected one of {', '.join(r.name for r in records)}")
