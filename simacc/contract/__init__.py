"""The contract simacc verifies (CONTRACT.md, beside this module): reference implementations of every layout, the
length sampler, the argument checks and what upstream's caller does around the call. Pure
functions of their arguments; nothing here knows about pytest or the harness."""
