"""Elections: Vote (with KIP-996 pre-votes), BeginQuorumEpoch, EndQuorumEpoch, and the timers
of every role (B2, B3, B8-B10, C1-C5, D7).

Functions of the ``RaftCore`` they are handed, like ``replication.py``; roles change only
through ``core.quorum`` (QuorumState owns the transition table).

Invariants kept here:
* a standard vote is granted at most once per epoch and made durable before the answer leaves;
* only voters' answers count toward an election, against the *current* voter set (which may
  change between two answers at kraft.version 1);
* Vote and BeginQuorumEpoch are handled whether or not the sender or the receiver is in the
  receiver's voter set (D7): the voter set may not have replicated yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from pykraft.raft.control import bootstrap_batches, control_batch
from pykraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.quorum import VoteResult, vote_result
from pykraft.raft.requests import RequestKind
from pykraft.raft.roles import (
    FOREVER,
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    Unattached,
)
from pykraft.raft.types import NO_LEADER, Endpoint, ReplicaKey
from pykraft.records import leader_change_batch

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext
    from pykraft.raft.requests import SentRequest

RETRY_BACKOFF_BASE_MS = 100  # Kafka's base for the candidate's exponential backoff


# -- learning of epochs and leaders -------------------------------------------------------


def follow(
    core: CoreContext, epoch: int, leader_id: int, endpoints: tuple[Endpoint, ...], now_ms: int
) -> None:
    """Follow ``leader_id`` in ``epoch`` (>= ours), going through Unattached where the
    table has no direct edge (a leader learning of a newer leader)."""
    qs = core.quorum
    role = qs.role
    if isinstance(role, Follower) and role.epoch == epoch and role.leader_id == leader_id:
        return
    if isinstance(role, Leader | Resigned) and epoch == role.epoch:
        return  # two leaders in one epoch cannot be: the sender is wrong, ignore it
    if isinstance(role, Follower) and epoch == role.epoch:
        return  # a different leader in our epoch: bad input, ignore it
    if isinstance(role, Leader):
        qs.to_unattached(epoch, now_ms)
    qs.to_follower(epoch, leader_id, endpoints, now_ms)


def on_response_epoch(
    core: CoreContext, epoch: int, leader_id: int, endpoints: tuple[Endpoint, ...], now_ms: int
) -> bool:
    """Kafka's ``maybeHandleCommonResponse``: learn a newer epoch or the leader of ours
    from any response. True when the role changed (or the response is from an older
    epoch): the caller must ignore the rest of the response."""
    qs = core.quorum
    if epoch < qs.epoch:
        return True
    local = core.local_key.id
    if epoch > qs.epoch:
        if leader_id not in (NO_LEADER, local):
            follow(core, epoch, leader_id, endpoints, now_ms)
        else:
            qs.to_unattached(epoch, now_ms)
        return True
    # Same epoch: only a leader we did not know is news. A Prospective that remembers
    # the leader of its epoch keeps counting pre-votes whose answer still names that
    # leader (else two followers that lost the leader ping-pong forever: bug 3 in
    # tests/sim/test_regressions.py).
    role = qs.role
    unknown = isinstance(role, Unattached | Candidate) or (
        isinstance(role, Prospective) and role.leader_id == NO_LEADER
    )
    if leader_id not in (NO_LEADER, local) and unknown:
        follow(core, epoch, leader_id, endpoints, now_ms)
        return True
    return False


# -- Vote (B3, C2-C4) ---------------------------------------------------------------------


def _vote_response(
    core: CoreContext, error: ErrorCode, granted: bool, pre_vote: bool
) -> VoteResponse:
    qs = core.quorum
    return VoteResponse(error, qs.epoch, qs.leader_id, granted, core.leader_endpoints(), pre_vote)


def handle_vote(core: CoreContext, req: VoteRequest, now_ms: int) -> VoteResponse:
    if not core.config.accepts_cluster(req.cluster_id):
        return _vote_response(core, ErrorCode.inconsistent_cluster_id, False, req.pre_vote)
    if not req.voter_key.names(core.local_key):
        return _vote_response(core, ErrorCode.invalid_voter_key, False, req.pre_vote)
    qs = core.quorum
    if req.candidate_epoch < qs.epoch:
        return _vote_response(core, ErrorCode.fenced_leader_epoch, False, req.pre_vote)
    if req.candidate_epoch > qs.epoch:
        # A higher epoch, standard vote or pre-vote, moves us to Unattached first (B3, C3).
        qs.to_unattached(req.candidate_epoch, now_ms)
    log = core.log
    log_ok = (req.last_offset_epoch, req.last_offset) >= (
        log.last_fetched_epoch(),
        log.end_offset,
    )
    role = qs.role
    # D7: neither the candidate nor this replica needs to be in our voter set: it may not
    # have replicated yet. Pre-vote is what keeps a removed voter from disrupting (C).
    granted = req.candidate_key.id != core.local_key.id and role.can_grant_vote(
        req.candidate_key, log_ok, req.pre_vote
    )
    if granted and not req.pre_vote and qs.voted_key is None:
        qs.add_vote(req.candidate_key, now_ms)  # durable before the answer leaves (B2)
    return _vote_response(core, ErrorCode.none, granted, req.pre_vote)


def handle_vote_response(
    core: CoreContext, src: int, req: SentRequest, resp: VoteResponse, now_ms: int
) -> None:
    qs = core.quorum
    role = qs.role
    if (
        req.pre_vote
        and isinstance(role, Prospective)
        and (
            resp.error == ErrorCode.unsupported_version
            or (resp.error == ErrorCode.none and not resp.pre_vote)
        )
    ):
        qs.to_candidate(now_ms)  # the peer predates KIP-996: old behaviour (C4)
        check_election(core, now_ms)
        return
    if on_response_epoch(core, resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
        return
    if resp.error != ErrorCode.none:
        core.backoff(src, RequestKind.VOTE, now_ms)
        return
    if (isinstance(role, Prospective) and req.pre_vote) or (
        isinstance(role, Candidate) and not req.pre_vote
    ):
        (role.granted if resp.vote_granted else role.rejected).add(src)
    else:
        return  # e.g. a pre-vote answer reaching a Candidate: ignored (C4)
    check_election(core, now_ms)


def _tally(role: Prospective | Candidate, voter_ids: frozenset[int]) -> VoteResult:
    """Only current voters count: the voter set may have changed since the requests left."""
    return vote_result(role.granted & voter_ids, role.rejected & voter_ids, len(voter_ids))


def become_leader(core: CoreContext, now_ms: int) -> None:
    """Candidate won: switch to Leader and write the LeaderChange record (B4)."""
    qs = core.quorum
    log = core.log
    single = qs.is_only_voter
    leader = qs.to_leader(
        now_ms, log.end_offset, FOREVER if single else core.config.check_quorum_ms
    )
    voters = qs.voters
    granting = [voters.voters[v].key for v in sorted(leader.granting_voters) if v in voters.ids]
    offset = log.end_offset
    ts = core.config.timestamp_ms(now_ms)
    batch = leader_change_batch(offset, leader.epoch, ts, core.local_key.id, voters.keys, granting)
    control = core.control
    if control.kraft_version >= 1 and (control.voters_offset or -1) < 0:
        # D3: the voter set came from the bootstrap checkpoint only (each replica's own
        # file): the first leader writes KRaftVersion and Voters into the log with its
        # LeaderChange, in one batch, so that every replica learns them by replication.
        parts = [batch, bootstrap_batches(0, leader.epoch, ts, control.kraft_version, voters)]
        batch = control_batch(offset, leader.epoch, ts, parts)
    core.append_own(batch, now_ms)


def check_election(core: CoreContext, now_ms: int) -> None:
    """Act on a decided (pre-)vote: Prospective -> Candidate or back; Candidate -> Leader or
    backoff."""
    qs = core.quorum
    role = qs.role
    if isinstance(role, Prospective):
        result = _tally(role, qs.voters.ids)
        if result is VoteResult.WON:
            qs.to_candidate(now_ms)
            check_election(core, now_ms)
        elif result is VoteResult.LOST:
            prospective_lost(core, role, now_ms)
    elif isinstance(role, Candidate) and role.backoff_until_ms is None:
        result = _tally(role, qs.voters.ids)
        if result is VoteResult.WON:
            become_leader(core, now_ms)
        elif result is VoteResult.LOST:
            role.backoff_until_ms = now_ms + _election_backoff_ms(core, role.retries)


def prospective_lost(core: CoreContext, role: Prospective, now_ms: int) -> None:
    """C2: pre-vote lost or timed out -> Follower of the known leader, else Unattached."""
    qs = core.quorum
    if role.leader_id != NO_LEADER and (role.leader_endpoints or role.leader_id in qs.voters.ids):
        qs.to_follower(role.epoch, role.leader_id, role.leader_endpoints, now_ms)
    else:
        qs.to_unattached(role.epoch, now_ms)


def _election_backoff_ms(core: CoreContext, retries: int) -> int:
    """Kafka's binary exponential backoff after a lost election, capped (B10)."""
    spread = 2 << min(20, max(retries, 1) - 1)
    return min(
        RETRY_BACKOFF_BASE_MS * core.rng.randrange(0, spread),
        core.config.election_backoff_max_ms,
    )


def start_prospective(core: CoreContext, now_ms: int) -> None:
    qs = core.quorum
    qs.to_prospective(now_ms)
    if not core.config.pre_vote:
        qs.to_candidate(now_ms)  # measuring KIP-996: skip the canvassing
    check_election(core, now_ms)


def send_votes(core: CoreContext, role: Prospective | Candidate, now_ms: int) -> None:
    pre_vote = isinstance(role, Prospective)
    log = core.log
    voters = core.quorum.voters
    for dst in voters.others(core.local_key.id):
        if (
            dst in role.granted
            or dst in role.rejected
            or not core.can_send(dst, RequestKind.VOTE, now_ms)
        ):
            continue
        core.send(
            dst,
            VoteRequest(
                core.config.cluster_id,
                role.epoch,
                core.local_key,
                voters.voters[dst].key,
                log.last_fetched_epoch(),
                log.end_offset,
                pre_vote,
            ),
            RequestKind.VOTE,
            now_ms,
        )


# -- BeginQuorumEpoch / EndQuorumEpoch (B8) -----------------------------------------------


def _begin_end_error(core: CoreContext, cluster_id: str | None, epoch: int) -> ErrorCode | None:
    if not core.config.accepts_cluster(cluster_id):
        return ErrorCode.inconsistent_cluster_id
    if epoch < core.quorum.epoch:
        return ErrorCode.fenced_leader_epoch
    return None


def handle_begin(
    core: CoreContext, req: BeginQuorumEpochRequest, now_ms: int
) -> BeginQuorumEpochResponse:
    error = _begin_end_error(core, req.cluster_id, req.leader_epoch)
    if error is None and not req.voter_key.names(core.local_key):
        error = ErrorCode.invalid_voter_key
    if error is None and req.leader_id == core.local_key.id:
        error = ErrorCode.invalid_request
    if error is None:
        # D7: accepted even when we are not (yet) a voter in our own copy of the voter set.
        follow(core, req.leader_epoch, req.leader_id, req.leader_endpoints, now_ms)
    qs = core.quorum
    return BeginQuorumEpochResponse(
        error or ErrorCode.none, qs.epoch, qs.leader_id, core.leader_endpoints()
    )


def handle_end(
    core: CoreContext, req: EndQuorumEpochRequest, now_ms: int
) -> EndQuorumEpochResponse:
    error = _begin_end_error(core, req.cluster_id, req.leader_epoch)
    qs = core.quorum
    if error is None and req.leader_id != core.local_key.id:
        follow(core, req.leader_epoch, req.leader_id, req.leader_endpoints, now_ms)
        role = qs.role
        if isinstance(role, Follower) and role.leader_id == req.leader_id and qs.may_campaign:
            # The leader is gone: elect a successor after a delay by rank (B8), and stop
            # refusing pre-votes on its behalf.
            role.fetch_deadline_ms = now_ms + _successor_delay_ms(core, req.preferred_successors)
            role.fetched_from_leader = False
    return EndQuorumEpochResponse(
        error or ErrorCode.none, qs.epoch, qs.leader_id, core.leader_endpoints()
    )


def _successor_delay_ms(core: CoreContext, successors: tuple[ReplicaKey, ...]) -> int:
    """Kafka's strict exponential delay by position: first 0, then 100, 200, 400... ms;
    not listed -> the maximum backoff."""
    position = next(
        (i for i, k in enumerate(successors) if k.names(core.local_key)), len(successors)
    )
    backoff_max_ms = core.config.election_backoff_max_ms
    if position == 0:
        return 0
    if position >= len(successors):
        return backoff_max_ms
    return min(backoff_max_ms, RETRY_BACKOFF_BASE_MS * (1 << (position - 1)))


def handle_begin_end_response(
    core: CoreContext,
    src: int,
    req: SentRequest,
    resp: BeginQuorumEpochResponse | EndQuorumEpochResponse,
    now_ms: int,
) -> None:
    if on_response_epoch(core, resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
        return
    if resp.error != ErrorCode.none:
        core.backoff(src, req.kind, now_ms)
        return
    role = core.quorum.role
    if isinstance(role, Resigned) and req.kind == RequestKind.END:
        role.unacked.discard(src)


def send_end_quorum(core: CoreContext, role: Resigned, now_ms: int) -> None:
    for dst in sorted(role.unacked):
        if core.can_send(dst, RequestKind.END, now_ms):
            core.send(
                dst,
                EndQuorumEpochRequest(
                    core.config.cluster_id,
                    role.epoch,
                    core.local_key.id,
                    role.preferred_successors,
                    core.endpoints,
                ),
                RequestKind.END,
                now_ms,
            )


# -- timers ---------------------------------------------------------------------------------


def fire_timers(core: CoreContext, now_ms: int) -> bool:
    """Fire the current role's expired timer; True when that changed the role."""
    qs = core.quorum
    role = qs.role
    # Fast path, taken by almost every input: the timer is not due. Only Unattached may act
    # before its deadline (a single voter campaigns at once).
    if role.timer_ms() > now_ms and not isinstance(role, Unattached):
        return False
    generation = qs.generation
    if isinstance(role, Unattached):
        if qs.may_campaign and role.election_deadline_ms == FOREVER:
            # Armed while it could not campaign (its removal looked committed, or it was not a
            # voter yet): it may campaign now, after a normal election timeout.
            role.election_deadline_ms = now_ms + qs.random_election_timeout_ms()
        if not qs.may_campaign:
            if role.election_deadline_ms <= now_ms:
                # An observer never campaigns, but its timer may have been armed while it was
                # a voter (a voter removed, a removed leader resigned): re-arm it, else the
                # driver is asked to poll at a past deadline forever (bug 7 in
                # tests/sim/test_regressions.py). Should it become a voter again, it
                # campaigns when this expires.
                role.election_deadline_ms = now_ms + qs.random_election_timeout_ms()
        # A single voter needs nobody: it campaigns at once (Kafka does the same).
        elif role.election_deadline_ms <= now_ms or qs.is_only_voter:
            start_prospective(core, now_ms)
    elif isinstance(role, Prospective):
        if role.election_deadline_ms <= now_ms:
            prospective_lost(core, role, now_ms)
    elif isinstance(role, Candidate):
        due = (
            role.backoff_until_ms
            if role.backoff_until_ms is not None
            else role.election_deadline_ms
        )
        if due <= now_ms:  # no exponential backoff on a timeout (C5)
            start_prospective(core, now_ms)
    elif isinstance(role, Follower):
        if role.fetch_deadline_ms <= now_ms:
            if not qs.may_campaign:
                role.bootstrap_fetching = True
                role.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms
            else:
                start_prospective(core, now_ms)
    elif isinstance(role, Leader):
        if role.progress.check_quorum_lost(now_ms):
            qs.to_resigned(now_ms, role.progress.successors())  # check quorum (B9)
    elif role.election_deadline_ms <= now_ms:  # Resigned: Unattached at epoch + 1 (C5)
        qs.to_unattached(role.epoch + 1, now_ms, deadline_ms=now_ms)
    return qs.generation != generation
