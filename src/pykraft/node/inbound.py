"""Requests that reach the node's listener, routed by the API table (``net/apis.py``): who
answers, who sent them (the source id the core sees), how long the core may take to answer
on purpose, and the answer's wire form.

Routing (:func:`answer_at_once`, :func:`refusal`, then the core):

1. an API the node answers from its state (``Answerer.NODE``: DescribeQuorum, Metadata,
   DescribeCluster) is answered at once, even during a flush, once the core runs;
2. an embedding application (the metadata controller) gets every other request first;
3. an API the core serves goes to the core, or gets BROKER_NOT_AVAILABLE while the core is
   not running (before start, while stopping); any other API gets UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kio.static.protocol import ResponsePayload

from pykraft.net import apis
from pykraft.net.answer import Answer
from pykraft.net.apis import SERVED_APIS, Answerer
from pykraft.net.convert import KRAFT_VERSION_FEATURE, RejectedRequest, describe_quorum
from pykraft.node.cluster import describe_cluster_response, metadata_response
from pykraft.protocol import (
    ApiKey,
    ApiTable,
    DecodedRequest,
    ErrorCode,
    build_api_versions_response,
    error_response,
)
from pykraft.raft.api import RaftApi
from pykraft.raft.config import RaftConfig
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    DescribeQuorumResponse,
    ReplicaState,
)

if TYPE_CHECKING:
    from pykraft.node.driver import RaftNode

__all__ = [
    "INBOUND_ANSWER_GRACE_MS",
    "SERVED_APIS",
    "PendingAnswer",
    "PendingAnswers",
    "answer_at_once",
    "answer_wait_ms",
    "api_versions_response",
    "decode_for_core",
    "encode_answer",
    "refusal",
    "source_of",
    "wall_clock",
]

log = logging.getLogger("pykraft.node")

INBOUND_ANSWER_GRACE_MS: Final = 5_000  # beyond the request's own wait, then we give up


@dataclass(slots=True)
class PendingAnswer:
    """An inbound request stepped into the core, waiting for the core's response (or for
    ``timer``, which gives up on it)."""

    answer: Answer
    api_key: int
    api_version: int
    listener_name: str
    timer: asyncio.TimerHandle


class PendingAnswers:
    """Requests stepped into the core that await its answer, by the id this driver gave
    them (the core numbers its own requests separately). Invariant: every entry has a live
    timer that answers REQUEST_TIMED_OUT and removes it; an entry leaves exactly once (the
    core's answer, the timer, or its connection closing)."""

    __slots__ = ("_next_id", "_pending")

    def __init__(self) -> None:
        self._pending: dict[int, PendingAnswer] = {}
        self._next_id = 1

    def add(
        self,
        loop: asyncio.AbstractEventLoop,
        request: DecodedRequest,
        listener_name: str,
        body: AnyRequest,
        voter_change_timeout_ms: int,
    ) -> tuple[int, Answer]:
        """Register ``request`` (decoded for the core as ``body``): its id for the core and
        the ``Answer`` the listener waits on."""
        rid = self._next_id
        self._next_id += 1
        wait_ms = INBOUND_ANSWER_GRACE_MS + answer_wait_ms(body, voter_change_timeout_ms)
        timer = loop.call_later(wait_ms / 1000, self._timed_out, rid, type(body), wait_ms)
        pending = PendingAnswer(
            Answer(), request.api_key, request.api_version, listener_name, timer
        )
        pending.answer.on_cancel = lambda: self._forget(rid)  # the connection closed
        self._pending[rid] = pending
        return rid, pending.answer

    def answer(self, rid: int, body: AnyResponse) -> None:
        """Write the core's response to request ``rid``, if its connection still waits."""
        pending = self._pending.pop(rid, None)
        if pending is None or pending.answer.done:
            return  # the connection went away, or the answer timed out
        pending.timer.cancel()
        answer = encode_answer(body, pending)
        if answer is None:
            log.warning("no wire form for %s; dropped", type(body).__name__)
            return
        pending.answer.set(answer)

    def _timed_out(self, rid: int, kind: type, wait_ms: int) -> None:
        pending = self._pending.pop(rid, None)
        if pending is None:
            return
        log.warning("no answer from the core to %s after %d ms", kind.__name__, wait_ms)
        pending.answer.set(
            error_response(pending.api_key, pending.api_version, ErrorCode.request_timed_out)
        )

    def _forget(self, rid: int) -> None:
        pending = self._pending.pop(rid, None)
        if pending is not None:
            pending.timer.cancel()


def api_versions_response(
    api_version: int,
    core: RaftApi | None,
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


# -- answered by the node ------------------------------------------------------------------


def _describe_quorum(node: RaftNode, core: RaftApi, request: DecodedRequest) -> ResponsePayload:
    try:
        describe_quorum.request_from_kio(request.message)
    except RejectedRequest as e:
        return e.response
    described = core.describe_quorum(node.now_ms())
    described = wall_clock(described, node.now_ms(), int(time.time() * 1000))
    return describe_quorum.response_to_kio(described, request.api_version)


def _metadata(node: RaftNode, core: RaftApi, request: DecodedRequest) -> ResponsePayload:
    return metadata_response(
        request.message,
        request.api_version,
        cluster_id=node.cluster_id,
        leader_id=core.leader_id,
        leader_address=node.leader_address(),
        image=node.application.image() if node.application else None,
    )


def _describe_cluster(node: RaftNode, core: RaftApi, request: DecodedRequest) -> ResponsePayload:
    return describe_cluster_response(
        request.message,
        request.api_version,
        cluster_id=node.cluster_id,
        leader_id=core.leader_id,
        controllers=node.voter_addresses(),
        image=node.application.image() if node.application else None,
    )


_NODE_ANSWERS: Final[dict[int, Callable[[RaftNode, RaftApi, DecodedRequest], ResponsePayload]]] = {
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.METADATA: _metadata,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
}
assert set(_NODE_ANSWERS) == {int(a.key) for a in apis.NODE_APIS if a.answerer is Answerer.NODE}, (
    "every API the node answers has an answer here"
)


def answer_at_once(
    node: RaftNode, core: RaftApi, request: DecodedRequest
) -> ResponsePayload | None:
    """The answer to a request the node serves from its state at once (even during a
    flush); None for any other request."""
    answer = _NODE_ANSWERS.get(request.api_key)
    return None if answer is None else answer(node, core, request)


def refusal(
    request: DecodedRequest, core_running: bool, served: ApiTable
) -> ResponsePayload | None:
    """Kafka's answer to a request the core cannot take: UNSUPPORTED_VERSION for an API it
    does not serve, BROKER_NOT_AVAILABLE while it is not running; None when it can."""
    api = apis.by_key(request.api_key)
    if api is None or api.answerer in (Answerer.LISTENER, Answerer.NONE):
        code = ErrorCode.unsupported_version
    elif not core_running:
        code = ErrorCode.broker_not_available
    else:
        return None
    return error_response(request.api_key, request.api_version, code, apis=served)


# -- answered by the core ------------------------------------------------------------------


def decode_for_core(request: DecodedRequest, local_id: int) -> AnyRequest:
    """The core's message for a request it serves; raises ``RejectedRequest``."""
    return apis.request_from_kio(request.message, local_id=local_id)


def source_of(body: AnyRequest) -> int:
    """The sender's id as the core sees it (``apis.ADMIN_SOURCE_ID`` for an admin client)."""
    return apis.by_request(body).source(body)


def answer_wait_ms(body: AnyRequest, voter_change_timeout_ms: int) -> int:
    """How long the core may take to answer ``body`` on purpose (then a grace period)."""
    return apis.by_request(body).hold_ms(body, voter_change_timeout_ms)


def encode_answer(body: AnyResponse, pending: PendingAnswer) -> ResponsePayload | None:
    """The wire form of the core's response to ``pending``; None when it has none."""
    api = apis.by_response(body)
    if api is None or api.converters.response_to_kio is None:
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
