"""The ZooKeeper side of a KIP-866 migration: every ZooKeeper read and write the migration
driver's actions need, through kazoo, on the migration's one worker thread and never on the
event loop (``MigrationHost`` submits each action and feeds its result back to the driver).

What each action does in ZooKeeper is listed in ``migration_host``'s docstring. The worker
owns the kazoo client, ZooKeeper as the initial load read it, and the model of what
ZooKeeper holds after the last full reconciliation (``zk_writes.ZkModel``); the loop side
reads only the two durations the metrics publish.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from pykraft.controller import migration as m
from pykraft.metadata.delta import MetadataDelta
from pykraft.migration import zk_acls, zk_client, zk_data, zk_tokens, zk_writes
from pykraft.node.zk_brokers import LegacyBrokers, Send

__all__ = ["ZkWorker"]

log = logging.getLogger("pykraft.migration")


class ZkWorker:
    """Invariant: called on the migration's worker thread only, one action at a time."""

    def __init__(self, zookeeper_connect: str, brokers: LegacyBrokers) -> None:
        self.zookeeper_connect = zookeeper_connect
        self.brokers = brokers  # the ZooKeeper-mode brokers' channels (closed with the client)
        self._zk: KazooClient | None = None
        # ZooKeeper as the initial load read it, with the epoch that read it.
        self._zk_as_loaded: tuple[int, zk_data.ZkSnapshot] | None = None
        # What ZooKeeper holds (None until a full reconciliation succeeds).
        self._model: zk_writes.ZkModel | None = None
        # The last full reconciliation's duration (SYNC_KRAFT_TO_ZK: ZkWriteSnapshotTimeMs) and
        # the last dual write's (ZkWriteDeltaTimeMs).
        self.snapshot_write_ms = 0.0
        self.delta_write_ms = 0.0

    def client(self) -> KazooClient:
        if self._zk is None:
            self._zk = zk_client.connect(self.zookeeper_connect)
        return self._zk

    def close(self) -> None:
        self.brokers.close()
        if self._zk is not None:
            with contextlib.suppress(KazooException):
                zk_client.close(self._zk)
            self._zk = None

    def recover(self) -> m.ZkLeadership:
        zk = self.client()
        zk_client.ensure_top_level_paths(zk)
        empty = m.ZkLeadership()
        try:
            data, stat = zk.get(zk_data.MIGRATION)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                zk.create(zk_data.MIGRATION, _migration_json(empty))
            data, stat = zk.get(zk_data.MIGRATION)
        cid, cepoch, offset, epoch = zk_writes.parse_migration(data)
        return replace(
            empty,
            controller_id=cid,
            controller_epoch=cepoch,
            metadata_offset=offset,
            metadata_epoch=epoch,
            migration_zk_version=stat.version,
        )

    def read_brokers(self) -> tuple[set[int], set[int]]:
        zk = self.client()
        brokers = {int(b) for b in zk.get_children(zk_data.BROKER_IDS)}
        assigned: set[int] = set()
        for topic in zk.get_children(zk_data.TOPICS):
            try:
                data, _ = zk.get(f"{zk_data.TOPICS}/{topic}")
            except NoNodeError:
                continue
            snapshot = zk_data.ZkSnapshot({"/t": zk_data.Znode(data, 0)})
            value = snapshot.json("/t") or {}
            for replicas in value.get("partitions", {}).values():
                assigned.update(int(b) for b in replicas)
        return brokers, assigned

    def claim(self, leadership: m.ZkLeadership, now_ms: int) -> m.ZkLeadership | None:
        """Kafka's tryRegisterKRaftControllerAsActiveController, then the unconditional
        /migration write. None when the claim failed (retry later)."""
        zk = self.client()
        epoch_data, epoch_stat = zk.get(zk_data.CONTROLLER_EPOCH)
        try:
            controller_data, controller_stat = zk.get(zk_data.CONTROLLER)
        except NoNodeError:
            controller_data, controller_stat = None, None
        if controller_data is not None:
            current = zk_data.ZkSnapshot({"/c": zk_data.Znode(controller_data, 0)}).json("/c") or {}
            if int(current.get("kraftControllerEpoch", -1)) >= leadership.controller_epoch:
                log.info(
                    "/controller names KRaft epoch %s >= ours", current.get("kraftControllerEpoch")
                )
                return None
        new_epoch = int(epoch_data) + 1
        tx = zk.transaction()
        tx.set_data(zk_data.CONTROLLER_EPOCH, str(new_epoch).encode(), version=epoch_stat.version)
        if controller_stat is not None:
            tx.delete(zk_data.CONTROLLER, version=controller_stat.version)
        wall_ms = int(time.time() * 1000)
        tx.create(
            zk_data.CONTROLLER,
            zk_writes.controller_json(
                leadership.controller_id, wall_ms, leadership.controller_epoch
            ),
        )
        results = tx.commit()
        if any(isinstance(x, Exception) for x in results):
            log.info("claiming ZooKeeper controllership failed: %s", results)
            return None
        claimed = replace(
            leadership,
            zk_controller_epoch=new_epoch,
            zk_controller_epoch_zk_version=results[0].version,
        )
        stat = zk.set(zk_data.MIGRATION, _migration_json(claimed), version=-1)
        return replace(claimed, migration_zk_version=stat.version)

    def load(self, epoch: int) -> zk_data.MigrationLoad:
        zk = self.client()
        started = time.monotonic()
        snapshot = zk_client.read_snapshot(zk)
        load = zk_data.read_all_metadata(snapshot)
        log.info("read ZooKeeper's metadata in %.0f ms", (time.monotonic() - started) * 1000)
        # Read under this controller's claim of /controller: ZooKeeper-mode brokers in
        # migration mode write no metadata znodes, so the first reconciliation compares with
        # it instead of reading everything again (Kafka reads again).
        self._zk_as_loaded = (epoch, snapshot)
        return load

    def write_state(self, leadership: m.ZkLeadership) -> m.ZkLeadership:
        zk = self.client()
        try:
            stat = zk.set(
                zk_data.MIGRATION,
                _migration_json(leadership),
                version=leadership.migration_zk_version,
            )
        except BadVersionError:
            raise RuntimeError(
                "/migration changed under this controller: another KRaft controller is making "
                "writes to ZooKeeper"
            ) from None
        return replace(leadership, migration_zk_version=stat.version)

    def sync(
        self,
        want: zk_writes.DesiredZk | None,
        leadership: m.ZkLeadership,
        *,
        delta: bool = False,
        scope: MetadataDelta | None = None,
    ) -> m.ZkLeadership:
        """ZooKeeper made to say what ``want`` says, with fenced writes; /migration records
        ``leadership``. ``delta``: a dual write of committed changes (timed apart); with
        ``scope``, ``want`` holds only what it names and is reconciled against the model
        of ZooKeeper (no read)."""
        assert want is not None
        zk = self.client()
        started = time.monotonic()
        model, self._model = self._model, None  # stale if this write fails half way
        loaded, self._zk_as_loaded = self._zk_as_loaded, None
        if scope is not None:
            if model is None:
                raise RuntimeError("no model of ZooKeeper for a dual write of a delta")
            have = model.snapshot(scope)
        elif loaded is not None and loaded[0] == leadership.controller_epoch:
            have = loaded[1]
        else:
            have = zk_client.read_snapshot(zk)
        ops, changed = zk_writes.reconcile(want, have)
        result = self.fenced(zk, ops, leadership)
        if scope is None:
            self._model = zk_writes.ZkModel(want, have, ops)
        else:
            assert model is not None
            model.apply(want, scope, ops)
            self._model = model
        for entity in changed:
            # Outside the fenced writes, as Kafka: brokers watch these to reload configs.
            zk.create(
                "/config/changes/config_change_",
                zk_writes.config_change_json(entity),
                sequence=True,
                makepath=True,
            )
        notes = zk_acls.acl_notifications((op.kind, op.path) for op in ops)
        notes += zk_tokens.token_notifications(op.path for op in ops)
        for prefix, data in notes:
            # The ZooKeeper-mode brokers reload the resource's ACLs or the token.
            zk.create(prefix, data, sequence=True, makepath=True)
        elapsed = (time.monotonic() - started) * 1000
        if delta:
            self.delta_write_ms = elapsed
        else:
            self.snapshot_write_ms = elapsed
        if ops:
            counts: dict[str, int] = {}
            for op in ops:
                counts[op.kind] = counts.get(op.kind, 0) + 1
            log.info(
                "Made the following ZK writes when reconciling with KRaft state: %s",
                ", ".join(f"{k}={v}" for k, v in sorted(counts.items())),
            )
        return result

    def fenced(
        self, zk: KazooClient, ops: list[zk_writes.ZkOp], leadership: m.ZkLeadership
    ) -> m.ZkLeadership:
        """Kafka's fenced multi-ops: each write is one multi of (check /controller_epoch at
        its version, check /migration -- on the last write, SetData of /migration --, the
        write). A newer ZooKeeper or KRaft controller fails the checks."""
        version = leadership.migration_zk_version
        state = _migration_json(leadership)
        if not ops:
            try:
                stat = zk.set(zk_data.MIGRATION, state, version=version)
            except BadVersionError:
                raise RuntimeError(_FENCED_MIGRATION) from None
            return replace(leadership, migration_zk_version=stat.version)
        for i, op in enumerate(ops):
            last = i == len(ops) - 1
            kind = op.kind
            while True:
                tx = zk.transaction()
                tx.check(zk_data.CONTROLLER_EPOCH, leadership.zk_controller_epoch_zk_version)
                if last:
                    tx.set_data(zk_data.MIGRATION, state, version=version)
                else:
                    tx.check(zk_data.MIGRATION, version)
                if kind == "create":
                    tx.create(op.path, op.data)
                elif kind == "set":
                    tx.set_data(op.path, op.data)
                elif kind == "delete":
                    tx.delete(op.path)
                results = tx.commit()
                if not any(isinstance(x, Exception) for x in results):
                    break
                if isinstance(results[0], BadVersionError):
                    raise RuntimeError(
                        "Controller epoch zkVersion check fails: another controller took over"
                    )
                if isinstance(results[1], BadVersionError):
                    raise RuntimeError(_FENCED_MIGRATION)
                error = results[2] if len(results) > 2 else results[-1]
                # Idempotent, as Kafka's callers: an existing node is set, a missing one is
                # already deleted (only the fencing ops run).
                if kind == "create" and isinstance(error, NodeExistsError):
                    kind = "set"
                elif kind == "delete" and isinstance(error, NoNodeError):
                    kind = "none"
                elif kind == "set" and isinstance(error, NoNodeError):
                    kind = "create"
                else:
                    raise RuntimeError(f"ZooKeeper refused {op.kind} {op.path}: {error!r}")
            if last:
                version = results[1].version
        return replace(leadership, migration_zk_version=version)

    def dual_write(
        self,
        want: zk_writes.DesiredZk | None,
        leadership: m.ZkLeadership,
        sends: list[Send],
        scope: MetadataDelta | None,
    ) -> tuple[m.ZkLeadership, frozenset[int]]:
        return self.sync(want, leadership, delta=True, scope=scope), self.brokers.send(sends)


_FENCED_MIGRATION = (
    "/migration changed under this controller: another KRaft controller is making writes to "
    "ZooKeeper"
)


def _migration_json(s: m.ZkLeadership) -> bytes:
    return zk_writes.migration_json(
        s.controller_id, s.controller_epoch, s.metadata_offset, s.metadata_epoch
    )
