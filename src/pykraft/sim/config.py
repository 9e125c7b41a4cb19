"""The simulator's inputs (``SimConfig``) and outputs (``SimResult``, ``Violation``).

Everything here is plain data so that a sweep can ship configs to worker processes and results
back (pickle), and a Spark job can turn results into rows (``SimResult.as_row``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from pykraft.raft.config import RaftConfig, check_quorum_period_ms
from pykraft.sim.profiles import FaultProfile, get_profile

if TYPE_CHECKING:
    from pykraft.sim.simulator import Simulation

# ---------------------------------------------------------------------------------------
# The liveness bound.
#
# After the fault phase the simulator heals everything (partitions, lossy links, stopped
# nodes) and requires, within ``liveness_bound_ms(config)`` of simulated time, that a leader
# is elected, that a record appended after the heal commits, and that every node (voters and
# observers) applies it. The budget, from the Raft timeouts (Kafka defaults in brackets):
#
# * in-flight requests lost before the heal time out:        request_timeout_ms      [2000]
# * a leader that lost its majority resigns (check quorum):   1.5 x fetch_timeout_ms  [3000]
# * a follower notices the leader is gone:                    fetch_timeout_ms        [2000]
# * election rounds, each at most 2 x election_timeout_ms (B10 randomised timeout) plus the
#   candidate back-off (election_backoff_max_ms); a round fails only on a split vote, so
#   ELECTION_ROUNDS_ALLOWED rounds make a spurious failure vanishingly rare:
#                                          10 x (2 x 1000 + 1000)                     [30000]
# * commit of the probe record and catch-up of every node, including a snapshot transfer:
#   two fetch timeouts (each covers many long polls of fetch_max_wait_ms):           [4000]
#
# Total with the defaults: LIVENESS_BOUND_MS = 41_000 ms.
ELECTION_ROUNDS_ALLOWED = 10


def liveness_bound_ms(
    *,
    election_timeout_ms: int,
    fetch_timeout_ms: int,
    election_backoff_max_ms: int,
    request_timeout_ms: int,
) -> int:
    resign_ms = check_quorum_period_ms(fetch_timeout_ms)
    rounds_ms = ELECTION_ROUNDS_ALLOWED * (2 * election_timeout_ms + election_backoff_max_ms)
    catch_up_ms = 2 * fetch_timeout_ms
    return request_timeout_ms + resign_ms + fetch_timeout_ms + rounds_ms + catch_up_ms


LIVENESS_BOUND_MS = liveness_bound_ms(
    election_timeout_ms=1000,
    fetch_timeout_ms=2000,
    election_backoff_max_ms=1000,
    request_timeout_ms=2000,
)
assert LIVENESS_BOUND_MS == 41_000


@dataclass(frozen=True, slots=True)
class SimConfig:
    seed: int
    voters: int = 3
    observers: int = 0
    profile: FaultProfile = field(default_factory=lambda: get_profile("none"))
    events: int = 10_000  # events of the fault phase; the heal phase comes after
    pre_vote: bool = True
    # Workload: the leader appends 1..append_records_max records every append_interval_ms
    # on average (uniform in [0.5, 1.5) of it).
    append_interval_ms: int = 50
    append_records_max: int = 3
    # Half the appends through RaftCore.schedule_append (the scheduled-offset invariant
    # checks them), and the controller's listener synced in slices of this many records
    # (side loads of installed snapshots; None: in one go). Off by default, so that the
    # seeds other tests pin keep their runs; tests/sim/test_mechanics.py turns them on.
    schedule_appends: bool = False
    sync_slice_records: int | None = None
    # Every node's application snapshots after about this many committed records (each node
    # draws its own threshold in [0.5, 1.5) of it, so snapshots are not aligned).
    snapshot_interval_records: int = 200
    # Raft timeouts (Kafka's config names without the prefix, defaults from SPEC I1).
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    fetch_max_wait_ms: int = 500
    # Small fetch sizes, so catching up and snapshot transfer take several round trips.
    fetch_max_bytes: int = 16 * 1024
    fetch_snapshot_max_bytes: int = 512
    # Every this many events, the full (non-incremental) audit compares every node's log
    # below its high watermark with the committed history (logs are short: snapshots trim
    # them, so this costs well under a microsecond per event). 0: only at the end.
    audit_every_events: int = 1000
    # Run the core's own ``check_invariants`` after every event (tests of the simulator's
    # checker turn it off to see that the checker alone catches what they break).
    core_self_check: bool = True
    # Ring of recent events reported with a violation.
    last_events: int = 40
    # Test hook, called after every event with the simulation and the event index; used by
    # tests to break things on purpose. Not picklable: leave None in sweeps.
    hook: Callable[[Simulation, int], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        assert 1 <= self.voters <= 9, self.voters
        assert 0 <= self.observers <= 9, self.observers
        assert self.events >= 0, self.events
        assert self.append_interval_ms > 0 and self.append_records_max > 0
        assert self.snapshot_interval_records > 1

    @property
    def liveness_bound_ms(self) -> int:
        return liveness_bound_ms(
            election_timeout_ms=self.election_timeout_ms,
            fetch_timeout_ms=self.fetch_timeout_ms,
            election_backoff_max_ms=self.election_backoff_max_ms,
            request_timeout_ms=self.request_timeout_ms,
        )

    def raft_config(self) -> RaftConfig:
        """The core's settings for this run (the one place they are copied from)."""
        return RaftConfig(
            election_timeout_ms=self.election_timeout_ms,
            fetch_timeout_ms=self.fetch_timeout_ms,
            election_backoff_max_ms=self.election_backoff_max_ms,
            request_timeout_ms=self.request_timeout_ms,
            fetch_max_wait_ms=self.fetch_max_wait_ms,
            fetch_max_bytes=self.fetch_max_bytes,
            fetch_snapshot_max_bytes=self.fetch_snapshot_max_bytes,
            pre_vote=self.pre_vote,
        )

    @classmethod
    def make(cls, seed: int, profile: str = "none", **kwargs: object) -> SimConfig:
        """A config with the profile given by name."""
        return cls(seed=seed, profile=get_profile(profile), **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken invariant (or failed end-of-run validation)."""

    invariant: str  # a stable name, e.g. "one-leader-per-epoch"
    message: str
    time_ms: int
    event_index: int
    node: int | None
    last_events: tuple[str, ...] = ()

    def describe(self, repro: str) -> str:
        lines = [
            f"VIOLATION {self.invariant} at t={self.time_ms} ms, event {self.event_index}"
            + (f", node {self.node}" if self.node is not None else ""),
            f"  {self.message}",
            f"  reproduce: {repro}",
            f"  last {len(self.last_events)} events:",
        ]
        lines += [f"    {e}" for e in self.last_events]
        return "\n".join(lines)


@dataclass(slots=True)
class SimResult:
    seed: int
    profile: str
    voters: int
    observers: int
    pre_vote: bool
    events: int = 0  # events processed (fault phase + heal phase)
    sim_time_ms: int = 0
    elections: int = 0  # distinct (epoch, leader) pairs observed
    max_epoch: int = 0
    committed_offset: int = 0  # global committed log end offset (first offset not committed)
    committed_records: int = 0  # application records (not control records) committed
    appends: int = 0  # append calls accepted by a leader
    snapshots: int = 0  # snapshots created by applications
    snapshots_installed: int = 0  # snapshots fetched by followers and loaded
    messages_sent: int = 0
    messages_dropped: int = 0
    messages_duplicated: int = 0
    requests_failed: int = 0  # RequestFailed delivered (timeouts, connection refused)
    faults: dict[str, int] = field(default_factory=dict)  # injected faults by kind
    # Outcomes of membership operations, "<operation>:<error>" -> count (sim.operations).
    operations: dict[str, int] = field(default_factory=dict)
    voter_changes: int = 0  # VotersRecords in the final leader's history (kraft.version 1)
    final_voters: str = ""  # the final voter set's ids, e.g. "1,3,5"
    invariants_checked: int = 0
    leaderless_ms: int = 0  # simulated time with no live leader
    unavailability_windows: int = 0  # maximal intervals with no live leader
    max_unavailability_ms: int = 0
    time_to_first_leader_ms: int | None = None
    recovery_ms: int | None = None  # heal -> probe record applied everywhere
    fingerprint: str = ""  # hash of the event sequence: equal seeds give equal fingerprints
    fault_phase_events: int = 0  # the --events asked for
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None

    def as_row(self) -> dict[str, object]:
        """A flat dict (one row of a results table)."""
        row = asdict(self)
        row.pop("violation")
        row["faults"] = dict(sorted(self.faults.items()))
        row["violation_invariant"] = self.violation.invariant if self.violation else None
        row["violation_message"] = self.violation.message if self.violation else None
        return row

    def repro_command(self) -> str:
        return (
            f"pykraft dev sim run --seed {self.seed} --voters {self.voters} --observers "
            f"{self.observers} --profile {self.profile} --events {self.fault_phase_events}"
            + ("" if self.pre_vote else " --no-pre-vote")
        )

    def summary(self) -> str:
        faults = ", ".join(f"{k}={v}" for k, v in sorted(self.faults.items())) or "none"
        lines = [
            f"seed {self.seed}  profile {self.profile}  voters {self.voters}  "
            f"observers {self.observers}  pre-vote {'on' if self.pre_vote else 'off'}",
            f"events {self.events}  simulated time {self.sim_time_ms} ms",
            f"elections {self.elections}  max epoch {self.max_epoch}  "
            f"time to first leader {self.time_to_first_leader_ms} ms",
            f"committed offset {self.committed_offset}  committed records "
            f"{self.committed_records}  appends {self.appends}  snapshots {self.snapshots} "
            f"(installed by followers {self.snapshots_installed})",
            f"messages sent {self.messages_sent}  dropped {self.messages_dropped}  "
            f"duplicated {self.messages_duplicated}  requests failed {self.requests_failed}",
            f"faults injected: {faults}",
            "operations: "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.operations.items())) or "none"),
            f"voters at the end: {self.final_voters}  voter changes {self.voter_changes}",
            f"leaderless {self.leaderless_ms} ms in {self.unavailability_windows} windows "
            f"(longest {self.max_unavailability_ms} ms)  recovery after heal "
            f"{self.recovery_ms} ms",
            f"invariants checked {self.invariants_checked}  fingerprint {self.fingerprint}",
            "result: OK" if self.violation is None else "result: VIOLATION",
        ]
        if self.violation is not None:
            lines.append(self.violation.describe(self.repro_command()))
        return "\n".join(lines)
