"""KIP-853's voter changes between kio and the core: AddRaftVoter (v0-1), RemoveRaftVoter
(v0) and UpdateRaftVoter (v0), served by the leader and sent by an auto-joining controller
(D9) and by every voter to the leader (its endpoints and kraft.version range).

Defaults where a version lacks a field: AddRaftVoter v0 has no AckWhenCommitted (the core
always answers after the commit, which is v0's meaning). UpdateRaftVoter's CurrentLeader is
a tagged field; its endpoint is named after the listener the request went out on.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    Converters,
    check_answers,
    directory,
    kio_module,
    listeners,
    milliseconds,
)
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.types import Endpoint, ReplicaKey

__all__ = ["ADD_CONVERTERS", "REMOVE_CONVERTERS", "UPDATE_CONVERTERS"]

_ZERO: Final = datetime.timedelta(0)
_UNKNOWN_DIRECTORY: Final = uuid.UUID(int=0)


def _wire_listeners(mod: Any, endpoints: tuple[Endpoint, ...]) -> tuple[Any, ...]:
    return tuple(mod.Listener(name=e.name, host=e.host, port=e.port) for e in endpoints)


def _error_only(response: AddRaftVoterResponse | RemoveRaftVoterResponse, version: int) -> Any:
    api_key = (
        ApiKey.ADD_RAFT_VOTER
        if isinstance(response, AddRaftVoterResponse)
        else ApiKey.REMOVE_RAFT_VOTER
    )
    mod = kio_module(api_key, version, "response")
    cls = getattr(mod, type(response).__name__)
    return cls(throttle_time=_ZERO, error_code=response.error, error_message=response.error_message)


# -- AddRaftVoter ------------------------------------------------------------------------


def add_from_kio(message: RequestPayload, _local_id: int) -> AddRaftVoterRequest:
    m: Any = message
    return AddRaftVoterRequest(
        cluster_id=m.cluster_id,
        timeout_ms=milliseconds(m.timeout),
        voter_key=ReplicaKey(int(m.voter_id), directory(m.voter_directory_id)),
        listeners=listeners(m.listeners),
    )


def add_to_kio(request: AddRaftVoterRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.ADD_RAFT_VOTER, version, "request")
    result: RequestPayload = mod.AddRaftVoterRequest(
        cluster_id=request.cluster_id,
        timeout=datetime.timedelta(milliseconds=request.timeout_ms),
        voter_id=request.voter_key.id,
        voter_directory_id=request.voter_key.directory_id or _UNKNOWN_DIRECTORY,
        listeners=_wire_listeners(mod, request.listeners),
    )
    return result


def add_response_from_kio(message: ResponsePayload, _request: Any, _listener: str) -> Any:
    m: Any = message
    check_answers(message, ApiKey.ADD_RAFT_VOTER)
    return AddRaftVoterResponse(ErrorCode(m.error_code), m.error_message)


# -- RemoveRaftVoter ---------------------------------------------------------------------


def remove_from_kio(message: RequestPayload, _local_id: int) -> RemoveRaftVoterRequest:
    m: Any = message
    return RemoveRaftVoterRequest(
        cluster_id=m.cluster_id,
        voter_key=ReplicaKey(int(m.voter_id), directory(m.voter_directory_id)),
    )


def remove_to_kio(request: RemoveRaftVoterRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.REMOVE_RAFT_VOTER, version, "request")
    result: RequestPayload = mod.RemoveRaftVoterRequest(
        cluster_id=request.cluster_id,
        voter_id=request.voter_key.id,
        voter_directory_id=request.voter_key.directory_id or _UNKNOWN_DIRECTORY,
    )
    return result


def remove_response_from_kio(message: ResponsePayload, _request: Any, _listener: str) -> Any:
    m: Any = message
    check_answers(message, ApiKey.REMOVE_RAFT_VOTER)
    return RemoveRaftVoterResponse(ErrorCode(m.error_code), m.error_message)


# -- UpdateRaftVoter ---------------------------------------------------------------------


def update_from_kio(message: RequestPayload, _local_id: int) -> UpdateRaftVoterRequest:
    m: Any = message
    feature = m.k_raft_version_feature
    return UpdateRaftVoterRequest(
        cluster_id=m.cluster_id,
        current_leader_epoch=int(m.current_leader_epoch),
        voter_key=ReplicaKey(int(m.voter_id), directory(m.voter_directory_id)),
        listeners=listeners(m.listeners),
        min_kraft_version=int(feature.min_supported_version),
        max_kraft_version=int(feature.max_supported_version),
    )


def update_to_kio(request: UpdateRaftVoterRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.UPDATE_RAFT_VOTER, version, "request")
    result: RequestPayload = mod.UpdateRaftVoterRequest(
        cluster_id=request.cluster_id,
        current_leader_epoch=request.current_leader_epoch,
        voter_id=request.voter_key.id,
        voter_directory_id=request.voter_key.directory_id or _UNKNOWN_DIRECTORY,
        listeners=_wire_listeners(mod, request.listeners),
        k_raft_version_feature=mod.KRaftVersionFeature(
            min_supported_version=request.min_kraft_version,
            max_supported_version=request.max_kraft_version,
        ),
    )
    return result


def update_response_to_kio(
    response: UpdateRaftVoterResponse, version: int, listener_name: str
) -> ResponsePayload:
    mod = kio_module(ApiKey.UPDATE_RAFT_VOTER, version, "response")
    endpoint = next((e for e in response.leader_endpoints if e.name == listener_name), None)
    result: ResponsePayload = mod.UpdateRaftVoterResponse(
        throttle_time=_ZERO,
        error_code=response.error,
        current_leader=mod.CurrentLeader(
            leader_id=response.leader_id,
            leader_epoch=response.leader_epoch,
            host=endpoint.host if endpoint is not None else "",
            port=endpoint.port if endpoint is not None else -1,
        ),
    )
    return result


def update_response_from_kio(
    message: ResponsePayload, _request: Any, listener_name: str
) -> UpdateRaftVoterResponse:
    check_answers(message, ApiKey.UPDATE_RAFT_VOTER)
    m: Any = message
    leader = m.current_leader
    endpoints: tuple[Endpoint, ...] = ()
    if int(leader.leader_id) >= 0 and str(leader.host) and int(leader.port) >= 0:
        endpoints = (Endpoint(listener_name, str(leader.host), int(leader.port)),)
    return UpdateRaftVoterResponse(
        error=ErrorCode(m.error_code),
        leader_id=int(leader.leader_id),
        leader_epoch=int(leader.leader_epoch),
        leader_endpoints=endpoints,
    )


ADD_CONVERTERS: Final = Converters(
    request_from_kio=add_from_kio,
    response_to_kio=lambda response, version, _listener: _error_only(response, version),
    request_to_kio=add_to_kio,
    response_from_kio=add_response_from_kio,
)
REMOVE_CONVERTERS: Final = Converters(
    request_from_kio=remove_from_kio,
    response_to_kio=lambda response, version, _listener: _error_only(response, version),
    request_to_kio=remove_to_kio,
    response_from_kio=remove_response_from_kio,
)
UPDATE_CONVERTERS: Final = Converters(
    request_from_kio=update_from_kio,
    response_to_kio=update_response_to_kio,
    request_to_kio=update_to_kio,
    response_from_kio=update_response_from_kio,
)
