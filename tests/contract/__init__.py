"""The contract: its references pinned by hand-computed literals, the length sampler, the caller and the strategies."""
