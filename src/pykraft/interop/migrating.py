"""A migrating KRaft controller -- Kafka 3.9's own or pykraft's -- over a real ZooKeeper, and
stand-ins for the ZooKeeper brokers it waits for.

* :func:`migrating_controller` -- one controller (``node.id`` 3000, a single voter) with
  ``zookeeper.metadata.migration.enable=true``, formatted at release 3.9, as a
  :class:`~pykraft.interop.cluster.Server` of kind ``"kafka-controller"`` or ``"pykraft"``.
* :class:`MigratingBrokerStandIns` -- what a migration needs of the ZooKeeper brokers before
  it copies anything: each broker's ephemeral ``/brokers/ids/N`` (Kafka's version 5 JSON) and
  its BrokerRegistration with IsMigratingZkBroker, kept alive by heartbeats. For measurements
  and side-by-side checks of what the controllers write to ZooKeeper, where real brokers
  would add nothing the controllers read (the tests with real brokers are in
  ``tests/migration/test_migration.py``). Nothing listens on their ports: the controllers'
  UpdateMetadata and LeaderAndIsr find no one, which both log and carry on from.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Final

from kazoo.client import KazooClient

from pykraft.interop.cluster import Server, free_ports
from pykraft.interop.kafka import KafkaDist, write_properties
from pykraft.migration import zk_writes
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = ["CONTROLLER_ID", "MigratingBrokerStandIns", "fill_zookeeper", "migrating_controller"]

CONTROLLER_ID: Final = 3000
MV_3_9: Final = 21  # 3.9-IV0
NOT_CONTROLLER: Final = 41


def fill_zookeeper(
    connect: str,
    cluster_id: str,
    topics: int,
    partitions: int,
    brokers: tuple[int, ...] = (0, 1, 2),
) -> tuple[int, float]:
    """A ZooKeeper as a Kafka 3.9 cluster leaves it: ``topics`` topics ``topic-00000``... of
    ``partitions`` partitions (RF 3 over ``brokers``, the first replica leading, topic ids,
    an empty topic config each), ``/cluster/id`` and ``/controller_epoch``, written with
    pipelined creates. Returns (znodes written, seconds)."""
    zk = KazooClient(hosts=connect, timeout=30)
    zk.start(timeout=30)
    started = time.perf_counter()
    for path in ("/brokers/topics", "/config/topics", "/brokers/ids", "/admin/delete_topics"):
        zk.ensure_path(path)
    zk.create("/cluster/id", b'{"version":"1","id":"%s"}' % cluster_id.encode(), makepath=True)
    zk.create("/controller_epoch", b"1")
    pending: list[Any] = []
    written = 0
    for t in range(topics):
        name = f"topic-{t:05d}"
        assignment = {
            p: tuple(brokers[(t + p + i) % len(brokers)] for i in range(3))
            for p in range(partitions)
        }
        base = f"/brokers/topics/{name}"
        nodes = [
            (base, zk_writes.topic_json(uuid.uuid4(), assignment, {}, {})),
            (f"/config/topics/{name}", b'{"version":1,"config":{}}'),
            (f"{base}/partitions", b""),
        ]
        for p, replicas in assignment.items():
            state = zk_writes.partition_state_json(replicas[0], 0, 1, replicas, False)
            nodes += [(f"{base}/partitions/{p}", b""), (f"{base}/partitions/{p}/state", state)]
        for path, data in nodes:
            pending.append(zk.create_async(path, data))
        written += len(nodes)
        if len(pending) >= 4000:
            for result in pending:
                result.get()
            pending.clear()
    for result in pending:
        result.get()
    elapsed = time.perf_counter() - started
    zk.stop()
    zk.close()
    return written, elapsed


def migrating_controller(
    kind: str, dist: KafkaDist, base: Path, zookeeper: str, cluster_id: str
) -> Server:
    """``kind`` "kafka" (Kafka 3.9's ``kafka.Kafka``) or "pykraft"; formatted, not started.
    ``zookeeper`` may name a chroot (``host:port/path``)."""
    port, metrics = free_ports(2)
    data = base / "data"
    settings: dict[str, object] = {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{port}",
        "zookeeper.metadata.migration.enable": "true",
        "zookeeper.connect": zookeeper,
        "inter.broker.listener.name": "PLAINTEXT",
    }
    if kind == "kafka":
        settings["log.dirs"] = data
    else:
        settings["metadata.log.dir"] = data
        settings["metrics.port"] = metrics
    config = write_properties(base / "controller.properties", settings)
    log = base / "controller.log"
    if kind == "kafka":
        dist.format_storage(config, cluster_id, "--release-version", "3.9")
        return Server(CONTROLLER_ID, "kafka-controller", port, config, data, log, dist)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "storage",
            "format",
            "--config",
            str(config),
            "--cluster-id",
            cluster_id,
            "--release-version",
            "3.9",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return Server(CONTROLLER_ID, "pykraft", port, config, data, log, None, metrics)


class MigratingBrokerStandIns:
    """Brokers ``ids`` as migrating ZooKeeper brokers show themselves to ZooKeeper and to the
    active one of ``controllers`` (see the module docstring). ``start`` registers them in
    ZooKeeper at once and with the controller on a thread (retrying while it starts, following
    it to another controller); ``error`` holds what stopped that thread, if anything."""

    def __init__(
        self,
        zookeeper: str,
        controllers: tuple[str, int] | list[tuple[str, int]],
        cluster_id: str,
        ids: tuple[int, ...] = (0, 1, 2),
    ) -> None:
        self.zk = KazooClient(hosts=zookeeper, timeout=30)
        self.controllers = [controllers] if isinstance(controllers, tuple) else controllers
        self.cluster_id = cluster_id
        self.ids = ids
        self.ports = free_ports(len(ids))
        self.registered = threading.Event()
        self.shutting_down: set[int] = set()  # heartbeats ask for a controlled shutdown
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="zk-broker-stand-ins", daemon=True)
        self._conns: dict[tuple[str, int], Connection] = {}

    def start(self) -> None:
        self.zk.start(timeout=30)
        for b, port in zip(self.ids, self.ports, strict=True):
            self.zk.create(
                f"/brokers/ids/{b}",
                (
                    '{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                    f'"endpoints":["PLAINTEXT://127.0.0.1:{port}"],"jmx_port":-1,"port":{port},'
                    f'"host":"127.0.0.1","version":5,"timestamp":"{int(time.time() * 1000)}"}}'
                ).encode(),
                ephemeral=True,
                makepath=True,
            )
        self._thread.start()

    def _main(self) -> None:
        try:
            asyncio.run(self._register_and_beat())
        except BaseException as e:  # reported through ``error``
            self.error = e

    async def _request(self, api: int, version: int, fields: Any) -> Any:
        """The request answered by the active controller: each controller in turn (a
        refused connection or NOT_CONTROLLER moves on), for up to two minutes."""
        deadline = time.monotonic() + 120
        while True:
            for address in self.controllers:
                try:
                    conn = self._conns.get(address)
                    if conn is None:
                        conn = await Connection.open(
                            *address, timeout_ms=2_000, client_id="zk-broker"
                        )
                        self._conns[address] = conn
                    answer: Any = await conn.request(
                        make(request_schema(api, version), fields), timeout_ms=10_000
                    )
                except (TimeoutError, OSError, ConnectionError):
                    stale = self._conns.pop(address, None)
                    if stale is not None:
                        stale.close()
                    continue
                if int(answer.error_code) != NOT_CONTROLLER:
                    return answer
            if time.monotonic() > deadline or self._stop.is_set():
                raise RuntimeError(f"no active controller among {self.controllers}")
            await asyncio.sleep(0.3)

    def _registration(self, broker: int, port: int) -> dict[str, Any]:
        return {
            "broker_id": broker,
            "cluster_id": self.cluster_id,
            "incarnation_id": uuid.uuid4(),
            "listeners": [
                {"name": "PLAINTEXT", "host": "127.0.0.1", "port": port, "security_protocol": 0}
            ],
            "features": [
                {
                    "name": "metadata.version",
                    "min_supported_version": MV_3_9,
                    "max_supported_version": MV_3_9,
                }
            ],
            "rack": None,
            "is_migrating_zk_broker": True,
            "log_dirs": [uuid.UUID(int=(broker + 1) << 64 | 77)],
        }

    async def _register_and_beat(self) -> None:
        deadline = time.monotonic() + 120
        epochs: dict[int, int] = {}
        for b, bport in zip(self.ids, self.ports, strict=True):
            while True:
                answer = await self._request(
                    ApiKey.BROKER_REGISTRATION, 2, self._registration(b, bport)
                )
                if int(answer.error_code) == 0:
                    epochs[b] = int(answer.broker_epoch)
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"broker {b} registration: error {answer.error_code}")
                await asyncio.sleep(0.5)  # the controller is still starting
        self.registered.set()
        while not self._stop.is_set():
            for b, epoch in epochs.items():
                await self._request(
                    ApiKey.BROKER_HEARTBEAT,
                    1,
                    {
                        "broker_id": b,
                        "broker_epoch": epoch,
                        "current_metadata_offset": 1 << 40,
                        "want_shut_down": b in self.shutting_down,
                    },
                )
            await asyncio.sleep(0.5)
        for conn in self._conns.values():
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.zk.stop()
        self.zk.close()
