"""The admin client: Kafka's quorum admin calls over the project's own protocol stack.

:class:`AdminClient` speaks through :class:`pykraft.net.client.Connection` (one codec: kio via
``pykraft.protocol``) to a list of bootstrap addresses, as Kafka's ``Admin`` does with
``bootstrap.controllers`` (the default here, Kafka's ``--bootstrap-controller``) or
``bootstrap.servers``:

* :meth:`AdminClient.describe_cluster` -- DescribeCluster with endpoint type *controller*
  (KIP-919): the cluster id, the controllers and the active controller. With
  ``bootstrap_controllers=False`` it asks for broker endpoints first, as Kafka's tools do
  with ``--bootstrap-server``, and falls back to controller endpoints on
  UNSUPPORTED_ENDPOINT_TYPE (a pykraft controller listener answers both ways then).
* :meth:`AdminClient.describe_quorum` -- DescribeQuorum v2 for ``__cluster_metadata-0``
  (SPEC D11), as :class:`QuorumInfo`.
* :meth:`AdminClient.add_controller` / :meth:`AdminClient.remove_controller` -- AddRaftVoter /
  RemoveRaftVoter (KIP-853).

Leader routing: these requests must reach the quorum's leader. A non-leader answers
NOT_LEADER_OR_FOLLOWER with the leader it knows (and, in DescribeQuorum v2, the voters'
endpoints); the client then sends to that leader's address, learnt from the answer or from
DescribeCluster. While no leader is known (an election), it retries with backoff until
``timeout_ms``. Every request has ``request_timeout_ms``; the whole call is bounded by
``timeout_ms`` (Kafka's ``default.api.timeout.ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.admin.types import (
    AdminError,
    ClusterInfo,
    FeatureInfo,
    QuorumInfo,
    RaftVoterEndpoint,
    ReplicaState,
    VoterReassignment,
)
from pykraft.net import apis
from pykraft.net.client import Connection
from pykraft.net.convert import KRAFT_VERSION_FEATURE
from pykraft.net.convert.features import api_versions_request
from pykraft.net.security import ClientSecurity
from pykraft.protocol import (
    ApiKey,
    ApiVersionRange,
    ErrorCode,
    ProtocolError,
)
from pykraft.protocol.apis import (
    BROKER_ENDPOINT_TYPE,
    CONTROLLER_ENDPOINT_TYPE,
    kio_module,
)
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS
from pykraft.raft import messages
from pykraft.raft.messages import AddRaftVoterRequest, AnyRequest, RemoveRaftVoterRequest
from pykraft.raft.types import ReplicaKey

__all__ = [
    "AdminClient",
    "AdminError",
    "ClusterInfo",
    "QuorumInfo",
    "RaftVoterEndpoint",
    "ReplicaState",
]

ADMIN_APIS: Final = apis.SERVED_APIS.with_apis(
    *(ApiVersionRange(k, lo, hi) for k, (lo, hi) in CONTROLLER_API_VERSIONS.items())
)
"""What a node serves (``net.apis``) and what an active controller adds."""
RETRY_BACKOFF_MS: Final = 100
RETRY_BACKOFF_MAX_MS: Final = 1000

_RETRIABLE: Final = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.not_controller,
        ErrorCode.broker_not_available,
        ErrorCode.leader_not_available,
    }
)


def _parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port, got {text!r}")
    return host.strip("[]"), int(port)


def _replica(state: messages.ReplicaState) -> ReplicaState:
    key = state.replica_key
    return ReplicaState(
        replica_id=key.id,
        directory_id=key.directory_id,
        log_end_offset=state.log_end_offset,
        last_fetch_timestamp=state.last_fetch_timestamp,
        last_caught_up_timestamp=state.last_caught_up_timestamp,
    )


def _encoder(request: AnyRequest) -> Any:
    """``build(version)`` for a request the node's converters encode (``net.apis``): the
    admin client and the node that answers it share one conversion."""

    def build(version: int) -> RequestPayload:
        message: RequestPayload = apis.request_to_kio(request, version)
        return message

    return build


def _decode(answer: ResponsePayload, request: AnyRequest) -> Any:
    """The node's own view of ``answer`` (``net.apis``), read by the same converter."""
    return apis.response_from_kio(answer, request=request, listener_name="")


class AdminClient:
    """Quorum admin calls against ``bootstrap`` (``"host:port,host:port"`` or a list).

    Use as ``async with AdminClient(...) as admin`` or call :meth:`close`. Not thread-safe;
    one client per event loop.
    """

    def __init__(
        self,
        bootstrap: str | Sequence[str],
        *,
        bootstrap_controllers: bool = True,
        request_timeout_ms: int = 5_000,
        timeout_ms: int = 30_000,
        client_id: str = "pykraft-admin",
        security: ClientSecurity | None = None,
    ) -> None:
        """``security``: TLS and SASL to use (``--command-config``), PLAINTEXT when None."""
        self.security = security
        self._retired: list[Connection] = []  # renewed (KIP-368), closing when idle
        items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
        self.bootstrap = [_parse_address(item) for item in items if item.strip()]
        if not self.bootstrap:
            raise ValueError("no bootstrap address")
        self.bootstrap_controllers = bootstrap_controllers
        self.request_timeout_ms = request_timeout_ms
        self.timeout_ms = timeout_ms
        self.client_id = client_id
        self._connections: dict[tuple[str, int], Connection] = {}
        self._leader: tuple[str, int] | None = None  # last known leader address

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        connections, self._connections = self._connections, {}
        retired, self._retired = self._retired, []
        for conn in [*connections.values(), *retired]:
            conn.close()
            await conn.wait_closed()

    # -- transport ----------------------------------------------------------------------

    async def _connection(self, address: tuple[str, int]) -> Connection:
        conn = self._connections.get(address)
        if conn is not None and not conn.closed and conn.renewal_due:
            conn.close_when_idle()  # KIP-368: a new connection, a new session
            self._retired.append(conn)
            conn = None
        if conn is None or conn.closed:
            conn = await Connection.open(
                address[0],
                address[1],
                timeout_ms=self.request_timeout_ms,
                client_id=self.client_id,
                security=self.security,
            )
            self._connections[address] = conn
        return conn

    async def _send(self, address: tuple[str, int], build: Any, api_key: ApiKey) -> Any:
        """Send ``build(version)`` at the highest version both sides speak."""
        conn = await self._connection(address)
        version = conn.pick_version(api_key, ADMIN_APIS)
        if version is None:
            raise AdminError(
                ErrorCode.unsupported_version,
                f"{address[0]}:{address[1]} does not serve {api_key.name}",
            )
        message: RequestPayload = build(version)
        response: ResponsePayload = await conn.request(message, timeout_ms=self.request_timeout_ms)
        return response

    def _candidates(self) -> list[tuple[str, int]]:
        leader = [self._leader] if self._leader is not None else []
        return leader + [a for a in self.bootstrap if a != self._leader]

    async def _call_leader(self, call: Any, what: str) -> Any:
        """Run ``call(address)`` against the leader. ``call`` returns ``(result, None)`` on
        success or ``(None, (error, leader address or None))`` when the node is not the
        leader; transport failures move on to the next address. Bounded by ``timeout_ms``."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        backoff_ms = RETRY_BACKOFF_MS
        last: BaseException | None = None
        while True:
            redirect: tuple[str, int] | None = None
            for address in self._candidates():
                try:
                    result, retry = await call(address)
                except (OSError, TimeoutError, ConnectionError, ProtocolError) as e:
                    last = e
                    self._drop(address)
                    continue
                if retry is None:
                    self._leader = address
                    return result
                error, redirect = retry
                last = error
                if redirect == address:
                    redirect = None  # it names itself yet is not the leader: wait
                if redirect is not None:
                    break
            if redirect is not None:
                self._leader = redirect
                continue  # try the named leader at once
            if time.monotonic() + backoff_ms / 1000 > deadline:
                if isinstance(last, AdminError):
                    raise last
                raise AdminError(
                    ErrorCode.request_timed_out, f"{what}: no leader answered ({last})"
                )
            self._leader = None
            await asyncio.sleep(backoff_ms / 1000)
            backoff_ms = min(RETRY_BACKOFF_MAX_MS, backoff_ms * 2)

    def _drop(self, address: tuple[str, int]) -> None:
        conn = self._connections.pop(address, None)
        if conn is not None:
            conn.close()

    # -- calls --------------------------------------------------------------------------

    async def describe_cluster(self) -> ClusterInfo:
        """DescribeCluster from the first bootstrap address that answers."""
        endpoint_types = (
            [CONTROLLER_ENDPOINT_TYPE]
            if self.bootstrap_controllers
            else [BROKER_ENDPOINT_TYPE, CONTROLLER_ENDPOINT_TYPE]
        )
        last: BaseException | None = None
        for address in self.bootstrap:
            for endpoint_type in endpoint_types:
                try:
                    m = await self._send(
                        address,
                        lambda v, t=endpoint_type: _describe_cluster_request(v, t),
                        ApiKey.DESCRIBE_CLUSTER,
                    )
                except (OSError, TimeoutError, ConnectionError, ProtocolError) as e:
                    last = e
                    self._drop(address)
                    break
                code = ErrorCode(m.error_code)
                if code == ErrorCode.unsupported_endpoint_type:
                    last = AdminError(code, m.error_message)
                    continue
                if code != ErrorCode.none:
                    raise AdminError(code, m.error_message)
                if endpoint_type == BROKER_ENDPOINT_TYPE and not m.brokers:
                    # A pykraft controller answers for the brokers it knows: none yet.
                    continue
                return ClusterInfo(
                    cluster_id=str(m.cluster_id),
                    controller_id=int(m.controller_id),
                    nodes={int(b.broker_id): (str(b.host), int(b.port)) for b in m.brokers},
                )
        if isinstance(last, AdminError):
            raise last
        raise AdminError(ErrorCode.request_timed_out, f"no bootstrap address answered ({last})")

    async def describe_quorum(self) -> QuorumInfo:
        """DescribeQuorum of ``__cluster_metadata-0``, answered by the leader."""
        request = messages.DescribeQuorumRequest()

        async def call(address: tuple[str, int]) -> tuple[Any, Any]:
            answer = await self._send(address, _encoder(request), ApiKey.DESCRIBE_QUORUM)
            described: messages.DescribeQuorumResponse = _decode(answer, request)
            nodes = {n.node_id: n.listeners for n in described.nodes}
            code = described.error
            if code == ErrorCode.none:
                info = QuorumInfo(
                    leader_id=described.leader_id,
                    leader_epoch=described.leader_epoch,
                    high_watermark=described.high_watermark,
                    voters=tuple(_replica(r) for r in described.voters),
                    observers=tuple(_replica(r) for r in described.observers),
                    nodes=nodes,
                )
                return info, None
            error = AdminError(code, described.error_message)
            if code not in _RETRIABLE:
                raise error
            return None, (error, await self._leader_address(described.leader_id, nodes))

        result: QuorumInfo = await self._call_leader(call, "DescribeQuorum")
        return result

    async def _leader_address(
        self, leader_id: int, nodes: dict[int, tuple[RaftVoterEndpoint, ...]]
    ) -> tuple[str, int] | None:
        """The address of ``leader_id`` from ``nodes``, else from DescribeCluster."""
        if leader_id < 0:
            return None
        endpoints = nodes.get(leader_id, ())
        if endpoints:
            return endpoints[0].host, endpoints[0].port
        with contextlib.suppress(AdminError):
            cluster = await self.describe_cluster()
            return cluster.nodes.get(leader_id)
        return None

    async def _voter_change(self, build: Any, api_key: ApiKey, what: str) -> None:
        async def call(address: tuple[str, int]) -> tuple[Any, Any]:
            m = await self._send(address, build, api_key)
            code = ErrorCode(m.error_code)
            if code == ErrorCode.none:
                return True, None
            error = AdminError(code, m.error_message)
            if code not in _RETRIABLE:
                raise error
            info = await self.describe_quorum_leader_hint()
            return None, (error, info)

        await self._call_leader(call, what)

    async def describe_quorum_leader_hint(self) -> tuple[str, int] | None:
        """Where the leader is, by DescribeQuorum (which follows redirects itself)."""
        with contextlib.suppress(AdminError):
            await self.describe_quorum()
            return self._leader
        return None

    async def add_controller(
        self,
        controller_id: int,
        directory_id: uuid.UUID,
        endpoints: Sequence[RaftVoterEndpoint],
        *,
        cluster_id: str | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """AddRaftVoter (KIP-853): make the observer (``controller_id``, ``directory_id``)
        a voter, reachable at ``endpoints``. Returns once the leader answered success (it
        answers after the new voter set committed); raises :class:`AdminError`."""
        wait = timeout_ms if timeout_ms is not None else self.timeout_ms
        key = ReplicaKey(controller_id, directory_id)
        build = _encoder(AddRaftVoterRequest(cluster_id, wait, key, tuple(endpoints)))
        await self._voter_change(build, ApiKey.ADD_RAFT_VOTER, "AddRaftVoter")

    async def remove_controller(
        self, controller_id: int, directory_id: uuid.UUID, *, cluster_id: str | None = None
    ) -> None:
        """RemoveRaftVoter (KIP-853) of the replica key (``controller_id``, ``directory_id``);
        raises :class:`AdminError` (VOTER_NOT_FOUND, REQUEST_TIMED_OUT, ...)."""
        key = ReplicaKey(controller_id, directory_id)
        build = _encoder(RemoveRaftVoterRequest(cluster_id, key))
        await self._voter_change(build, ApiKey.REMOVE_RAFT_VOTER, "RemoveRaftVoter")

    async def update_kraft_version(
        self, version: int, *, validate_only: bool = False, timeout_ms: int | None = None
    ) -> None:
        """UpdateFeatures for ``kraft.version`` (D10, Kafka's ``kafka-features.sh upgrade
        --feature kraft.version=N``): the leader answers once the new version committed;
        raises :class:`AdminError` (UNSUPPORTED_VERSION when a voter or observer cannot run
        it, INVALID_UPDATE_VERSION for a downgrade, ...)."""
        await self.update_feature(
            KRAFT_VERSION_FEATURE,
            version,
            upgrade_type=1,
            validate_only=validate_only,
            timeout_ms=timeout_ms,
        )

    async def reassign_voters(
        self, voter_ids: Sequence[int] | None, *, timeout_ms: int | None = None
    ) -> None:
        """KIP-642 through KIP-455's AlterPartitionReassignments of ``__cluster_metadata``
        partition 0: move the voter set to ``voter_ids`` one voter at a time (``None``
        cancels: back to the voters the reassignment started from). Returns once the leader
        has the target durably in the log; raises :class:`AdminError`
        (INVALID_REPLICA_ASSIGNMENT names the id it cannot use)."""
        wait = timeout_ms if timeout_ms is not None else self.timeout_ms
        request = messages.AlterVotersRequest(None if voter_ids is None else tuple(voter_ids), wait)

        async def call(address: tuple[str, int]) -> tuple[Any, Any]:
            answer = await self._send(
                address, _encoder(request), ApiKey.ALTER_PARTITION_REASSIGNMENTS
            )
            altered: messages.AlterVotersResponse = _decode(answer, request)
            code = altered.error
            if code == ErrorCode.none:
                return True, None
            error = AdminError(code, altered.error_message)
            if code not in _RETRIABLE and code != ErrorCode.not_controller:
                raise error
            return None, (error, await self.describe_quorum_leader_hint())

        await self._call_leader(call, "AlterPartitionReassignments")

    async def voter_reassignment(self) -> VoterReassignment | None:
        """ListPartitionReassignments of the metadata partition: the reassignment of the
        voter set in progress (None when there is none)."""

        request = messages.ListVoterReassignmentRequest(self.request_timeout_ms)

        async def call(address: tuple[str, int]) -> tuple[Any, Any]:
            answer = await self._send(
                address, _encoder(request), ApiKey.LIST_PARTITION_REASSIGNMENTS
            )
            listed: messages.ListVoterReassignmentResponse = _decode(answer, request)
            code = listed.error
            if code == ErrorCode.none:
                if not listed.replicas:
                    return None, None
                return VoterReassignment(listed.replicas, listed.adding, listed.removing), None
            error = AdminError(code, listed.error_message)
            if code not in _RETRIABLE and code != ErrorCode.not_controller:
                raise error
            return None, (error, await self.describe_quorum_leader_hint())

        result: VoterReassignment | None = await self._call_leader(
            call, "ListPartitionReassignments"
        )
        return result

    async def describe_features(self) -> list[FeatureInfo]:
        """The features the first bootstrap address that answers supports and finalized
        (its ApiVersions, as Kafka's ``Admin.describeFeatures``)."""
        last: BaseException | None = None
        for address in self.bootstrap:
            try:
                conn = await self._connection(address)
            except (OSError, TimeoutError, ConnectionError, ProtocolError) as e:
                last = e
                self._drop(address)
                continue
            # v4: a v3 answer leaves out features whose minimum level is 0 (KAFKA-17011).
            try:
                answer: Any = await conn.request(
                    api_versions_request(4),
                    timeout_ms=self.request_timeout_ms,
                )
            except (OSError, TimeoutError, ConnectionError, ProtocolError) as e:
                last = e
                self._drop(address)
                continue
            finalized = {str(f.name): int(f.max_version_level) for f in answer.finalized_features}
            epoch = int(answer.finalized_features_epoch)
            return [
                FeatureInfo(
                    str(f.name),
                    int(f.min_version),
                    int(f.max_version),
                    finalized.get(str(f.name)),
                    epoch,
                )
                for f in sorted(answer.supported_features, key=lambda f: str(f.name))
            ]
        raise AdminError(ErrorCode.request_timed_out, f"no bootstrap address answered ({last})")

    async def update_feature(
        self,
        name: str,
        level: int,
        *,
        upgrade_type: int,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """UpdateFeatures of one feature (see :meth:`update_features`)."""
        await self.update_features(
            {name: level},
            upgrade_type=upgrade_type,
            validate_only=validate_only,
            timeout_ms=timeout_ms,
        )

    async def update_features(
        self,
        levels: Mapping[str, int],
        *,
        upgrade_type: int,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """One UpdateFeatures request for every feature of ``levels`` (name -> finalized
        level, 0 = disabled), all or nothing: ``upgrade_type`` 1 upgrade, 2 safe downgrade,
        3 unsafe downgrade (Kafka's FeatureUpdate.UpgradeType); raises :class:`AdminError`.
        kraft.version goes to the quorum, every other feature to the metadata controller."""
        wait = timeout_ms if timeout_ms is not None else self.timeout_ms

        def build(api_version: int) -> RequestPayload:
            mod = kio_module(ApiKey.UPDATE_FEATURES, api_version, "request")
            updates = []
            for name, level in levels.items():
                update: dict[str, object] = {"feature": name, "max_version_level": level}
                if api_version == 0:
                    update["allow_downgrade"] = upgrade_type != 1
                else:
                    update["upgrade_type"] = upgrade_type
                updates.append(mod.FeatureUpdateKey(**update))
            fields: dict[str, object] = {
                "timeout": datetime.timedelta(milliseconds=wait),
                "feature_updates": tuple(updates),
            }
            if api_version >= 1:
                fields["validate_only"] = validate_only
            request: RequestPayload = mod.UpdateFeaturesRequest(**fields)
            return request

        await self._voter_change(build, ApiKey.UPDATE_FEATURES, "UpdateFeatures")


def _describe_cluster_request(version: int, endpoint_type: int) -> RequestPayload:
    fields: dict[str, object] = {"include_cluster_authorized_operations": False}
    if version >= 1:
        fields["endpoint_type"] = endpoint_type
    if version >= 2:
        fields["include_fenced_brokers"] = False
    built: RequestPayload = kio_module(
        ApiKey.DESCRIBE_CLUSTER, version, "request"
    ).DescribeClusterRequest(**fields)
    return built
