"""Which prefix of each node's log counts as committed, for the audit and for ``voter_sets``.

Kafka does not persist the high watermark in the log directory, so the files alone cannot say
what was committed. The rule, per node, in order of preference:

1. ``given``: the operator (or the test harness) passes the node's HWM (``--hwm node=offset``),
   e.g. from ``metadata-quorum describe --replication`` or the simulator. This is the only
   input under which the audit is a proof.
2. ``majority``: the highest offset that a majority of the voters' logs reach, i.e. the
   leader's own HWM rule (SPEC B7) applied to the log end offsets found on disk, capped at
   the node's log end offset and raised to its latest snapshot's end offset (a snapshot is
   only ever taken at a committed offset). The voter count is that of the latest voter set
   in the logs (VotersRecord, else LeaderChange), or the number of nodes ingested. This is an
   *estimate*: a batch of an older epoch can reach a majority and still be truncated by a
   later leader (Raft's "figure 8"), so a divergence found under this rule just past the true
   HWM can be a false alarm. It cannot miss a divergence below the true HWM.
3. ``snapshot``: fewer nodes than a majority were ingested; only the latest snapshot's end
   offset is known to be committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GIVEN = "given"
MAJORITY = "majority"
SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class NodeLog:
    """What one node's files say about its log."""

    node: int
    log_start_offset: int  # first offset held in segments (or the latest snapshot's end)
    log_end_offset: int  # end of the CRC-valid batches in segments
    snapshot_end_offset: int  # latest snapshot's end offset, 0 when none


@dataclass(frozen=True, slots=True)
class CommittedPrefix:
    node: int
    log_start_offset: int
    log_end_offset: int
    committed_offset: int  # offsets below this are taken as committed
    source: str  # GIVEN, MAJORITY or SNAPSHOT


def committed_prefixes(
    logs: Sequence[NodeLog], voter_count: int | None, hwm: Mapping[int, int]
) -> list[CommittedPrefix]:
    """The committed prefix of every node in ``logs`` (see the module docstring)."""
    count = voter_count if voter_count and voter_count > 0 else len(logs)
    majority = count // 2 + 1
    ends = sorted((log.log_end_offset for log in logs), reverse=True)
    majority_end = ends[majority - 1] if len(ends) >= majority else None
    out = []
    for log in sorted(logs, key=lambda log: log.node):
        if log.node in hwm:
            bound, source = hwm[log.node], GIVEN
        elif majority_end is not None:
            bound = max(min(majority_end, log.log_end_offset), log.snapshot_end_offset)
            source = MAJORITY
        else:
            bound, source = log.snapshot_end_offset, SNAPSHOT
        out.append(
            CommittedPrefix(log.node, log.log_start_offset, log.log_end_offset, bound, source)
        )
    return out


def parse_node_offsets(pairs: Sequence[str]) -> dict[int, int]:
    """``["1=120", "2=118"]`` (from ``--hwm``) into ``{1: 120, 2: 118}``."""
    out: dict[int, int] = {}
    for pair in pairs:
        node, sep, offset = pair.partition("=")
        try:
            if not sep:
                raise ValueError
            out[int(node)] = int(offset)
        except ValueError:
            raise ValueError(f"expected node=offset, got {pair!r}") from None
    return out
