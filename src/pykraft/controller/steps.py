"""KIP-435 incremental reassignment (SPEC F3, F5): one step of a partition at a time, batches across
partitions (pure functions; the controller applies them in ``reassign``).

A partition moving from its current replicas (CR) to a final target (FTR) goes through a
sequence of ordinary KIP-455 reassignments, the *steps*: each step's target (TR) is reached
the KIP-455 way (new replicas added, the step completes once every TR replica is in sync, the
dropped replicas go then), and the next step starts from there. ``next_step`` computes TR from
CR and FTR with ``reassignment.parallel.replica.count`` = R, following the seed's
"Calculating a Reassignment Step":

1. When the rest of the move fits in one step (at most R replicas to drop and at most R to
   add), TR is FTR itself, in FTR's order: the last step. With the default R (unbounded)
   every reassignment is a single step: plain KIP-455.
2. Otherwise, when FTR's preferred leader (its first replica) is not yet a replica, the step
   adds it and drops nothing (the seed's "in the first step we'll elect the new preferred
   leader"); once it is in sync the controller elects it (a preferred election). It adds it
   alone unless the in-sync replicas plus the added ones would stay below
   ``min.insync.replicas``: then it adds FTR's next new replicas too, up to that (the same
   exception as in 3).
3. Otherwise the step drops DR = the first R replicas of CR that FTR does not hold (in CR's
   order) and adds NR = the next replicas of FTR not yet in CR (in FTR's order), as many as
   keep the replica count at size(FTR), at most R; and at least enough that the in-sync
   replicas kept plus NR reach ``min.insync.replicas`` (the seed's exception to R, so that
   producers with acks=all can continue).
4. TR lists the FTR replicas it holds in FTR's order, then the old replicas it keeps in CR's
   order.

The seed's example, (0,1,2,3,4) -> (5,6,7,8,9), leader 0, R = 2, goes (5,0,1,2,3,4),
(5,6,2,3,4), (5,6,7,8,4), (5,6,7,8,9).

Batches (``plan_batch``): ``reassignment.parallel.partition.count`` = P bounds the partitions
with a step in flight; ``reassignment.parallel.leader.movements`` = L bounds the leader
movements in flight (a step in flight that drops the current leader or changes the preferred
leader; a preferred election between steps, which completes in its own record, counts in the
batch that makes it); ``reassignment.max.concurrent.replica.movements`` = M bounds the
replicas being added across the cluster at once (the seed's fourth config: the sum of every
moving partition's adding replicas, plain KIP-455 moves included). A batch takes the actions
that move a leader first, up to what L leaves, and fills the remaining partition slots with
the others (the seed's "Collecting a reassignment batch"), skipping a step whose new
replicas do not fit in what M leaves (unless nothing is being added at all: a step that must
add more than M, for min.insync.replicas, then runs alone, so no move waits forever); the limits are read each time a batch is planned, so a
changed config applies from the next step on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "INT_MAX",
    "KIP_455",
    "LIMIT_CONFIGS",
    "Action",
    "InFlight",
    "Limits",
    "moves_leader",
    "next_step",
    "plan_batch",
]

INT_MAX: Final = 2**31 - 1
PARALLEL_REPLICA_COUNT: Final = "reassignment.parallel.replica.count"
PARALLEL_PARTITION_COUNT: Final = "reassignment.parallel.partition.count"
PARALLEL_LEADER_MOVEMENTS: Final = "reassignment.parallel.leader.movements"
MAX_CONCURRENT_REPLICA_MOVEMENTS: Final = "reassignment.max.concurrent.replica.movements"
LIMIT_CONFIGS: Final = (
    PARALLEL_REPLICA_COUNT,
    PARALLEL_PARTITION_COUNT,
    PARALLEL_LEADER_MOVEMENTS,
    MAX_CONCURRENT_REPLICA_MOVEMENTS,
)


@dataclass(frozen=True, slots=True)
class Limits:
    """The four KIP-435 limits; the defaults (unbounded) reproduce plain KIP-455."""

    replicas: int = INT_MAX  # reassignment.parallel.replica.count
    partitions: int = INT_MAX  # reassignment.parallel.partition.count
    leader_movements: int = INT_MAX  # reassignment.parallel.leader.movements
    replica_movements: int = INT_MAX  # reassignment.max.concurrent.replica.movements

    @classmethod
    def from_configs(cls, configs: dict[str, str]) -> Limits:
        def read(name: str) -> int:
            try:
                return max(1, int(configs.get(name, INT_MAX)))
            except ValueError:
                return INT_MAX

        return cls(
            read(PARALLEL_REPLICA_COUNT),
            read(PARALLEL_PARTITION_COUNT),
            read(PARALLEL_LEADER_MOVEMENTS),
            read(MAX_CONCURRENT_REPLICA_MOVEMENTS),
        )


KIP_455: Final = Limits()  # the defaults: every reassignment in one step


def next_step(
    current: Sequence[int],
    final: Sequence[int],
    *,
    in_sync: Iterable[int] = (),
    max_replicas: int = INT_MAX,
    min_insync: int = 1,
) -> tuple[int, ...]:
    """The target of the next step from ``current`` towards ``final`` (see the module
    docstring); ``final`` itself when the move fits in one step."""
    cr, ftr = tuple(current), tuple(final)
    excess = [b for b in cr if b not in ftr]
    missing = [b for b in ftr if b not in cr]
    if len(excess) <= max_replicas and len(missing) <= max_replicas:
        return ftr
    synced = set(in_sync)
    if ftr[0] not in cr:
        dropped: list[int] = []
        # The new preferred leader (missing[0]), and more while below min.insync.replicas.
        kept_in_sync = sum(1 for b in cr if b in synced)
        count = max(1, min(len(missing), min_insync - kept_in_sync))
    else:
        dropped = excess[:max_replicas]
        kept = [b for b in cr if b not in dropped]
        count = min(max_replicas, max(0, len(ftr) - len(kept)))
        kept_in_sync = sum(1 for b in kept if b in synced)
        count = max(count, min(len(missing), min_insync - kept_in_sync))
    added = missing[:count]
    holds = set(cr) - set(dropped) | set(added)
    return tuple(b for b in ftr if b in holds) + tuple(b for b in cr if b in holds and b not in ftr)


def moves_leader(current: Sequence[int], target: Sequence[int], leader: int) -> bool:
    """Whether going from ``current`` to ``target`` moves leadership: the leader is dropped
    or the preferred leader changes."""
    return leader not in target or (bool(current) and bool(target) and current[0] != target[0])


@dataclass(frozen=True, slots=True)
class Action:
    """One partition's next action: a step to ``target`` (or, with ``elect``, a preferred
    election between steps); ``key`` names the partition."""

    key: tuple[object, int]
    target: tuple[int, ...]
    leader_movement: bool
    elect: bool = False
    adds: int = 0  # replicas the step adds (reassignment.max.concurrent.replica.movements)


@dataclass(frozen=True, slots=True)
class InFlight:
    """What the steps in flight already use of the limits."""

    partitions: int = 0  # partitions moving (stepped or plain KIP-455)
    leader_movements: int = 0  # stepped moves in flight that move their leader
    replica_movements: int = 0  # replicas being added, over every moving partition


def plan_batch(
    candidates: Sequence[Action], in_flight: InFlight | int, limits: Limits
) -> list[Action]:
    """The actions to start now: steps into the partition slots ``limits.partitions``
    leaves, leader movements first and no more than ``limits.leader_movements`` leaves
    (preferred elections take no partition slot: they finish at once, but count as leader
    movements), each step's new replicas within what ``limits.replica_movements`` leaves."""
    used = in_flight if isinstance(in_flight, InFlight) else InFlight(partitions=in_flight)
    slots = max(0, limits.partitions - used.partitions)
    movements_left = max(0, limits.leader_movements - used.leader_movements)
    replicas_left = max(0, limits.replica_movements - used.replica_movements)
    movers = [a for a in candidates if a.leader_movement]
    others = [a for a in candidates if not a.leader_movement]
    chosen: list[Action] = []
    idle = used.replica_movements == 0  # nothing being added: any one step may start

    def fits(action: Action) -> bool:
        return action.adds <= replicas_left or (idle and not any(a.adds for a in chosen))

    for action in movers:
        if movements_left == 0:
            break
        if not action.elect:
            if slots == 0 or not fits(action):
                continue
            slots -= 1
            replicas_left = max(0, replicas_left - action.adds)
        chosen.append(action)
        movements_left -= 1
    for action in others:
        if slots == 0:
            break
        if not fits(action):
            continue
        slots -= 1
        replicas_left = max(0, replicas_left - action.adds)
        chosen.append(action)
    return chosen
