"""Codecs generated from ``pykraft/protocol/schemas`` (``python -m pykraft.schema.generate``). Do not edit."""

from __future__ import annotations

from typing import Any, Final

from pykraft.protocol.generated.api_versions_request import ApiVersionsRequest
from pykraft.protocol.generated.api_versions_response import ApiVersionsResponse
from pykraft.protocol.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from pykraft.protocol.generated.list_partition_reassignments_response import ListPartitionReassignmentsResponse
from pykraft.protocol.generated.unregister_controller_request import UnregisterControllerRequest
from pykraft.protocol.generated.unregister_controller_response import UnregisterControllerResponse

__all__ = ['ApiVersionsRequest', 'ApiVersionsResponse', 'ListPartitionReassignmentsRequest', 'ListPartitionReassignmentsResponse', 'UnregisterControllerRequest', 'UnregisterControllerResponse']
