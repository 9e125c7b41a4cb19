"""Requests that reach the node's listener and go to the core: which APIs, who sent them
(the source id the core sees), how long the core may take to answer on purpose, and the
answer's wire form."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kio.static.protocol import ResponsePayload

from pykraft.net import apis
from pykraft.net.convert_reassign import (
    REASSIGNMENT_API_VERSIONS,
)
from pykraft.net.convert_voters import (
    FEATURE_APIS,
    KRAFT_VERSION_FEATURE,
)
from pykraft.net.server import Answer
from pykraft.node.cluster import CLUSTER_APIS
from pykraft.protocol import (
    KRAFT_APIS,
    ApiTable,
    DecodedRequest,
    build_api_versions_response,
)
from pykraft.raft.config import RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    DescribeQuorumResponse,
    ReplicaState,
)

INBOUND_ANSWER_GRACE_MS: Final = 5_000  # beyond the request's own wait, then we give up

# Every quorum RPC (KIP-595/630/853/996), plus Metadata and DescribeCluster, which let
# clients find the leader (pykraft.node.cluster), and UpdateFeatures for kraft.version (D10).
SERVED_APIS: Final = KRAFT_APIS.with_apis(*CLUSTER_APIS, *FEATURE_APIS, *REASSIGNMENT_API_VERSIONS)


@dataclass(slots=True)
class PendingAnswer:
    """An inbound request stepped into the core, waiting for the core's response (or for
    ``timer``, which gives up on it)."""

    answer: Answer
    api_key: int
    api_version: int
    listener_name: str
    timer: asyncio.TimerHandle


def api_versions_response(
    api_version: int,
    core: RaftCore | None,
    served: ApiTable = SERVED_APIS,
    features: tuple[Mapping[str, tuple[int, int]], Mapping[str, int], int] | None = None,
) -> ResponsePayload:
    """ApiVersions: the served APIs, the kraft.version range the core supports
    (``RaftConfig.kraft_versions``) and, once running, the finalized kraft.version; with
    ``features`` (the application's supported ranges, finalized levels and their epoch)
    those too, as a Kafka controller lists them."""
    supported = RaftConfig().kraft_versions if core is None else core.config.kraft_versions
    finalized = None if core is None else {KRAFT_VERSION_FEATURE: core.kraft_version}
    epoch = -1
    supported_all: dict[str, tuple[int, int]] = {KRAFT_VERSION_FEATURE: supported}
    if features is not None:
        app_supported, app_finalized, epoch = features
        supported_all.update(app_supported)
        if finalized is not None:
            finalized = {**app_finalized, **finalized}
    return build_api_versions_response(
        api_version,
        served,
        supported_features=supported_all,
        finalized_features=finalized,
        finalized_features_epoch=epoch,
    )


def goes_to_core(api_key: int) -> bool:
    return apis.by_key(api_key) is not None


def decode_for_core(request: DecodedRequest, local_id: int) -> AnyRequest:
    """The core's message for a request ``goes_to_core``; raises ``RejectedRequest``."""
    api = apis.by_key(request.api_key)
    assert api is not None, request.api_key
    body: AnyRequest = api.converters.request_from_kio(request.message, local_id)
    return body


def source_of(body: AnyRequest) -> int:
    """The sender's id as the core sees it (``apis.ADMIN_SOURCE_ID`` for an admin client)."""
    return apis.by_request(body).source(body)


def answer_wait_ms(body: AnyRequest, voter_change_timeout_ms: int) -> int:
    """How long the core may take to answer ``body`` on purpose (then a grace period)."""
    return apis.by_request(body).hold_ms(body, voter_change_timeout_ms)


def encode_answer(body: AnyResponse, pending: PendingAnswer) -> ResponsePayload | None:
    """The wire form of the core's response to ``pending``; None when it has none."""
    api = apis.by_response(body)
    if api is None or not api.served:
        return None
    return api.converters.response_to_kio(body, pending.api_version, pending.listener_name)


def wall_clock(
    response: DescribeQuorumResponse, now_ms: int, wall_ms: int
) -> DescribeQuorumResponse:
    """Replica timestamps from the core's monotonic clock (``now_ms`` now) to wall-clock ms
    (``wall_ms`` now) (D11)."""

    def convert(r: ReplicaState) -> ReplicaState:
        def at(ts: int) -> int:
            return -1 if ts < 0 else wall_ms - (now_ms - ts)

        return dataclasses.replace(
            r,
            last_fetch_timestamp=at(r.last_fetch_timestamp),
            last_caught_up_timestamp=at(r.last_caught_up_timestamp),
        )

    return dataclasses.replace(
        response,
        voters=tuple(convert(r) for r in response.voters),
        observers=tuple(convert(r) for r in response.observers),
    )
