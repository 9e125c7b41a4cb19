"""The KRaft specifications' next-state relation as a trace checker (issue 49 item 2).

``roles.py`` holds the rules for role transitions, votes and epochs; ``logs.py`` those for
appends, fetches, truncations, snapshots, the high watermark and voter-set changes; ``walk.py``
walks steps through both, one by one (the simulator, as it runs) or from trace files (real
nodes, merged by time). The steps come from ``pykraft.raft.spec_steps``. docs/TLA-PROPERTIES.md
lists every rule.
"""

from pykraft.spec.roles import SpecViolation, Step
from pykraft.spec.walk import SPEC_KINDS, SpecState, check_trace_files, check_trace_lines

__all__ = [
    "SPEC_KINDS",
    "SpecState",
    "SpecViolation",
    "Step",
    "check_trace_files",
    "check_trace_lines",
]
