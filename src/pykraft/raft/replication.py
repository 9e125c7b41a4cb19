"""Replication: Fetch and FetchSnapshot on both sides, the leader's high watermark, the
long-poll purgatory, and the start of a leader's epoch (B4-B9, B11, B13).

Functions of the core they are handed (typed as ``context.CoreContext``); they never change
role themselves except through ``core.quorum`` and ``elections.follow`` /
``elections.on_response_epoch``.

Invariants kept here:
* the leader's high watermark only moves to an offset of its own epoch (> the epoch start
  offset) reached by a majority of voters, the leader counting its *flushed* offset (B13);
* a follower's high watermark is the leader's, capped at its own log end offset;
* a follower only truncates above its high watermark (committed data is never lost);
* a Fetch is held (long poll) only when it is at the log end and its sender already knows the
  high watermark the answer would state (KIP-1166, Fetch v18, as Kafka 4.4's leader): a
  replica told of new records before they committed learns of the commit at once, not a
  ``fetch.max.wait`` later (brokers applied the same metadata 500 ms apart before; issue 46).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from pykraft.raft import elections
from pykraft.raft.interfaces import SnapshotWriter
from pykraft.raft.messages import (
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
)
from pykraft.raft.progress import LeaderProgress
from pykraft.raft.requests import RequestKind
from pykraft.raft.roles import Follower, Leader, ReplicaProgress, Role, Unattached
from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.records import CorruptRecordError, build_batch, read_header

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch the leader holds until new data, a new high watermark, or ``deadline_ms``."""

    src: int
    request_id: int
    request: FetchRequest
    deadline_ms: int


@dataclass(slots=True)
class SnapshotFetch:
    """A follower downloading ``snapshot_id``. Invariant: ``position`` bytes are written;
    once ``complete`` (every byte received) no FetchSnapshot is sent: the driver makes the
    file durable (``Ready.snapshot_to_make_durable``) and calls ``RaftCore.on_snapshot_durable``,
    which installs it."""

    snapshot_id: OffsetAndEpoch
    writer: SnapshotWriter
    position: int = 0
    complete: bool = False


@dataclass(slots=True)
class FetchState:
    """The Fetch traffic this replica owns: as a non-leader, its own one Fetch or
    FetchSnapshot in flight, its retry time, where it is in the bootstrap list (D8) and the
    snapshot it is downloading; as leader, the followers' long polls it holds (B6).

    Invariants: at most one own request in flight (``request_id``); a retry is pending
    (``retry_at_ms`` > 0) only while none is; ``parked`` is empty unless leading. Reset on
    every role change (``on_transition``)."""

    request_id: int | None = None  # the one Fetch/FetchSnapshot in flight
    retry_at_ms: int = 0  # backed off until then (0: no retry pending)
    bootstrap_cursor: int = 0  # D8: the next bootstrap server (or voter) to ask
    snapshot: SnapshotFetch | None = None
    parked: dict[tuple[int, int], ParkedFetch] = field(default_factory=dict)
    # As a non-leader: when a Fetch answer last left nothing committed unread (the log end
    # offset at or past the leader's high watermark), Kafka's lastCaughtUpTimestamp as the
    # follower sees it; -1 since the last role change until then.
    caught_up_ms: int = -1

    def released(self, request_id: int) -> None:
        """``request_id`` was answered or failed."""
        if self.request_id == request_id:
            self.request_id = None

    def failed(self, retry_at_ms: int) -> None:
        """The fetch went unanswered or was refused: send the next at ``retry_at_ms``."""
        self.retry_at_ms = retry_at_ms


def on_transition(core: CoreContext, old: Role, new: Role) -> None:
    """A role change: forget the fetch in flight and its retry; a former leader answers
    every held Fetch NOT_LEADER_OR_FOLLOWER; a snapshot download survives only while
    following."""
    fetch = core.fetch
    fetch.request_id = None
    fetch.retry_at_ms = 0
    fetch.caught_up_ms = -1
    if isinstance(old, Leader):
        drain_purgatory(core, ErrorCode.not_leader_or_follower)
    if fetch.snapshot is not None and not isinstance(new, Follower):
        fetch.snapshot.writer.abort()
        fetch.snapshot = None


# -- leader: epoch start, appends, high watermark --------------------------------------------


def leader_append(core: CoreContext, leader: Leader, values: Sequence[bytes], now_ms: int) -> int:
    log = core.log
    ts = core.config.timestamp_ms(now_ms)
    return core.append_own(build_batch(log.end_offset, leader.epoch, values, ts), now_ms) - 1


def update_high_watermark(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """B7 + B4 + B13: majority of voters' offsets, own offset counted once flushed, only
    past the epoch start offset, never backwards."""
    own = None if core.is_observer else core.log.flushed_offset
    candidate = leader.progress.high_watermark_candidate(len(core.voters), own)
    if candidate > leader.epoch_start_offset and core.set_high_watermark(candidate):
        complete_purgatory(core, now_ms)


def send_begin_quorum(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """B8: tell voters that have not fetched lately (or ever) about this epoch; resent every
    half fetch timeout."""
    if leader.begin_quorum_deadline_ms > now_ms:
        return
    period = max(core.config.fetch_timeout_ms // 2, 1)
    leader.begin_quorum_deadline_ms = now_ms + period
    for vid, progress in leader.progress.voters.items():
        if progress.last_fetch_ms >= 0 and progress.last_fetch_ms > now_ms - period:
            continue
        if core.can_send(vid, RequestKind.BEGIN, now_ms):
            core.send(
                vid,
                BeginQuorumEpochRequest(
                    core.config.cluster_id,
                    leader.epoch,
                    core.local_key.id,
                    progress.key,
                    core.leader_endpoints(),
                ),
                RequestKind.BEGIN,
                now_ms,
            )


def _note_fetch(core: CoreContext, leader: Leader, key: ReplicaKey, now_ms: int) -> ReplicaProgress:
    """Record contact from a fetching replica (B9, D5: ``LeaderProgress.note_fetch``)."""
    return leader.progress.note_fetch(
        key, core.voters, not core.is_observer, now_ms, core.config.check_quorum_ms
    )


# -- leader: serving Fetch and FetchSnapshot ----------------------------------------------


def _leader_error(core: CoreContext, cluster_id: str | None, epoch: int) -> ErrorCode | None:
    if not core.config.accepts_cluster(cluster_id):
        return ErrorCode.inconsistent_cluster_id
    if epoch < core.epoch:
        return ErrorCode.fenced_leader_epoch
    if epoch > core.epoch:
        return ErrorCode.unknown_leader_epoch
    if not isinstance(core.state, Leader):
        return ErrorCode.not_leader_or_follower
    return None


def _fetch_response(
    core: CoreContext,
    error: ErrorCode,
    *,
    records: bytes = b"",
    diverging: OffsetAndEpoch | None = None,
    snapshot_id: OffsetAndEpoch | None = None,
) -> FetchResponse:
    return FetchResponse(
        error,
        core.epoch,
        core.leader_id,
        _reported_high_watermark(core),
        core.log.start_offset,
        records,
        diverging,
        snapshot_id,
        core.leader_endpoints(),
    )


def _reported_high_watermark(core: CoreContext) -> int:
    """The high watermark a Fetch answer states: the leader's once it has passed the start
    offset of its epoch (B4), else -1 (unknown), as Kafka answers. Before that a new leader
    holds what it learned as a follower, which can be below what another follower already
    learned from the previous leader, and so can any non-leader; a follower must never be
    told a lower one (B7), and Kafka's followers treat it as fatal ("Non-monotonic update of
    high watermark", found in a mixed quorum, tests/interop)."""
    state = core.state
    if isinstance(state, Leader) and core.high_watermark > state.epoch_start_offset:
        return core.high_watermark
    return -1


def _validate_position(core: CoreContext, req: FetchRequest) -> FetchResponse | None:
    """B5: a DivergingEpoch or SnapshotId answer when the fetch position is not a prefix of
    our log; None when it is."""
    log = core.log
    offset, last_epoch = req.fetch_offset, req.last_fetched_epoch
    snapshots = core.snapshots
    latest = snapshots.latest()
    # Kafka's validateOffsetAndEpoch: at the log start, the epoch is the oldest snapshot's
    # (the log start's), which is the latest unless metadata.max.retention.* kept more.
    earliest = snapshots.earliest()
    if offset < log.start_offset or (
        offset == log.start_offset > 0 and earliest is not None and last_epoch != earliest.epoch
    ):
        return _fetch_response(core, ErrorCode.none, snapshot_id=latest)
    end = log.end_offset_for_epoch(last_epoch)
    if end.epoch != last_epoch or offset > end.offset:
        # An epoch older than everything the log holds resolves to the log start: there is
        # no batch boundary to truncate to there, so send the snapshot (Kafka does the same).
        if end.offset <= log.start_offset and latest is not None and log.start_offset > 0:
            return _fetch_response(core, ErrorCode.none, snapshot_id=latest)
        return _fetch_response(core, ErrorCode.none, diverging=end)
    return None


def handle_fetch_request(
    core: CoreContext, src: int, rid: int, req: FetchRequest, now_ms: int
) -> None:
    error = _leader_error(core, req.cluster_id, req.current_leader_epoch)
    if error is None and (req.fetch_offset < 0 or req.last_fetched_epoch < 0):
        error = ErrorCode.invalid_request
    if error is not None:
        core.respond(src, rid, _fetch_response(core, error))
        return
    leader = core.state
    assert isinstance(leader, Leader)
    progress = _note_fetch(core, leader, req.replica_key, now_ms)
    answer = _validate_position(core, req)
    if answer is not None:
        core.respond(src, rid, answer)
        return
    LeaderProgress.note_position(progress, req.fetch_offset, core.log.end_offset, now_ms)
    hwm_before = core.high_watermark
    update_high_watermark(core, leader, now_ms)
    if (
        req.fetch_offset < core.log.end_offset
        or req.max_wait_ms <= 0
        or (core.high_watermark != hwm_before)
        or req.high_watermark < _reported_high_watermark(core)
    ):
        core.respond(src, rid, _answer_fetch(core, req))
    else:  # nothing new: hold it (long poll, B6)
        core.fetch.parked[(src, rid)] = ParkedFetch(src, rid, req, now_ms + req.max_wait_ms)


def _answer_fetch(core: CoreContext, req: FetchRequest) -> FetchResponse:
    max_bytes = min(req.max_bytes, core.config.fetch_max_bytes)
    return _fetch_response(core, ErrorCode.none, records=core.log.read(req.fetch_offset, max_bytes))


def complete_purgatory(core: CoreContext, now_ms: int) -> None:
    """New data or a new high watermark: answer every held Fetch."""
    if not core.fetch.parked:
        return
    parked = list(core.fetch.parked.values())
    core.fetch.parked.clear()
    for p in parked:
        core.respond(p.src, p.request_id, _answer_fetch(core, p.request))


def expire_purgatory(core: CoreContext, now_ms: int) -> None:
    due = [k for k, p in core.fetch.parked.items() if p.deadline_ms <= now_ms]
    for k in due:
        p = core.fetch.parked.pop(k)
        core.respond(p.src, p.request_id, _answer_fetch(core, p.request))


def drain_purgatory(core: CoreContext, error: ErrorCode) -> None:
    """Leaving the leader role: answer every held Fetch with ``error`` and the new state."""
    parked = list(core.fetch.parked.values())
    core.fetch.parked.clear()
    for p in parked:
        core.respond(p.src, p.request_id, _fetch_response(core, error))


def handle_fetch_snapshot_request(
    core: CoreContext, src: int, rid: int, req: FetchSnapshotRequest, now_ms: int
) -> None:
    sid = req.snapshot_id
    error = _leader_error(core, req.cluster_id, req.current_leader_epoch)
    size = None
    if error is None:
        leader = core.state
        assert isinstance(leader, Leader)
        _note_fetch(core, leader, req.replica_key, now_ms)
        size = core.snapshots.size(sid)
        if size is None:
            error = ErrorCode.snapshot_not_found
        elif not 0 <= req.position <= size:
            error = ErrorCode.position_out_of_range
    if error is not None or size is None:
        core.respond(
            src,
            rid,
            FetchSnapshotResponse(
                error or ErrorCode.none,
                core.epoch,
                core.leader_id,
                sid,
                leader_endpoints=core.leader_endpoints(),
            ),
        )
        return
    max_bytes = min(req.max_bytes, core.config.fetch_snapshot_max_bytes)
    chunk = core.snapshots.read(sid, req.position, max_bytes)
    core.respond(
        src,
        rid,
        FetchSnapshotResponse(
            ErrorCode.none, core.epoch, core.leader_id, sid, size, req.position, chunk
        ),
    )


# -- followers, observers and the unattached: fetching ------------------------------------


def bootstrap_id(index: int) -> int:
    """The destination id of bootstrap server ``index``: negative, never a node id (the
    driver routes by ``Outbound.endpoint``; the answer may come back from any src)."""
    return -2 - index


def send_fetch(core: CoreContext, role: object, now_ms: int) -> None:
    """Keep exactly one Fetch (or FetchSnapshot) in flight: to the leader when following,
    else to the voters in turn (bootstrap discovery, D8 / KIP-996's Unattached)."""
    fetch = core.fetch
    if fetch.request_id is not None or fetch.retry_at_ms > now_ms:
        return
    if fetch.snapshot is not None and fetch.snapshot.complete:
        return  # the fetched snapshot is being made durable: the log is reset after it
    local = core.local_key.id
    endpoint: Endpoint | None = None
    if isinstance(role, Follower) and not role.bootstrap_fetching:
        dst = role.leader_id
    elif isinstance(role, Follower | Unattached):
        # D8: ask the bootstrap servers in turn when configured, else the known voters.
        servers = core.bootstrap_servers
        count = len(servers) or len(core.voters.others(local))
        if not count:
            core.fetch.retry_at_ms = 0  # nobody to ask: no retry pending
            return
        i = core.fetch.bootstrap_cursor % count
        core.fetch.bootstrap_cursor += 1
        if servers:
            dst, endpoint = bootstrap_id(i), servers[i]
        else:
            dst = core.voters.others(local)[i]
    else:
        return
    config = core.config
    sf = core.fetch.snapshot
    if sf is not None and isinstance(role, Follower) and dst == role.leader_id:
        body: FetchRequest | FetchSnapshotRequest = FetchSnapshotRequest(
            config.cluster_id,
            core.local_key,
            core.epoch,
            sf.snapshot_id,
            sf.position,
            config.fetch_snapshot_max_bytes,
        )
        kind = RequestKind.SNAPSHOT
    else:
        log = core.log
        body = FetchRequest(
            config.cluster_id,
            core.local_key,
            core.epoch,
            log.end_offset,
            log.last_fetched_epoch(),
            config.fetch_max_wait_ms,
            config.fetch_max_bytes,
            core.high_watermark,  # KIP-1166: a leader that committed more answers at once
        )
        kind = RequestKind.FETCH
    core.fetch.request_id = core.send(dst, body, kind, now_ms, endpoint)
    core.fetch.retry_at_ms = 0  # served: a retry time is pending only until a fetch goes


def _leader_named(core: CoreContext, src: int, leader_id: int, now_ms: int) -> None:
    """D8: a bootstrap server named the leader we follow: ask the leader itself again, for
    one more fetch timeout, instead of going round the bootstrap servers for ever (a wiped
    observer whose leader joined the voters after its configured set did, seeds 6122, 7940)."""
    role = core.state
    if (
        isinstance(role, Follower)
        and role.bootstrap_fetching
        and src != leader_id == role.leader_id
        and core.leader_endpoints()
    ):
        role.bootstrap_fetching = False
        role.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms


def _accept_from_leader(
    core: CoreContext, src: int, error: ErrorCode, now_ms: int
) -> Follower | None:
    """The Follower role if this answer is a successful one from our leader; else back off."""
    role = core.state
    if not isinstance(role, Follower) or role.leader_id != src or error != ErrorCode.none:
        core.fetch.failed(now_ms + core.config.retry_backoff_ms)
        return None
    role.fetched_from_leader = True
    role.bootstrap_fetching = False
    role.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms
    return role


def _stale_answer(core: CoreContext, epoch: int, now_ms: int) -> bool:
    """An answer from an older epoch (a top-level error such as BROKER_NOT_AVAILABLE from a
    node still starting has epoch -1) says nothing: wait the retry backoff before the next
    Fetch, as Kafka backs off a failed request (an observer went round three starting voters
    thousands of times a second without it)."""
    if epoch < core.epoch:
        core.fetch.failed(now_ms + core.config.retry_backoff_ms)
        return True
    return False


def handle_fetch_response(core: CoreContext, src: int, resp: FetchResponse, now_ms: int) -> None:
    if _stale_answer(core, resp.epoch, now_ms):
        return
    if elections.on_response_epoch(core, resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
        return
    _leader_named(core, src, resp.leader_id, now_ms)
    if _accept_from_leader(core, src, resp.error, now_ms) is None:
        return
    log = core.log
    if resp.diverging_epoch is not None:
        d = resp.diverging_epoch
        # Kafka's truncateToEndOffset: when our log holds the leader's epoch, truncate to
        # the lesser end offset; when it does not, to our own end of the epoch below it (a
        # batch boundary of ours; the next Fetch finds the real divergence).
        local = log.end_offset_for_epoch(d.epoch)
        target = min(d.offset, local.offset) if local.epoch == d.epoch else local.offset
        target = max(min(target, log.end_offset), log.start_offset)
        # Invariant: the committed prefix is never truncated (B7).
        assert target >= min(core.high_watermark, log.end_offset), (target, core.high_watermark)
        log.truncate_to(target)
        core.truncated(target, now_ms)
    elif resp.snapshot_id is not None:
        sid = resp.snapshot_id
        core.fetch.snapshot = SnapshotFetch(sid, core.snapshots.create(sid))
    elif resp.records and not _append_fetched(core, resp.records, now_ms):
        core.fetch.failed(now_ms + core.config.retry_backoff_ms)
        return
    else:
        # Only a plain records answer says our log is a prefix of the leader's: after a
        # DivergingEpoch or SnapshotId answer our tail may still differ (Kafka's rule).
        core.set_high_watermark(min(resp.high_watermark, log.end_offset))
        if log.end_offset >= resp.high_watermark:
            core.fetch.caught_up_ms = now_ms


def _append_fetched(core: CoreContext, records: bytes, now_ms: int) -> bool:
    """Append what the leader sent, from our log end offset (skipping an already-held batch
    that straddles it is not needed: the leader reads from our end offset)."""
    log = core.log
    try:
        if read_header(records).base_offset != log.end_offset:
            return False
        log.append(records)
    except (CorruptRecordError, ValueError):
        return False  # refetch; never crash on bad input (I4)
    core.appended_fetched(records, now_ms)
    return True


def handle_fetch_snapshot_response(
    core: CoreContext, src: int, resp: FetchSnapshotResponse, now_ms: int
) -> None:
    if _stale_answer(core, resp.epoch, now_ms):
        return
    if elections.on_response_epoch(core, resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
        return
    sf = core.fetch.snapshot
    if resp.error in (ErrorCode.snapshot_not_found, ErrorCode.position_out_of_range) and sf:
        sf.writer.abort()  # start over with a plain Fetch
        core.fetch.snapshot = None
    if _accept_from_leader(core, src, resp.error, now_ms) is None or sf is None:
        return
    if resp.snapshot_id != sf.snapshot_id or resp.position != sf.position:
        return  # not the chunk we asked for: ask again
    sf.writer.append(resp.chunk)
    sf.position += len(resp.chunk)
    if sf.position < resp.size:
        return
    # Every byte is here: the fsync (a large snapshot's last dirty pages) is the driver's,
    # off the event loop; the install follows in ``snapshot_durable``.
    sf.complete = True
    core.snapshot_fetched(sf.writer)


def snapshot_durable(core: CoreContext, writer: SnapshotWriter, valid: bool, now_ms: int) -> None:
    """The driver made the fetched snapshot durable (``valid``: its bytes checked out as a
    snapshot; a refused one is dropped and fetched again): publish it, reset the log to it."""
    sf = core.fetch.snapshot
    if sf is None or sf.writer is not writer or not sf.complete:
        return  # dropped meanwhile (a role change): the driver's work is not wanted
    core.fetch.snapshot = None
    if not valid:
        sf.writer.abort()
        return
    try:
        sf.writer.freeze()  # publish: already durable and validated (I4)
    except ValueError:
        sf.writer.abort()
        return
    sid = sf.snapshot_id
    core.log.reset_to_snapshot(sid)
    core.log_reset(sid)
    core.snapshots.delete_before(sid)
    core.set_high_watermark(sid.offset)
    core.snapshot_installed(sid, now_ms)
