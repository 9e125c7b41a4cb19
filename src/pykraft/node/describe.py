"""DescribeQuorum (v0-2) answered from the core's observation properties (SPEC D11).

The leader reports itself and every voter and observer it has heard from, with log end
offsets and (v1+) the last fetch and last caught-up times as wall-clock milliseconds, (v2)
directory ids and the voters' endpoints. Any other replica answers NOT_LEADER_OR_FOLLOWER at
partition level with the leader and epoch it knows, as Kafka does.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert import METADATA_PARTITION, METADATA_TOPIC
from pykraft.protocol import ErrorCode, error_response
from pykraft.raft.core import RaftCore
from pykraft.raft.roles import Leader, ReplicaProgress
from pykraft.raft.types import ReplicaKey

__all__ = ["describe_quorum_request", "describe_quorum_response"]

_API_KEY = 55


def _module(version: int) -> Any:
    return importlib.import_module(f"kio.schema.describe_quorum.v{version}.response")


def describe_quorum_response(
    core: RaftCore,
    request: RequestPayload,
    version: int,
    *,
    now_ms: int,
    wall_ms: int,
    voter_endpoints: Mapping[int, tuple[str, int]],
    listener_name: str,
) -> ResponsePayload:
    """The answer to ``request`` (a kio DescribeQuorumRequest at ``version``).

    ``now_ms`` is the core's (monotonic) clock and ``wall_ms`` the wall clock at the same
    instant: replica timestamps are converted from one to the other.
    """
    m: Any = request
    mod = _module(version)
    if len(m.topics) != 1 or len(m.topics[0].partitions) != 1:
        return error_response(_API_KEY, version, ErrorCode.invalid_request)
    topic = m.topics[0]
    index = int(topic.partitions[0].partition_index)
    role = core.state
    fields: dict[str, object] = {
        "partition_index": index,
        "leader_id": core.leader_id,
        "leader_epoch": core.epoch,
        "high_watermark": core.high_watermark,
        "current_voters": (),
        "observers": (),
    }
    if version >= 2:
        fields["error_message"] = None
    if topic.topic_name != METADATA_TOPIC or index != METADATA_PARTITION:
        fields["error_code"] = ErrorCode.unknown_topic_or_partition
    elif not isinstance(role, Leader):
        fields["error_code"] = ErrorCode.not_leader_or_follower
    else:
        fields["error_code"] = ErrorCode.none

        def wall(ts_ms: int) -> int:
            return -1 if ts_ms < 0 else wall_ms - (now_ms - ts_ms)

        def state(key: ReplicaKey, end_offset: int, fetch_ms: int, caught_up_ms: int) -> Any:
            row: dict[str, object] = {"replica_id": key.id, "log_end_offset": end_offset}
            if version >= 1:
                row["last_fetch_timestamp"] = wall(fetch_ms)
                row["last_caught_up_timestamp"] = wall(caught_up_ms)
            if version >= 2:
                row["replica_directory_id"] = key.directory_id
            return mod.ReplicaState(**row)

        def progress(p: ReplicaProgress) -> Any:
            return state(p.key, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms)

        voters = [state(core.local_key, core.log.end_offset, now_ms, now_ms)]
        voters += [progress(p) for _, p in sorted(role.voters.items())]
        fields["current_voters"] = tuple(voters)
        fields["observers"] = tuple(
            progress(p) for _, p in sorted(role.observers.items(), key=lambda kv: kv[0].id)
        )
    partition = mod.PartitionData(**fields)
    top: dict[str, object] = {
        "error_code": ErrorCode.none,
        "topics": (mod.TopicData(topic_name=topic.topic_name, partitions=(partition,)),),
    }
    if version >= 2:
        top["error_message"] = None
        top["nodes"] = tuple(
            mod.Node(
                node_id=node_id,
                listeners=(mod.Listener(name=listener_name, host=host, port=port),),
            )
            for node_id, (host, port) in sorted(voter_endpoints.items())
        )
    response: ResponsePayload = mod.DescribeQuorumResponse(**top)
    return response


def describe_quorum_request() -> RequestPayload:
    """DescribeQuorum v2 for ``__cluster_metadata-0`` (what an operator's tool sends)."""
    import kio.schema.describe_quorum.v2.request as dq
    from kio.schema.types import TopicName
    from kio.static.primitive import i32

    request: RequestPayload = dq.DescribeQuorumRequest(
        topics=(
            dq.TopicData(
                topic_name=TopicName(METADATA_TOPIC),
                partitions=(dq.PartitionData(partition_index=i32(METADATA_PARTITION)),),
            ),
        )
    )
    return request
