"""The node: one ``RaftCore`` driven by real files, sockets and timers on an asyncio loop.

Theory of operation. Every input to the core -- a decoded request, a response or a failed
request from a peer channel, a timer, an application append -- ends in :meth:`RaftNode._pump`,
which performs the core's ``Ready`` exactly as its docstring orders:

1. ``messages``: sent at once, before the flush: responses complete the pending inbound
   request they answer (matched by the request id this driver gave it); requests go to the
   peer's channel. A leader's Fetch answers carrying records it has not flushed yet leave
   here, so its followers' fsyncs overlap its own (it counts its own offset only once
   flushed, B13);
2. ``must_flush``: one ``FileLog.flush`` (one fsync for everything appended since the last
   one, which is how appends are batched) on the single ``pykraft-fsync`` thread, then
   ``RaftCore.on_flushed``, then ``messages_after_flush`` (a follower's next Fetch, a
   candidate's votes: they state our log end offset, so no peer may see an offset a crash
   could lose);
3. ``snapshot_loaded`` / ``high_watermark`` / ``leader_change``: told to the application
   (commit futures, the optional ``on_commit`` callback, a log line);
4. ``next_deadline_ms``: one loop timer calls ``poll`` then.

The fsync runs off the loop so that the loop keeps accepting connections, decoding requests,
answering DescribeQuorum and scrapes while the disk works. While a flush is running the core
is *frozen*: every input (request, response, timer, append) is queued in ``_deferred`` and
stepped into the core when the flush completes, and ``ready()`` is not called. So the log is
never written while it is being flushed (FileLog is not thread-safe, and ``flushed_offset``
must mean exactly what reached the disk). The inputs that arrived during one flush are then stepped
together, and their appends share the next fsync: group commit. ``_deferred`` is bounded by
its producers: each connection has at most ``in_flight_max`` requests, each peer channel a
bounded queue, there is one poll timer and one linger timer.

After a flush the core may have more to say (``on_flushed`` can commit and answer parked
fetches), so the pump asks again.

The clock is the loop's monotonic clock in milliseconds; the core never reads it itself.
Request ids: the core numbers the requests it sends; this driver numbers the requests it
receives (separately: a response body answers an inbound id, a request body uses the core's).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import heapq
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from pykraft.net.client import PeerChannel
from pykraft.net.convert import RejectedRequest, request_from_kio, response_to_kio
from pykraft.net.convert_voters import (
    FEATURE_APIS,
    KRAFT_VERSION_FEATURE,
    VOTER_APIS,
    voter_request_from_kio,
    voter_response_to_kio,
)
from pykraft.net.server import KafkaServer
from pykraft.node.cluster import CLUSTER_APIS, describe_cluster_response, metadata_response
from pykraft.node.config import NodeConfig
from pykraft.node.metrics import MetricsServer, RaftMetrics, Snapshot, snapshot_of
from pykraft.protocol import (
    KRAFT_APIS,
    ApiKey,
    DecodedRequest,
    ErrorCode,
    build_api_versions_response,
    error_response,
)
from pykraft.raft.config import NotLeaderError, RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.interfaces import Ready
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AnyRequest,
    AnyResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Inbound,
    Outbound,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    ReplicaState,
    RequestFailed,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
    is_request,
)
from pykraft.raft.roles import Role
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.records import CorruptRecordError, iter_batches
from pykraft.storage import (
    PARTITION_DIR_NAME,
    FileLog,
    FileQuorumStateStore,
    FileSnapshotStore,
    StorageError,
    read_meta_properties,
)

__all__ = ["AppendLostError", "NodeStartError", "RaftNode"]

log = logging.getLogger("pykraft.node")

COMMIT_MARKS_MAX: Final = 100_000  # appended batches awaiting commit, for commit-latency
APPEND_BATCH_RECORDS_MAX: Final = 10_000  # records per linger batch before appending at once
COMMIT_WAITERS_MAX: Final = 100_000
INBOUND_ANSWER_GRACE_MS: Final = 5_000  # beyond the request's own wait, then we give up

_RAFT_APIS: Final = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
    }
)
# Every quorum RPC (KIP-595/630/853/996), plus Metadata and DescribeCluster, which let
# clients find the leader (pykraft.node.cluster), and UpdateFeatures for kraft.version (D10).
SERVED_APIS: Final = KRAFT_APIS.with_apis(*CLUSTER_APIS, *FEATURE_APIS)
ADMIN_SOURCE_ID: Final = -1  # the "source" of an admin client's request, for the core


_RESPONSE_TYPES: Final = (
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
)
_VOTER_RESPONSE_TYPES: Final = (
    AddRaftVoterResponse,
    RemoveRaftVoterResponse,
    UpdateRaftVoterResponse,
    DescribeQuorumResponse,
    UpdateFeaturesResponse,
)


class NodeStartError(Exception):
    """The node cannot start (unformatted or mismatched storage, unsupported setup)."""


class AppendLostError(Exception):
    """Records were appended but truncated by a new leader before they committed."""


@dataclass(slots=True)
class _Inbound:
    answer: asyncio.Future[ResponsePayload]
    api_version: int
    listener_name: str


@dataclass(slots=True)
class _LingerBatch:
    """The append calls of one linger period, appended as one batch. Invariant:
    ``ends[i]`` is the count of ``values`` after call ``i`` added its records, so call
    ``i``'s last offset is the batch's base offset + ``ends[i]`` - 1."""

    values: list[bytes]
    ends: list[int]
    done: list[asyncio.Future[int]]


def _source_of(body: AnyRequest) -> int:
    if isinstance(body, VoteRequest):
        return body.candidate_key.id
    if isinstance(body, BeginQuorumEpochRequest | EndQuorumEpochRequest):
        return body.leader_id
    if isinstance(body, FetchRequest | FetchSnapshotRequest | UpdateRaftVoterRequest):
        return (
            body.replica_key.id
            if not isinstance(body, UpdateRaftVoterRequest)
            else (body.voter_key.id)
        )
    return ADMIN_SOURCE_ID


def _answer_wait_ms(body: AnyRequest, voter_change_timeout_ms: int) -> int:
    """How long the core may take to answer ``body`` on purpose (then a grace period)."""
    if isinstance(body, FetchRequest):
        return body.max_wait_ms
    if isinstance(body, AddRaftVoterRequest | UpdateFeaturesRequest):
        return body.timeout_ms
    if isinstance(body, RemoveRaftVoterRequest | UpdateRaftVoterRequest):
        return voter_change_timeout_ms
    return 0


def transition_reason(old: Role, new: Role) -> str:
    """A short reason for a role change, read off the (old, new) pair and their epochs."""
    pair = (old.name, new.name)
    if new.epoch > old.epoch and pair[1] in ("unattached", "follower"):
        return "higher epoch seen" if pair[0] != "resigned" else "resignation done"
    return {
        ("follower", "prospective"): "fetch timeout",
        ("unattached", "prospective"): "election timeout",
        ("prospective", "candidate"): "pre-vote won",
        ("prospective", "follower"): "pre-vote lost, leader known",
        ("prospective", "unattached"): "pre-vote lost",
        ("candidate", "prospective"): "election lost or timed out",
        ("candidate", "leader"): "election won",
        ("candidate", "follower"): "leader discovered",
        ("unattached", "follower"): "leader discovered",
        ("unattached", "unattached"): "voted",
        ("leader", "resigned"): "resigned (shutdown or check quorum)",
    }.get(pair, "state change")


class RaftNode:
    """A KRaft controller process's quorum machinery. Create, ``await start()``, then use
    :meth:`append` / :meth:`wait_committed`; ``await shutdown()`` resigns gracefully."""

    def __init__(
        self,
        config: NodeConfig,
        *,
        rng: random.Random | None = None,
        on_commit: Callable[[int], None] | None = None,
    ) -> None:
        self.config = config
        self.on_commit = on_commit
        self._rng = rng or random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.core: RaftCore | None = None
        self._log: FileLog | None = None
        self._server: KafkaServer | None = None
        self._channels: dict[tuple[str, int], PeerChannel] = {}
        self._request_dst: dict[int, int] = {}  # core request id -> destination node id
        self._inbound: dict[int, _Inbound] = {}  # our inbound request id -> pending answer
        self._next_inbound_id = 1
        self._timer: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._appends = _LingerBatch([], [], [])
        # offset -> (epoch it was appended in, futures); resolved once HWM > offset.
        self._commit_waiters: dict[int, tuple[int, list[asyncio.Future[None]]]] = {}
        self._commit_offsets: list[int] = []  # heap of the keys of _commit_waiters
        self._stopping = False
        self.failed: BaseException | None = None  # a fatal storage error stopped the node
        # Flushes run here, one at a time (fsync off the loop thread).
        self._fsync = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pykraft-fsync")
        self._flushing: asyncio.Future[None] | None = None  # set while a flush runs
        self._fatal_stop: asyncio.Future[None] | None = None
        self._deferred: collections.deque[Callable[[], None]] = collections.deque()
        # (last offset, appended at ms) of leader batches not yet committed, oldest first.
        self._commit_marks: collections.deque[tuple[int, int]] = collections.deque(
            maxlen=COMMIT_MARKS_MAX
        )
        self.metrics: RaftMetrics | None = None
        self._last_voters: VoterSet | None = None  # the voter set last logged
        self._metrics_server: MetricsServer | None = None
        self.stopped = asyncio.Event()
        self.cluster_id = ""
        self.directory_id: Any = None
        self.listener = config.controller_listener
        self._voter_endpoints = {
            v.id: (v.host, v.port) for v in config.quorum_voters
        }  # static voters (kraft.version 0)

    # -- lifecycle ------------------------------------------------------------------------

    def now_ms(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    def _open_storage(self) -> tuple[FileLog, FileSnapshotStore, FileQuorumStateStore]:
        cfg = self.config
        try:
            meta = read_meta_properties(cfg.metadata_log_dir)
        except StorageError as e:
            raise NodeStartError(str(e)) from None
        if meta is None:
            raise NodeStartError(
                f"{cfg.metadata_log_dir} is not formatted: run `pykraft storage format`"
            )
        if meta.node_id != cfg.node_id:
            raise NodeStartError(
                f"{cfg.metadata_log_dir} belongs to node.id {meta.node_id}, config says "
                f"{cfg.node_id}"
            )
        self.cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        partition_dir = cfg.metadata_log_dir / PARTITION_DIR_NAME
        try:
            log_ = FileLog.open(partition_dir, segment_bytes=cfg.metadata_log_segment_bytes)
            snapshots = FileSnapshotStore.open(partition_dir)
        except (StorageError, ValueError) as e:
            raise NodeStartError(f"cannot open {partition_dir}: {e}") from None
        return log_, snapshots, FileQuorumStateStore(partition_dir)

    async def start(self) -> None:
        """Open storage, build the core, start listening. Raises NodeStartError."""
        self._loop = asyncio.get_running_loop()
        cfg = self.config
        log_, snapshots, quorum_state = self._open_storage()
        self._log = log_
        name = self.listener.name
        # Static voters (kraft.version 0) when controller.quorum.voters is set; otherwise the
        # voter set comes from the log and its bootstrap checkpoint (D2, D3), and
        # controller.quorum.bootstrap.servers is where to find the leader (D8).
        voters = (
            VoterSet.from_ids(
                cfg.voter_ids,
                endpoints={v.id: (Endpoint(name, v.host, v.port),) for v in cfg.quorum_voters},
            )
            if cfg.quorum_voters
            else None
        )
        bootstrap = tuple(Endpoint(name, b.host, b.port) for b in cfg.quorum_bootstrap_servers)
        raft_config = RaftConfig(
            election_timeout_ms=cfg.quorum_election_timeout_ms,
            fetch_timeout_ms=cfg.quorum_fetch_timeout_ms,
            election_backoff_max_ms=cfg.quorum_election_backoff_max_ms,
            request_timeout_ms=cfg.quorum_request_timeout_ms,
            retry_backoff_ms=cfg.quorum_retry_backoff_ms,
            # Kafka's fixed 500 ms; the channel's timeout for a Fetch adds this wait.
            fetch_max_wait_ms=500,
            cluster_id=self.cluster_id,
            auto_join=cfg.quorum_auto_join_enable,
        )
        own = (voters.endpoints(cfg.node_id) if voters is not None else ()) or (
            Endpoint(name, self.listener.host or "localhost", self.listener.port),
        )
        self._server = KafkaServer(
            self._handle,
            listener_name=name,
            host=self.listener.host,
            port=self.listener.port,
            apis=SERVED_APIS,
            frame_max_bytes=cfg.socket_request_max_bytes,
            api_versions=self._api_versions,
        )
        await self._server.start()
        core = RaftCore(
            config=raft_config,
            local_key=ReplicaKey(cfg.node_id, self.directory_id),
            voters=voters,
            log=log_,
            quorum_state=quorum_state,
            snapshots=snapshots,
            rng=self._rng,
            now_ms=self.now_ms(),
            endpoints=own,
            bootstrap_servers=bootstrap,
        )
        core.on_transition = self._on_transition
        self.core = core
        self.metrics = RaftMetrics(self.now_ms(), cfg.quorum_fetch_timeout_ms)
        if cfg.metrics_port is not None:
            self._metrics_server = MetricsServer(self._loop, self.metrics_snapshot)
            self._metrics_server.start(self.listener.host, cfg.metrics_port)
            log.info("metrics endpoint listening port=%d", self._metrics_server.port)
        log.info(
            "node started node.id=%d directory.id=%s cluster.id=%s listener=%s:%d role=%s "
            "epoch=%d log_end_offset=%d",
            cfg.node_id,
            self.directory_id,
            self.cluster_id,
            self.listener.host,
            self.port,
            core.role,
            core.epoch,
            log_.end_offset,
        )
        self._pump()

    async def shutdown(self) -> None:
        """Graceful: a leader resigns (EndQuorumEpoch), the log is flushed, sockets close."""
        if self._stopping:
            return
        core = self.core
        if core is not None and self.failed is None:
            await self._flush_done()
            core.shutdown(self.now_ms())
            self._pump()
            await self._flush_done()
            # Give EndQuorumEpoch a moment to leave before the channels close.
            await asyncio.sleep(0.05)
        self._stopping = True
        for handle in (self._timer, self._linger):
            if handle is not None:
                handle.cancel()
        self._fail_appends(ConnectionError("node shutting down"))
        for _, waiters in self._commit_waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(ConnectionError("node shutting down"))
        self._commit_waiters.clear()
        self._commit_offsets.clear()
        if self._server is not None:
            await self._server.close()
        for channel in self._channels.values():
            await channel.close()
        if self._metrics_server is not None:
            self._metrics_server.close()
        await self._flush_done()
        if self._log is not None:
            if self.failed is None:
                self._log.flush()
            self._log.close()
        self._fsync.shutdown(wait=True)
        log.info("node stopped node.id=%d", self.config.node_id)
        self.stopped.set()

    # -- the pump -------------------------------------------------------------------------

    def _input(self, step: Callable[[], None]) -> None:
        """Step the core now, or after the running flush (see the module docstring)."""
        if self.core is None or self._stopping:
            return
        if self._flushing is not None:
            self._deferred.append(step)
            return
        step()
        self._pump()

    def _pump(self) -> None:
        core = self.core
        if core is None or self._stopping or self._flushing is not None:
            return
        assert self._log is not None and self._loop is not None
        ready = core.ready(self.now_ms())
        for message in ready.messages:  # they never wait for our flush (Ready, step 1)
            self._send(message)
        if not ready.must_flush:
            self._perform(ready)
            return
        # Invariant: while _flushing is set, nothing writes the log and ready() is not called.
        flushing = self._loop.run_in_executor(self._fsync, self._log.flush)
        self._flushing = flushing
        flushing.add_done_callback(lambda f: self._flushed(f, ready))

    def _flushed(self, flush: asyncio.Future[None], ready: Ready) -> None:
        core = self.core
        assert core is not None
        self._flushing = None
        error = flush.exception() if not flush.cancelled() else ConnectionError("cancelled")
        if error is not None:
            # As Kafka halts on a failed log flush: what reached the disk is unknown.
            log.critical("log flush failed, stopping the node: %s", error)
            self.failed = error
            self._deferred.clear()
            self._fatal_stop = asyncio.ensure_future(self.shutdown())
            return
        core.on_flushed(self.now_ms())
        self._perform(ready)
        deferred, self._deferred = self._deferred, collections.deque()
        for step in deferred:
            step()
        self._pump()

    async def _flush_done(self) -> None:
        while self._flushing is not None:
            await asyncio.shield(self._flushing)
            await asyncio.sleep(0)  # let the done callback run

    def _perform(self, ready: Ready) -> None:
        """Ready's steps after the flush (``messages`` were sent before it)."""
        for message in ready.messages_after_flush:
            self._send(message)
        if ready.snapshot_loaded is not None:
            log.info("snapshot loaded snapshot_id=%s", ready.snapshot_loaded)
        if ready.high_watermark is not None:
            self._committed(ready.high_watermark)
        if ready.leader_change is not None:
            log.info(
                "leader change leader=%d epoch=%d",
                ready.leader_change.leader_id,
                ready.leader_change.epoch,
            )
        for done in ready.completed:
            log.info("operation done op=%s error=%s", done.operation, done.error.name)
        self._log_voter_change()
        self._schedule_poll(ready.next_deadline_ms)

    def _log_voter_change(self) -> None:
        """One structured line whenever the voter set in force changes (KIP-853)."""
        core = self.core
        assert core is not None
        voters = core.voters
        if voters is self._last_voters:
            return
        keys = sorted(str(k) for k in voters.keys)
        if self._last_voters is not None and keys == sorted(str(k) for k in self._last_voters.keys):
            self._last_voters = voters
            return
        self._last_voters = voters
        log.info(
            "voter set node.id=%d voters=%s epoch=%d high_watermark=%d uncommitted=%s",
            self.config.node_id,
            ",".join(keys),
            core.epoch,
            core.high_watermark,
            str(bool(getattr(core, "uncommitted_voter_change", False))).lower(),
        )

    def _api_versions(self, api_version: int) -> ResponsePayload:
        """ApiVersions: the served APIs, the kraft.version range the core supports
        (``RaftConfig.kraft_versions``) and, once running, the finalized kraft.version."""
        core = self.core
        supported = RaftConfig().kraft_versions if core is None else core.config.kraft_versions
        finalized = None if core is None else {KRAFT_VERSION_FEATURE: core.kraft_version}
        return build_api_versions_response(
            api_version,
            SERVED_APIS,
            supported_features={KRAFT_VERSION_FEATURE: supported},
            finalized_features=finalized,
        )

    def metrics_snapshot(self) -> Snapshot | None:
        """The raft-metrics group now (on the loop thread); None before start."""
        if self.core is None or self.metrics is None:
            return None
        return snapshot_of(self.core, self.metrics, self.now_ms())

    def _schedule_poll(self, deadline_ms: int) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(deadline_ms / 1000, self._poll)

    def _poll(self) -> None:
        self._timer = None
        core = self.core
        if core is not None:
            self._input(lambda: core.poll(self.now_ms()))

    def _on_transition(self, old: Role, new: Role) -> None:
        if self.metrics is not None:
            self.metrics.on_role(self.now_ms(), new.name, new.name in ("leader", "follower"))
        log.info(
            'role transition node.id=%d from=%s to=%s from_epoch=%d epoch=%d leader=%d reason="%s"',
            self.config.node_id,
            old.name,
            new.name,
            old.epoch,
            new.epoch,
            getattr(new, "leader_id", self.config.node_id if new.name == "leader" else -1),
            transition_reason(old, new),
        )

    # -- outbound -------------------------------------------------------------------------

    def _send(self, message: Outbound) -> None:
        body = message.body
        if is_request(body):
            self._send_request(message.dst, message.request_id, body, message.endpoint)
            return
        pending = self._inbound.pop(message.request_id, None)
        if pending is None or pending.answer.done():
            return  # the connection went away, or the answer timed out
        if isinstance(body, _RESPONSE_TYPES):
            answer = response_to_kio(body, pending.api_version, listener_name=pending.listener_name)
        elif isinstance(body, _VOTER_RESPONSE_TYPES):
            if isinstance(body, DescribeQuorumResponse):
                body = self._wall_clock(body)
            answer = voter_response_to_kio(
                body, pending.api_version, listener_name=pending.listener_name
            )
        else:
            log.warning("no wire form for %s; dropped", type(body).__name__)
            return
        pending.answer.set_result(answer)

    def _wall_clock(self, response: DescribeQuorumResponse) -> DescribeQuorumResponse:
        """Replica timestamps from the core's monotonic clock to wall-clock ms (D11)."""
        now, wall = self.now_ms(), int(time.time() * 1000)

        def convert(r: ReplicaState) -> ReplicaState:
            def at(ts: int) -> int:
                return -1 if ts < 0 else wall - (now - ts)

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

    def _send_request(
        self, dst: int, request_id: int, body: AnyRequest, endpoint: Endpoint | None
    ) -> None:
        address = self._address_of(dst, endpoint)
        if address is None:
            log.debug("no address for node %d; failing request %d", dst, request_id)
            assert self._loop is not None
            self._loop.call_soon(self._on_peer_result, request_id, None, dst)
            return
        channel = self._channels.get(address)
        if channel is None:
            channel = PeerChannel(
                address[0],
                address[1],
                listener_name=self.listener.name,
                on_result=self._on_channel_result,
                request_timeout_ms=self.config.quorum_request_timeout_ms,
                retry_backoff_ms=self.config.quorum_retry_backoff_ms,
                frame_max_bytes=self.config.socket_request_max_bytes,
            )
            self._channels[address] = channel
        self._request_dst[request_id] = dst
        channel.send(request_id, body)

    def _on_channel_result(self, request_id: int, response: AnyResponse | None) -> None:
        dst = self._request_dst.pop(request_id, None)
        if dst is not None:
            self._on_peer_result(request_id, response, dst)

    def _on_peer_result(self, request_id: int, response: AnyResponse | None, dst: int) -> None:
        core = self.core
        if core is None or self._stopping:
            return
        if isinstance(response, FetchResponse) and response.records and self.metrics:
            self.metrics.on_fetch(self.now_ms(), _record_count(response.records))
        if response is None:
            self._input(lambda: core.step(RequestFailed(dst, request_id), self.now_ms()))
        else:
            self._input(lambda: core.step(Inbound(dst, request_id, response), self.now_ms()))

    # -- inbound --------------------------------------------------------------------------

    def voter_addresses(self) -> dict[int, tuple[str, int]]:
        """Each voter's address on the controller listener, from the voter set (falling back
        to ``controller.quorum.voters``)."""
        core = self.core
        addresses = dict(self._voter_endpoints)
        if core is not None:
            for voter_id in core.voters.ids:
                for e in core.voters.endpoints(voter_id):
                    if e.name == self.listener.name:
                        addresses[voter_id] = (e.host, e.port)
                        break
            addresses = {i: a for i, a in addresses.items() if i in core.voters.ids}
        return addresses

    def _address_of(self, dst: int, endpoint: Endpoint | None) -> tuple[str, int] | None:
        """Where to send to ``dst``: the endpoint the core named, else the voter set's (or
        the static config's) address, else the leader's endpoint as learnt from responses."""
        if endpoint is not None:
            return endpoint.host, endpoint.port
        address = self.voter_addresses().get(dst)
        if address is None and self.core is not None and dst == self.core.leader_id:
            address = self.leader_address()
        return address

    def leader_address(self) -> tuple[str, int] | None:
        core = self.core
        if core is None or core.leader_id < 0:
            return None
        if core.leader_id == self.config.node_id:
            return (self.listener.host or "localhost", self.port)
        for e in getattr(core.state, "leader_endpoints", ()):
            if e.name == self.listener.name:
                return (e.host, e.port)
        return self.voter_addresses().get(core.leader_id)

    async def _handle(self, request: DecodedRequest, listener_name: str) -> ResponsePayload:
        core = self.core
        if core is not None and request.api_key == ApiKey.DESCRIBE_QUORUM:
            # Read-only: answered at once from the core's state, even during a flush.
            try:
                voter_request_from_kio(request.message)
            except RejectedRequest as e:
                return e.response
            described = self._wall_clock(core.describe_quorum(self.now_ms()))
            return voter_response_to_kio(
                described, request.api_version, listener_name=listener_name
            )
        if core is not None and request.api_key == ApiKey.METADATA:
            return metadata_response(
                request.message,
                request.api_version,
                cluster_id=self.cluster_id,
                leader_id=core.leader_id,
                leader_address=self.leader_address(),
            )
        if core is not None and request.api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster_response(
                request.message,
                request.api_version,
                cluster_id=self.cluster_id,
                leader_id=core.leader_id,
                controllers=self.voter_addresses(),
            )
        to_core = request.api_key in _RAFT_APIS or request.api_key in VOTER_APIS
        if not to_core or core is None or self._stopping:
            code = ErrorCode.broker_not_available if to_core else ErrorCode.unsupported_version
            return error_response(request.api_key, request.api_version, code)
        body: AnyRequest
        try:
            if request.api_key in _RAFT_APIS:
                body = request_from_kio(request.message, local_id=self.config.node_id)
            else:
                body = voter_request_from_kio(request.message)
        except RejectedRequest as e:
            return e.response
        assert self._loop is not None
        rid = self._next_inbound_id
        self._next_inbound_id += 1
        pending = _Inbound(self._loop.create_future(), request.api_version, listener_name)
        self._inbound[rid] = pending
        self._input(lambda: core.step(Inbound(_source_of(body), rid, body), self.now_ms()))
        wait_ms = INBOUND_ANSWER_GRACE_MS + _answer_wait_ms(
            body, core.config.voter_change_timeout_ms
        )
        try:
            return await asyncio.wait_for(asyncio.shield(pending.answer), wait_ms / 1000)
        except TimeoutError:
            log.warning("no answer from the core to %s after %d ms", type(body).__name__, wait_ms)
            return error_response(request.api_key, request.api_version, ErrorCode.request_timed_out)
        finally:
            self._inbound.pop(rid, None)

    # -- the embedding application's API (A3) -----------------------------------------------

    async def append(self, values: Sequence[bytes]) -> int:
        """Append records as the leader, batched for ``controller.quorum.append.linger.ms``;
        returns the offset of the last of ``values`` once appended (not yet committed: see
        :meth:`wait_committed`). Raises ``NotLeaderError`` on a non-leader."""
        core = self.core
        if core is None or self._stopping:
            raise ConnectionError("node is not running")
        if not values:
            raise ValueError("append needs at least one record")
        if core.role != "leader":
            raise NotLeaderError(core.leader_id, core.epoch)
        loop = self._loop
        assert loop is not None
        # One future per call (a shared one would be cancelled with any one caller), but no
        # other per-call object: the linger batch keeps flat lists.
        done: asyncio.Future[int] = loop.create_future()
        batch = self._appends
        batch.values.extend(values)
        count = len(batch.values)
        batch.ends.append(count)
        batch.done.append(done)
        if count >= APPEND_BATCH_RECORDS_MAX:
            self._flush_appends()
        elif self._linger is None:
            self._linger = loop.call_later(
                self.config.quorum_append_linger_ms / 1000, self._flush_appends
            )
        return await done

    def _fail_appends(self, error: BaseException) -> None:
        batch, self._appends = self._appends, _LingerBatch([], [], [])
        for done in batch.done:
            if not done.done():
                done.set_exception(error)

    def _flush_appends(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        core = self.core
        if not self._appends.values or core is None or self._stopping:
            return
        if self._flushing is not None:
            # Appended after the running flush, together with whatever else arrives.
            self._deferred.append(self._append_pending)
            return
        self._append_pending()
        self._pump()

    def _append_pending(self) -> None:
        core = self.core
        batch = self._appends
        if not batch.values or core is None or self._stopping:
            return
        self._appends = _LingerBatch([], [], [])
        values = batch.values
        now = self.now_ms()
        try:
            last = core.append(values, now)
        except NotLeaderError as e:
            self._appends = batch
            self._fail_appends(e)
            return
        if self.metrics is not None:
            self.metrics.on_append(now, len(values))
        self._commit_marks.append((last, now))
        before = last - len(values)  # the base offset - 1
        for done, end in zip(batch.done, batch.ends, strict=True):
            if not done.done():  # the caller may have been cancelled
                done.set_result(before + end)

    async def wait_committed(self, offset: int, epoch: int | None = None) -> None:
        """Wait until ``offset`` is below the high watermark. With ``epoch`` (the epoch the
        record was appended in), raise :class:`AppendLostError` if the committed log holds
        another epoch's record at that offset (it was truncated by a new leader)."""
        core = self.core
        assert core is not None and self._loop is not None
        if epoch is None:
            epoch = core.epoch
        if offset < core.high_watermark:
            self._check_epoch(offset, epoch)
            return
        if len(self._commit_waiters) >= COMMIT_WAITERS_MAX:
            raise RuntimeError(f"more than {COMMIT_WAITERS_MAX} offsets awaited")
        waiter: asyncio.Future[None] = self._loop.create_future()
        entry = self._commit_waiters.get(offset)
        if entry is None:
            entry = self._commit_waiters[offset] = (epoch, [])
            heapq.heappush(self._commit_offsets, offset)
        entry[1].append(waiter)
        await waiter

    def _check_epoch(self, offset: int, epoch: int) -> None:
        assert self._log is not None
        held = self._log.epoch_at(offset)
        if held is not None and held != epoch:
            raise AppendLostError(f"offset {offset} holds epoch {held}, not {epoch}")

    def _committed(self, high_watermark: int) -> None:
        now = self.now_ms()
        marks = self._commit_marks
        while marks and marks[0][0] < high_watermark:
            _, appended_ms = marks.popleft()
            if self.metrics is not None:
                self.metrics.on_commit(now, appended_ms)
        offsets = self._commit_offsets
        while offsets and offsets[0] < high_watermark:
            offset = heapq.heappop(offsets)
            epoch, waiters = self._commit_waiters.pop(offset)
            try:
                self._check_epoch(offset, epoch)
                error: BaseException | None = None
            except AppendLostError as e:
                error = e
            for waiter in waiters:
                if waiter.done():
                    continue
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)
        if self.on_commit is not None:
            self.on_commit(high_watermark)

    async def run_until_stopped(self) -> None:
        await self.stopped.wait()


def _record_count(records: bytes) -> int:
    """Records in the batches of a Fetch response (for fetch-records-rate)."""
    count = 0
    try:
        for header, _ in iter_batches(records, verify_crc=False):
            count += header.record_count
    except (CorruptRecordError, ValueError):
        pass  # the core validates and rejects; the metric counts what it could read
    return count
