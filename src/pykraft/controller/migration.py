"""KIP-866 on the controller: the ZooKeeper migration's persistent state, its gating of the
controller's writes, and the migration driver (Kafka 3.9's ``KRaftMigrationDriver``) as a
deterministic state machine. No I/O: the driver *asks* for ZooKeeper work (``next_action``),
the host (``pykraft.node.migration_host``) does it off the event loop and feeds the result
back (``on_*``); time comes in as ``now_ms``. SPEC G2 (the states, persisted), G3 (the
trigger and its checks), G4 (claim, copy in one transaction, dual write), G6 (finalize).

States and transitions are Kafka's (docs/kafka/ZK-MIGRATION.md section 2.3):

    UNINITIALIZED -> INACTIVE -> WAIT_FOR_CONTROLLER_QUORUM -> WAIT_FOR_BROKERS
      -> BECOME_CONTROLLER -> ZK_MIGRATION -> SYNC_KRAFT_TO_ZK
      -> KRAFT_CONTROLLER_TO_BROKER_COMM -> DUAL_WRITE

with any state -> INACTIVE when this controller stops being the active one. After a
failover (the log says MIGRATION) WAIT_FOR_CONTROLLER_QUORUM goes straight to
BECOME_CONTROLLER: the brokers registered long ago.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.versions import IBP_3_4_IV0
from pykraft.protocol.apis import ApiKey

_E = TypeVar("_E")  # a batch's entry

__all__ = [
    "MIGRATION",
    "MIGRATION_MIN_METADATA_VERSION",
    "MIGRATION_SUPPORTED_MV",
    "NONE",
    "POST_MIGRATION",
    "PRE_MIGRATION",
    "DriverState",
    "MigrationDriver",
    "MigrationRefused",
    "ZkLeadership",
    "activation_records",
    "check_write",
]

# ZkMigrationStateRecord values (ZkMigrationState.java); ZK (4) is never written.
NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION = 0, 1, 2, 3
STATE_NAMES: Final = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
MIGRATION_SUPPORTED_MV: Final = IBP_3_4_IV0  # ZooKeeper brokers may register
# Kafka 3.9 starts a migration only at a metadata.version with transactions (KAFKA-17457).
MIGRATION_MIN_METADATA_VERSION: Final = 13  # 3.6-IV1
MIN_BATCH_SIZE: Final = 200  # zookeeper.metadata.migration.min.batch.size
POLL_BACKOFF_MS: Final = 100  # the driver's poll: 100 ms doubling up to 60 s
POLL_BACKOFF_MAX_MS: Final = 60_000

# What a controller still does while PRE_MIGRATION (Kafka's RUNS_IN_PREMIGRATION events).
PRE_MIGRATION_APIS: Final = frozenset(
    {ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT, ApiKey.UNREGISTER_BROKER}
)


class MigrationRefused(RuntimeError):
    """A configuration the migration cannot run with: the controller must not activate
    (Kafka's controller exits on these)."""


class DriverState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INACTIVE = "INACTIVE"
    WAIT_FOR_CONTROLLER_QUORUM = "WAIT_FOR_CONTROLLER_QUORUM"
    WAIT_FOR_BROKERS = "WAIT_FOR_BROKERS"
    BECOME_CONTROLLER = "BECOME_CONTROLLER"
    ZK_MIGRATION = "ZK_MIGRATION"
    SYNC_KRAFT_TO_ZK = "SYNC_KRAFT_TO_ZK"
    KRAFT_CONTROLLER_TO_BROKER_COMM = "KRAFT_CONTROLLER_TO_BROKER_COMM"
    DUAL_WRITE = "DUAL_WRITE"


S = DriverState
_LEGAL: Final = {
    S.UNINITIALIZED: {S.INACTIVE},
    S.INACTIVE: {S.WAIT_FOR_CONTROLLER_QUORUM},
    S.WAIT_FOR_CONTROLLER_QUORUM: {S.INACTIVE, S.BECOME_CONTROLLER, S.WAIT_FOR_BROKERS},
    S.WAIT_FOR_BROKERS: {S.INACTIVE, S.BECOME_CONTROLLER},
    S.BECOME_CONTROLLER: {S.INACTIVE, S.ZK_MIGRATION, S.SYNC_KRAFT_TO_ZK},
    S.ZK_MIGRATION: {S.INACTIVE, S.SYNC_KRAFT_TO_ZK},
    S.SYNC_KRAFT_TO_ZK: {S.INACTIVE, S.KRAFT_CONTROLLER_TO_BROKER_COMM},
    S.KRAFT_CONTROLLER_TO_BROKER_COMM: {S.INACTIVE, S.DUAL_WRITE},
    S.DUAL_WRITE: {S.INACTIVE},
}


@dataclass(frozen=True, slots=True)
class ZkLeadership:
    """Kafka's ``ZkMigrationLeadershipState``: ``/migration`` as last read or written, and
    the ZooKeeper controller epoch this controller claimed. -2: zkVersion unknown."""

    controller_id: int = -1
    controller_epoch: int = -1
    metadata_offset: int = -1
    metadata_epoch: int = -1
    migration_zk_version: int = -2
    zk_controller_epoch: int = -1
    zk_controller_epoch_zk_version: int = -2

    @property
    def initial_load_done(self) -> bool:
        return self.metadata_offset > 0


# -- the persistent state and the controller's writes -------------------------------------------


def activation_records(
    image: Image, *, enabled: bool, empty_log: bool, metadata_version: int
) -> RecordList:
    """The migration's part of the activation records (Kafka's ActivationRecordsGenerator):
    PRE_MIGRATION in the bootstrap transaction of an empty log when enabled; POST_MIGRATION
    when a migrated log's controller runs without the flag (finalizing); raises
    ``MigrationRefused`` for a cluster born in KRaft, a metadata.version too old, or a
    finalization while brokers are still registered in ZooKeeper mode."""
    if empty_log:
        if not enabled:
            return []
        if metadata_version < MIGRATION_MIN_METADATA_VERSION:
            raise MigrationRefused(
                f"The bootstrap metadata.version (level {metadata_version}) does not support "
                "ZK migrations (3.6-IV1 or later is needed). Cannot continue with ZK migrations "
                "enabled."
            )
        return [(r.ZkMigrationStateRecord(zk_migration_state=PRE_MIGRATION), 0)]
    state = image.migration_state
    if enabled and state == NONE:
        raise MigrationRefused(
            "Should not have ZK migrations enabled on a cluster that was created in KRaft mode."
        )
    if enabled and state == POST_MIGRATION:
        return []  # Kafka: "Ignoring 'zookeeper.metadata.migration.enable'"
    if not enabled and state == MIGRATION:
        zk_mode = sorted(b.broker_id for b in image.brokers.values() if b.is_migrating_zk_broker)
        if zk_mode:
            # Kafka 3.9 finalizes anyway and strands those brokers (they get no metadata
            # after it); pykraft refuses, so the operator restarts them first (G6).
            raise MigrationRefused(
                f"Cannot finalize the ZooKeeper migration: brokers {zk_mode} are still "
                "registered in ZooKeeper mode. Restart them as KRaft brokers (or unregister "
                "the ones decommissioned), or start this controller with "
                "zookeeper.metadata.migration.enable=true."
            )
        return [(r.ZkMigrationStateRecord(zk_migration_state=POST_MIGRATION), 0)]
    return []


def check_write(image: Image, api_key: int) -> None:
    """While PRE_MIGRATION only broker registrations and heartbeats run: any other write
    fails with NOT_CONTROLLER, as Kafka's newPreMigrationException."""
    if image.migration_state == PRE_MIGRATION and api_key not in PRE_MIGRATION_APIS:
        raise ApiError(
            ErrorCode.not_controller,
            "The controller is in pre-migration mode. No metadata updates are allowed until "
            "the ZK metadata has been migrated.",
        )


def coalesce(batches: Iterable[Sequence[_E]], min_size: int) -> list[list[_E]]:
    """Kafka's BufferingBatchConsumer: batches joined until each holds ``min_size`` records
    (KAFKA-16007); the last may be smaller."""
    out: list[list[_E]] = []
    pending: list[_E] = []
    for batch in batches:
        pending.extend(batch)
        if len(pending) >= min_size:
            out.append(pending)
            pending = []
    if pending:
        out.append(pending)
    return out


def migration_records(
    batches: Iterable[RecordList], min_size: int = MIN_BATCH_SIZE
) -> list[RecordList]:
    """The initial load as the log gets it: Begin("ZK Migration"), the metadata batches
    (coalesced), then ZkMigrationStateRecord(MIGRATION) and End in one last batch."""
    return [
        [(r.BeginTransactionRecord(name="ZK Migration"), 0)],
        *coalesce(batches, min_size),
        [
            (r.ZkMigrationStateRecord(zk_migration_state=MIGRATION), 0),
            (r.EndTransactionRecord(), 0),
        ],
    ]


# -- the driver ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Action:
    """ZooKeeper work the host must do: ``kind`` is one of
    ``recover`` (read or create /migration, creating Kafka's top-level paths first),
    ``read_brokers`` (ids under /brokers/ids and in topic assignments),
    ``claim`` (take /controller and bump /controller_epoch in one multi, then write
    /migration unconditionally to learn its zkVersion),
    ``load`` (read every znode and build the migration's record batches),
    ``write_state`` (conditional SetData of /migration with ``leadership``),
    ``sync`` (make ZooKeeper say what the image says, /migration recording ``leadership``),
    ``send_full`` (FULL UpdateMetadata, then FULL LeaderAndIsr, to every migrating broker),
    ``dual_write`` (``sync`` then ``send_full``: a committed change mirrored)."""

    kind: str
    leadership: ZkLeadership


class MigrationDriver:
    """Invariant: at most one ``Action`` is outstanding (``busy``); the state changes only
    along ``_LEGAL``; ``leadership`` mirrors /migration as last read or written."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.state = S.UNINITIALIZED
        self.leadership = ZkLeadership()
        self.busy: Action | None = None
        self.active_epoch = -1  # the leader epoch this controller is active in, or -1
        self.waiting_reason = ""
        self.backoff_ms = POLL_BACKOFF_MS
        self.retry_at_ms = 0
        self.migrating_brokers: tuple[int, ...] = ()
        self.last_error = ""
        # ZK_MIGRATION after the records were appended: the /migration state to write once
        # they commit (retried alone on a ZooKeeper error: the load is never redone).
        self.pending_state: ZkLeadership | None = None
        self.pending_committed = False
        self.recovered = False  # /migration read since this controller became active

    # -- inputs --------------------------------------------------------------------------------

    def leadership_changed(self, active_epoch: int) -> None:
        """This controller became active in ``active_epoch`` (or stopped: -1)."""
        self.active_epoch = active_epoch
        self.pending_state = None  # records of an earlier epoch: not ours to confirm
        if active_epoch < 0:
            if self.state not in (S.UNINITIALIZED, S.INACTIVE):
                self._to(S.INACTIVE)
        elif self.state == S.INACTIVE:
            # /migration is read again first: the previous leader wrote it meanwhile
            # (Kafka's KRaftLeaderEvent recovers the state from ZooKeeper on every election).
            self.recovered = False
            self._to(S.WAIT_FOR_CONTROLLER_QUORUM)

    def next_action(self, image: Image, now_ms: int, committed: int = -1) -> Action | None:
        """The ZooKeeper work due now in the current state (None: nothing, or waiting).
        ``committed``: the offset of the last record of the image that is committed (-1 while
        the image holds records not yet committed: nothing is mirrored before they are)."""
        if self.busy is not None or now_ms < self.retry_at_ms:
            return None
        state = self.state
        action: Action | None = None
        if state == S.UNINITIALIZED:
            action = Action("recover", self.leadership)
        elif state == S.WAIT_FOR_CONTROLLER_QUORUM:
            if self.recovered:
                self._check_quorum(image)
            else:
                action = Action("recover", self.leadership)
        elif state == S.WAIT_FOR_BROKERS:
            action = Action("read_brokers", self.leadership)
        elif state == S.BECOME_CONTROLLER:
            action = Action("claim", self.leadership)
        elif state == S.ZK_MIGRATION:
            if self.pending_state is None:
                action = Action("load", self.leadership)
            elif self.pending_committed:
                action = Action("write_state", self.pending_state)
        elif state == S.SYNC_KRAFT_TO_ZK:
            if committed >= self.leadership.metadata_offset:
                action = Action("sync", self._at(committed, image))
        elif state == S.KRAFT_CONTROLLER_TO_BROKER_COMM:
            action = Action("send_full", self.leadership)
        elif state == S.DUAL_WRITE and committed > self.leadership.metadata_offset:
            action = Action("dual_write", self._at(committed, image))
        self.busy = action
        return action

    def on_recovered(self, leadership: ZkLeadership) -> None:
        """UNINITIALIZED (start) or WAIT_FOR_CONTROLLER_QUORUM (just elected): /migration
        as ZooKeeper holds it now."""
        self._done()
        self.leadership = leadership
        if self.state == S.UNINITIALIZED:
            self._to(S.INACTIVE)
            if self.active_epoch >= 0:
                self._to(S.WAIT_FOR_CONTROLLER_QUORUM)
        if self.state == S.WAIT_FOR_CONTROLLER_QUORUM:
            self.recovered = True
            self.leadership = replace(
                leadership,
                controller_id=self.node_id,
                controller_epoch=self.active_epoch,
                zk_controller_epoch=-1,
                zk_controller_epoch_zk_version=-2,
            )

    def on_brokers(
        self, image: Image, zk_brokers: set[int], assigned: set[int], now_ms: int
    ) -> None:
        """WAIT_FOR_BROKERS: every broker in /brokers/ids and in any assignment must be
        registered with IsMigratingZkBroker (fenced or not)."""
        self._done()
        if self.state != S.WAIT_FOR_BROKERS:
            return
        migrating = {b.broker_id for b in image.brokers.values() if b.is_migrating_zk_broker}
        self.migrating_brokers = tuple(sorted(migrating))
        if not image.brokers:
            self._wait("No brokers are known to KRaft, waiting for brokers to register.", now_ms)
        elif not zk_brokers:
            self._wait("No brokers are registered in ZK, waiting for brokers to register.", now_ms)
        elif zk_brokers - migrating:
            self._wait(
                f"Still waiting for ZK brokers {sorted(zk_brokers)} to register with KRaft.", now_ms
            )
        elif assigned - migrating:
            self._wait(
                f"Still waiting for ZK brokers {sorted(assigned)} found in metadata to register "
                "with KRaft.",
                now_ms,
            )
        else:
            self._to(S.BECOME_CONTROLLER)

    def on_claimed(self, leadership: ZkLeadership | None, now_ms: int) -> None:
        """BECOME_CONTROLLER: None = the claim failed (another controller holds a higher
        epoch, or a race): retry later."""
        self._done()
        if self.state != S.BECOME_CONTROLLER:
            return
        if leadership is None:
            self._wait("Unable to claim ZK controllership; will retry.", now_ms)
            return
        self.leadership = leadership
        self._to(S.SYNC_KRAFT_TO_ZK if leadership.initial_load_done else S.ZK_MIGRATION)

    def on_loaded(self, last_offset: int, epoch: int) -> None:
        """ZK_MIGRATION: the host appended the migration's records up to ``last_offset``;
        once they commit (``on_committed``) /migration gets that offset and epoch."""
        self._done()
        self.pending_state = replace(
            self.leadership, metadata_offset=last_offset, metadata_epoch=epoch
        )
        self.pending_committed = False

    def on_committed(self) -> None:
        if self.pending_state is not None:
            self.pending_committed = True

    def on_state_written(self, leadership: ZkLeadership) -> None:
        """/migration now records ``leadership`` (the initial load's offset and epoch)."""
        self._done()
        self.leadership = leadership
        self.pending_state = None
        if self.state == S.ZK_MIGRATION:
            self._to(S.SYNC_KRAFT_TO_ZK)

    def on_synced(self, leadership: ZkLeadership) -> None:
        """SYNC_KRAFT_TO_ZK / DUAL_WRITE: ZooKeeper now says what the image said at
        ``leadership.metadata_offset`` (recorded in /migration)."""
        self._done()
        self.leadership = leadership
        self.backoff_ms = POLL_BACKOFF_MS
        self.last_error = ""
        if self.state == S.SYNC_KRAFT_TO_ZK:
            self._to(S.KRAFT_CONTROLLER_TO_BROKER_COMM)

    def on_sent(self) -> None:
        """KRAFT_CONTROLLER_TO_BROKER_COMM: the FULL UpdateMetadata and LeaderAndIsr went
        to every migrating broker."""
        self._done()
        self.last_error = ""
        if self.state == S.KRAFT_CONTROLLER_TO_BROKER_COMM:
            self._to(S.DUAL_WRITE)

    def on_error(self, error: str, now_ms: int) -> None:
        """A failed ZooKeeper operation: logged by the host; retried after the backoff."""
        self._done()
        self.last_error = error
        self._wait(f"ZooKeeper error, will retry: {error}", now_ms)

    def next_deadline_ms(self) -> int | None:
        if self.busy is not None or self.state == S.INACTIVE:
            return None
        if self.state == S.DUAL_WRITE and not self.last_error:
            return None  # woken by commits
        return self.retry_at_ms

    def _at(self, committed: int, image: Image) -> ZkLeadership:
        return replace(
            self.leadership,
            metadata_offset=max(committed, self.leadership.metadata_offset),
            metadata_epoch=self.active_epoch,
        )

    # -- internals -----------------------------------------------------------------------------

    def _check_quorum(self, image: Image) -> None:
        state = image.migration_state
        if image.metadata_version is None:
            return
        if state == PRE_MIGRATION:
            self._to(S.WAIT_FOR_BROKERS)
        elif state == MIGRATION:
            if self.leadership.initial_load_done:
                self._to(S.BECOME_CONTROLLER)
            else:
                self.waiting_reason = (
                    "The metadata log says MIGRATION but /migration has no offset: cannot continue."
                )
                self._to(S.INACTIVE)
        else:
            self.waiting_reason = (
                f"The migration state is {STATE_NAMES.get(state, state)}: nothing to migrate."
            )
            self._to(S.INACTIVE)

    def _to(self, state: DriverState) -> None:
        if state != self.state:
            assert state in _LEGAL[self.state], (self.state, state)
            self.state = state
            self.backoff_ms = POLL_BACKOFF_MS
            self.retry_at_ms = 0
            self.waiting_reason = ""

    def _wait(self, reason: str, now_ms: int) -> None:
        self.waiting_reason = reason
        self.retry_at_ms = now_ms + self.backoff_ms
        self.backoff_ms = min(POLL_BACKOFF_MAX_MS, self.backoff_ms * 2)

    def _done(self) -> None:
        self.busy = None
