"""Codecs generated from ``pykraft/migration/schemas`` (``python -m pykraft.schema.generate``). Do not edit."""

from __future__ import annotations

from typing import Any, Final

from pykraft.migration.rpc.leader_and_isr_request import LeaderAndIsrRequest
from pykraft.migration.rpc.leader_and_isr_response import LeaderAndIsrResponse
from pykraft.migration.rpc.stop_replica_request import StopReplicaRequest
from pykraft.migration.rpc.stop_replica_response import StopReplicaResponse
from pykraft.migration.rpc.update_metadata_request import UpdateMetadataRequest
from pykraft.migration.rpc.update_metadata_response import UpdateMetadataResponse

__all__ = ['LeaderAndIsrRequest', 'LeaderAndIsrResponse', 'StopReplicaRequest', 'StopReplicaResponse', 'UpdateMetadataRequest', 'UpdateMetadataResponse']
