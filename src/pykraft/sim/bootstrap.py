"""How the simulated nodes are addressed and formatted (kraft.version 1, SPEC D3 / D8).

Node ``i`` listens on ``PORT_BASE + i``: the simulator routes a request addressed to a
bootstrap server (a negative destination id with ``Outbound.endpoint``) by that port.
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.raft.control import voter_entries
from pykraft.raft.types import Endpoint, OffsetAndEpoch
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.records import (
    kraft_version_batch,
    snapshot_footer_batch,
    snapshot_header_batch,
    voters_batch,
)
from pykraft.sim.node import SimNode

PORT_BASE = 9000  # node i listens on PORT_BASE + i


def endpoint_of(node_id: int, generation: int = 0) -> Endpoint:
    """Node ``i`` listens on port ``PORT_BASE + i`` (the simulator routes by it); each
    endpoint change (an ``update_voter`` operation) gives it another host name."""
    host = f"node{node_id}" if generation == 0 else f"node{node_id}-g{generation}"
    return Endpoint("CONTROLLER", host, PORT_BASE + node_id)


def format_bootstrap(node: SimNode, voters: VoterSet | None) -> None:
    """``storage format --initial-controllers``: the bootstrap checkpoint ``0-0`` with
    kraft.version 1 and the initial voter set (D3); with ``voters`` None,
    ``--no-initial-controllers`` (a replaced disk: the node joins as an observer)."""
    parts = [snapshot_header_batch(0, 0, 0, -1), kraft_version_batch(1, 0, 0, 1)]
    if voters is not None:
        parts.append(voters_batch(2, 0, 0, voter_entries(voters)))
    parts.append(snapshot_footer_batch(len(parts), 0, 0))
    writer = node.snapshots.create(OffsetAndEpoch(0, 0))
    writer.append(b"".join(parts))
    writer.freeze()


def initial_voters(
    nodes: Sequence[SimNode], kraft_version: int
) -> tuple[VoterSet, tuple[Endpoint, ...]]:
    """The voters every node starts with, by replica key *with* directory id (a wiped disk is
    a new replica), and the bootstrap servers; at kraft.version 1 each node's bootstrap
    checkpoint holds them and every node is a bootstrap server."""
    voter_set = VoterSet(
        {n.id: VoterInfo(n.key, (endpoint_of(n.id),), 0, 1) for n in nodes if n.is_voter_slot}
    )
    if kraft_version != 1:
        return voter_set, ()
    for node in nodes:
        format_bootstrap(node, voter_set)
    return voter_set, tuple(endpoint_of(n.id) for n in nodes)
