"""kio's Kafka messages <-> the core's typed values (``raft.messages``): one module per API
(or per pair of APIs that share a shape), each offering a :class:`Converters` for the table
in :mod:`pykraft.net.apis`, which says which module serves which API key.

========================  ===========================================================
module                    APIs
========================  ===========================================================
``vote``                  Vote
``quorum_epoch``          BeginQuorumEpoch, EndQuorumEpoch
``fetch``                 Fetch
``fetch_snapshot``        FetchSnapshot
``voters``                AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter
``describe_quorum``       DescribeQuorum
``features``              UpdateFeatures (kraft.version), the ApiVersions probe
``reassign``              AlterPartitionReassignments, ListPartitionReassignments
``registration``          ControllerRegistration
``_common``               what they share: names, errors, single-partition helpers
========================  ===========================================================

Each module's docstring has its versions' defaults for the fields older versions lack.
"""

from pykraft.net.convert._common import (
    KRAFT_VERSION_FEATURE,
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    Converters,
    InvalidResponse,
    RejectedRequest,
    VersionTooOld,
)

__all__ = [
    "KRAFT_VERSION_FEATURE",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "Converters",
    "InvalidResponse",
    "RejectedRequest",
    "VersionTooOld",
]
