"""The process is left as it was found (CONTRACT.md §11.4): the call runs inside a long-lived
serving process, so importing the implementation and every call must leave torch's global
state (default dtype and device, grad mode, inference mode, the deterministic-algorithms flag,
the thread count), the working directory and the signal handlers as they were.

The runner restores whatever a call (or the import) changed, so the rest of the run never
sees it (:mod:`simacc.harness.call.process_state`); this property is where the change fails the
implementation. A call that raises must leave the process alone too.
"""

from simacc import strategies as sx
from simacc.harness.call import process_state
from simacc.harness.judging.assertions import check
from simacc.harness.judging.catalogue import claim
from simacc.properties import support


@claim(*sx.CONTRACTS, case=support.cases_for_impl)
def test_leaves_the_process_as_it_found_it(simacc, case):
    at_import = "; ".join(simacc.impl.changed_at_import)
    check(not at_import, f"what importing {simacc.impl.spec} changed (restored)", at_import, "nothing", None)
    with process_state.own_threads():  # not a command's worker's share: one thread would hide a call setting one
        changed = "; ".join(simacc.attempt(case).changed)
    check(not changed, "what the call changed in the process (restored)", changed, "nothing", case)
