"""DescribeQuorum's request as an operator's tool sends it. The answer is built by the core
(``RaftCore.describe_quorum``) and put on the wire by ``pykraft.net.convert_voters``."""

from __future__ import annotations

from kio.static.protocol import RequestPayload

from pykraft.net.convert import METADATA_PARTITION, METADATA_TOPIC

__all__ = ["describe_quorum_request"]


def describe_quorum_request(version: int = 2) -> RequestPayload:
    """DescribeQuorum for ``__cluster_metadata-0`` (what an operator's tool sends), v2 unless
    asked otherwise (the fields are the same in v0-2)."""
    import importlib

    from kio.schema.types import TopicName
    from kio.static.primitive import i32

    dq = importlib.import_module(f"kio.schema.describe_quorum.v{version}.request")
    request: RequestPayload = dq.DescribeQuorumRequest(
        topics=(
            dq.TopicData(
                topic_name=TopicName(METADATA_TOPIC),
                partitions=(dq.PartitionData(partition_index=i32(METADATA_PARTITION)),),
            ),
        )
    )
    return request
