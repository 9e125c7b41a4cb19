"""Dual write side by side: the same topic changes made through Kafka 3.9's own migrating
KRaft controller and through pykraft's, each over its own chroot of one real ZooKeeper, must
leave the same znodes -- the topic znode, partition states, the topic config, the config change
notifications -- up to what is each controller's own choice (topic ids, which broker leads).

The ZooKeeper brokers are stand-ins (registrations and heartbeats: ``interop.migrating``);
the tests with real Kafka 3.9 brokers are in ``test_migration.py``."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import NoNodeError

from pykraft.interop.kafka import KafkaDist
from pykraft.interop.migrating import MigratingBrokerStandIns, migrating_controller
from pykraft.interop.zookeeper import ZooKeeperServer
from pykraft.migration import zk_client
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

CLUSTER_ID = "SideBySideMigration0Aa"
DUAL_WRITE = {"kafka": "to DUAL_WRITE state", "pykraft": "-> DUAL_WRITE"}
TOPIC = "shapes"


def _until(predicate: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


async def _call(address: tuple[str, int], api: int, version: int, fields: Any) -> Any:
    conn = await Connection.open(*address, timeout_ms=5_000, client_id="side-by-side")
    try:
        return await conn.request(make(request_schema(api, version), fields), timeout_ms=30_000)
    finally:
        conn.close()


def _errors(value: Any) -> list[int]:
    """Every non-zero error code in a response, however deep."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = []
        for f in dataclasses.fields(value):
            field = getattr(value, f.name)
            if f.name == "error_code" and int(field):
                out.append(int(field))
            else:
                out += _errors(field)
        return out
    if isinstance(value, tuple | list):
        return [e for v in value for e in _errors(v)]
    return []


def _znodes(zk: Any) -> dict[str, Any]:
    """The topic's znodes as JSON, and the config change notifications (contents, sorted);
    a znode that goes away or is not there yet while being read is left out."""

    def get(path: str) -> Any:
        try:
            return json.loads(zk.get(path)[0])
        except NoNodeError:
            return None

    def children(path: str) -> list[str]:
        try:
            return list(zk.get_children(path))
        except NoNodeError:
            return []

    paths = [f"/brokers/topics/{TOPIC}", f"/config/topics/{TOPIC}"]
    paths += [
        f"/brokers/topics/{TOPIC}/partitions/{p}/state"
        for p in sorted(children(f"/brokers/topics/{TOPIC}/partitions"), key=int)
    ]
    out: dict[str, Any] = {path: get(path) for path in paths}
    out = {path: value for path, value in out.items() if value is not None}
    notes = [get(f"/config/changes/{c}") for c in children("/config/changes")]
    out["notifications"] = sorted(json.dumps(n, sort_keys=True) for n in notes if n is not None)
    out["pending deletions"] = children("/admin/delete_topics")
    return out


def _shrunk(connect: str, states: list[str]) -> bool:
    with zk_client.session(connect) as zk:
        return all(0 not in json.loads(zk.get(path)[0])["isr"] for path in states)


def _normalized(state: dict[str, Any]) -> dict[str, Any]:
    """What both controllers must agree on: topic ids and the choice of replicas and
    leaders are each controller's own; their shape and consistency are not."""
    out: dict[str, Any] = {}
    for path, value in state.items():
        if path.endswith(f"/topics/{TOPIC}") and path.startswith("/brokers"):
            value = dict(value)
            assert isinstance(value.pop("topic_id"), str)
            value["partitions"] = {p: len(set(r)) for p, r in value["partitions"].items()}
        elif path.endswith("/state"):
            value = dict(value)
            assert value["leader"] in value["isr"]
            value["leader"] = "in isr"
            value["isr"] = len(value["isr"])
        out[path] = value
    return out


def _run(kind: str, dist: KafkaDist, zookeeper: ZooKeeperServer, base: Path) -> list[Any]:
    """Migrate an empty chroot with ``kind``'s controller, then create, reconfigure, grow and
    delete a topic through it; ZooKeeper's view after each step."""
    chroot = f"/{kind}-side"
    with zk_client.session(zookeeper.connect) as zk:
        zk.create(
            f"{chroot}/cluster/id",
            b'{"version":"1","id":"%s"}' % CLUSTER_ID.encode(),
            makepath=True,
        )
        zk.create(f"{chroot}/controller_epoch", b"1")
    connect = zookeeper.connect + chroot
    server = migrating_controller(kind, dist, base, connect, CLUSTER_ID)
    server.start()
    brokers = MigratingBrokerStandIns(connect, ("127.0.0.1", server.port), CLUSTER_ID)
    address = ("127.0.0.1", server.port)
    views: list[Any] = []
    try:
        brokers.start()
        server.wait_for(DUAL_WRITE[kind], 120)
        assert brokers.error is None, brokers.error

        def step(api: int, version: int, fields: Any, done: Any) -> None:
            answer = asyncio.run(_call(address, api, version, fields))
            assert not _errors(answer), answer
            with zk_client.session(connect) as zk:
                _until(lambda: done(_znodes(zk)), f"{kind}: step {len(views) + 1} in ZooKeeper")
                time.sleep(1)  # anything written late would show now
                views.append(_znodes(zk))

        state = f"/brokers/topics/{TOPIC}/partitions"
        step(
            ApiKey.CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": TOPIC,
                        "num_partitions": 2,
                        "replication_factor": 3,
                        "configs": [{"name": "cleanup.policy", "value": "compact"}],
                    }
                ],
                "timeout": datetime.timedelta(seconds=30),
            },
            lambda v: f"{state}/1/state" in v and f"/config/topics/{TOPIC}" in v,
        )
        step(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": TOPIC,
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "3600000"}
                        ],
                    }
                ],
                "validate_only": False,
            },
            lambda v: "retention.ms" in v.get(f"/config/topics/{TOPIC}", {}).get("config", {}),
        )
        step(
            ApiKey.CREATE_PARTITIONS,
            2,
            {
                "topics": [{"name": TOPIC, "count": 3, "assignments": None}],
                "timeout": datetime.timedelta(seconds=30),
                "validate_only": False,
            },
            lambda v: f"{state}/2/state" in v,
        )
        # Broker 0 asks for a controlled shutdown: it leaves every ISR and leadership moves.
        brokers.shutting_down.add(0)
        states = [f"{state}/{p}/state" for p in range(3)]
        _until(
            lambda: _shrunk(connect, states),
            f"{kind}: broker 0 out of every ISR in ZooKeeper",
        )
        with zk_client.session(connect) as zk:
            time.sleep(1)
            views.append(_znodes(zk))
        step(
            ApiKey.DELETE_TOPICS,
            4,
            {"topic_names": [TOPIC], "timeout": datetime.timedelta(seconds=30)},
            lambda v: f"/brokers/topics/{TOPIC}" not in v,
        )
    finally:
        brokers.stop()
        server.kill()
    return views


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Any]]]:
    dist = KafkaDist.get("3.9")
    base = tmp_path_factory.mktemp("side-by-side")
    zookeeper = ZooKeeperServer(dist, base)
    zookeeper.start()
    try:
        out = {}
        for kind in ("kafka", "pykraft"):
            (base / kind).mkdir()
            out[kind] = _run(kind, dist, zookeeper, base / kind)
        yield out
    finally:
        zookeeper.kill()


STEPS = ["create", "alter configs", "create partitions", "controlled shutdown", "delete"]


@pytest.mark.parametrize("step", STEPS)
def test_dual_write_leaves_what_kafkas_controller_leaves(
    views: dict[str, list[Any]], step: str
) -> None:
    index = STEPS.index(step)
    kafka, ours = views["kafka"][index], views["pykraft"][index]
    assert _normalized(ours) == _normalized(kafka)
