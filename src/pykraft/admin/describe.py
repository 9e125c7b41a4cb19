"""DescribeQuorum's request as an operator's tool sends it. The answer is built by the core
(``RaftCore.describe_quorum``) and put on the wire by ``pykraft.net.convert.describe_quorum``,
which also encodes this request."""

from __future__ import annotations

from kio.static.protocol import RequestPayload

from pykraft.net.convert import describe_quorum
from pykraft.raft.messages import DescribeQuorumRequest

__all__ = ["describe_quorum_request"]


def describe_quorum_request(version: int = 2) -> RequestPayload:
    """DescribeQuorum for ``__cluster_metadata-0`` (what an operator's tool sends), v2 unless
    asked otherwise (the fields are the same in v0-2)."""
    return describe_quorum.request_to_kio(DescribeQuorumRequest(), version)
