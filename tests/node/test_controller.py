"""The metadata controller on real processes, without brokers: the image survives restarts
through its snapshots (by bytes, and on demand with SIGUSR1), standbys refuse writes with
NOT_CONTROLLER, configs and features round-trip through the tools."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from pykraft.admin import AdminClient
from pykraft.admin.metadata import controller_call
from pykraft.protocol import ApiKey

from .procs import Proc, cli, fmt, free_ports, make_config, wait_for


def _set_cluster_configs(address: str, count: int, prefix: str = "x.") -> None:
    async def go() -> None:
        async with AdminClient(address, timeout_ms=10_000) as admin:
            for i in range(count):
                m = await controller_call(
                    admin,
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    {
                        "resources": [
                            {
                                "resource_type": 4,
                                "resource_name": "",
                                "configs": [
                                    {
                                        "name": f"{prefix}pykraft.test.{i}",
                                        "config_operation": 0,
                                        "value": "v" * 200,
                                    }
                                ],
                            }
                        ],
                        "validate_only": False,
                    },
                    "IncrementalAlterConfigs",
                )
                assert m.responses[0].error_code == 0

    asyncio.run(go())


def _cluster_configs(address: str) -> dict[str, str]:
    async def go() -> dict[str, str]:
        async with AdminClient(address, timeout_ms=10_000) as admin:
            m = await controller_call(
                admin,
                ApiKey.DESCRIBE_CONFIGS,
                {
                    "resources": [
                        {"resource_type": 4, "resource_name": "", "configuration_keys": None}
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
                "DescribeConfigs",
            )
            return {c.name: c.value for c in m.results[0].configs}

    return asyncio.run(go())


def _snapshots(p: Proc) -> list[Path]:
    return sorted(
        s
        for s in (p.data / "__cluster_metadata-0").glob("*.checkpoint")
        if not s.name.startswith("00000000000000000000-")
    )


def test_image_survives_restarts_through_snapshots(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    node = make_config(
        tmp_path,
        1,
        port,
        voters=f"1@127.0.0.1:{port}",
        extra="metadata.log.max.record.bytes.between.snapshots=8192\n",
    )
    fmt(node)
    node.start()
    try:
        _set_cluster_configs(node.address, 60)  # ~15 KB of records: at least one snapshot
        wait_for(lambda: _snapshots(node), "a snapshot of the image")
        assert "metadata snapshot written" in node.text()
        node.stop(signal.SIGTERM)
        node.start()
        wait_for(
            lambda: node.text().count("metadata image loaded from snapshot") >= 1,
            "the snapshot loaded",
        )
        # Reads come from the image as far as it replayed (a restarted controller catches up
        # once it knows the high watermark): all 60, from the snapshot and the log after it.
        wait_for(
            lambda: len([k for k in _cluster_configs(node.address) if k.startswith("x.")]) == 60,
            "the image to hold every config again",
        )
        # On demand: SIGUSR1 writes one as soon as the image is committed state.
        before = _snapshots(node)[-1].name
        _set_cluster_configs(node.address, 2)
        node.send(signal.SIGUSR1)
        wait_for(lambda: _snapshots(node)[-1].name > before, "a snapshot on demand")
        # pykraft cluster describe reads the stopped controller's files (snapshot + log).
        node.stop(signal.SIGTERM)
        described = cli("cluster", "describe", "--metadata-log-dir", str(node.data))
        assert described.returncode == 0, described.stderr
        assert "MetadataVersion: 33" in described.stdout  # 4.4-IV2, the default
    finally:
        node.kill()


def test_standbys_refuse_writes_and_the_tools_find_the_active_controller(tmp_path: Path) -> None:
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{ports[i]}" for i in range(3))
    nodes = [make_config(tmp_path, i + 1, ports[i], voters=voters) for i in range(3)]
    for p in nodes:
        fmt(p)
    for p in nodes:
        p.start()
    try:
        bootstrap = ",".join(p.address for p in nodes)
        # Bootstrapped from every controller, the admin finds the active one (NOT_CONTROLLER
        # per item from the standbys, as Kafka answers).
        _set_cluster_configs(bootstrap, 3)
        for p in nodes:
            wait_for(
                lambda p=p: len(_cluster_configs(p.address)) >= 3,  # type: ignore[misc]
                "every controller to serve the configs from its image",
            )
        upgraded = cli(
            "features",
            "upgrade",
            "--bootstrap-controller",
            bootstrap,
            "--feature",
            "group.version=1",
        )
        assert (
            upgraded.returncode == 0 and upgraded.stdout == "group.version was upgraded to 1.\n"
        ), upgraded
        described = cli("features", "--bootstrap-controller", nodes[2].address, "describe")
        assert (
            "Feature: group.version" in described.stdout
            and "FinalizedVersionLevel: 1" in described.stdout
        )
        refused = cli(
            "features",
            "upgrade",
            "--bootstrap-controller",
            bootstrap,
            "--feature",
            "metadata.version=34",
        )
        assert (
            refused.returncode == 1
            and "Could not upgrade metadata.version to 34" in refused.stdout
            and "Unknown metadata.version 34" in refused.stdout
        ), refused
        topics = cli("topics", "--bootstrap-controller", bootstrap, "--create", "--topic", "t")
        assert topics.returncode == 1 and "INVALID_REPLICATION_FACTOR" in topics.stderr, topics
    finally:
        for p in nodes:
            p.kill()


def test_a_write_that_cannot_commit_in_its_timeout_is_request_timed_out(tmp_path: Path) -> None:
    """Kafka's deadline: with both followers stopped the active controller cannot commit;
    an UpdateFeatures with a 500 ms timeout is answered REQUEST_TIMED_OUT before the leader
    gives up its leadership (check-quorum after the 3 s fetch timeout set here)."""
    from pykraft.net.client import Connection
    from pykraft.protocol import ErrorCode
    from pykraft.protocol.apis import request_schema
    from pykraft.protocol.build import make

    from .procs import describe_quorum

    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{ports[i]}" for i in range(3))
    slow = "controller.quorum.fetch.timeout.ms=3000\n"  # after FAST_QUORUM's: it wins
    nodes = [make_config(tmp_path, i + 1, ports[i], voters=voters, extra=slow) for i in range(3)]
    for p in nodes:
        fmt(p, "--release-version", "4.0")  # share.version 0: the update below writes
    for p in nodes:
        p.start()
    try:
        bootstrap = ",".join(p.address for p in nodes)
        _set_cluster_configs(bootstrap, 1)  # an active controller, committing
        leader_id = describe_quorum(bootstrap, timeout_ms=10_000).leader_id
        leader = nodes[leader_id - 1]
        followers = [p for p in nodes if p is not leader]
        for p in followers:
            p.send(signal.SIGSTOP)

        async def go() -> int:
            host, port = leader.address.split(":")
            conn = await Connection.open(host, int(port), timeout_ms=5_000, client_id="t")
            try:
                request = make(
                    request_schema(ApiKey.UPDATE_FEATURES, 1),
                    {
                        "timeout": 500,
                        "feature_updates": [
                            {"feature": "share.version", "max_version_level": 1, "upgrade_type": 1}
                        ],
                        "validate_only": False,
                    },
                )
                m = await conn.request(request, timeout_ms=10_000)
                return int(m.error_code)
            finally:
                conn.close()

        try:
            code = asyncio.run(go())
        finally:
            for p in followers:
                p.send(signal.SIGCONT)
        assert code == ErrorCode.request_timed_out, code
    finally:
        for p in nodes:
            p.kill()


def test_an_excessively_large_operation_is_refused_at_once(tmp_path: Path) -> None:
    """Kafka's MAX_RECORDS_PER_USER_OP: CreateTopics of 10,000,000 partitions is answered
    POLICY_VIOLATION without building anything (the loop stays responsive: the next request
    is answered as fast)."""
    import time

    from pykraft.protocol import ErrorCode

    (port,) = free_ports(1)
    node = make_config(tmp_path, 1, port, voters=f"1@127.0.0.1:{port}")
    fmt(node)
    node.start()

    async def go() -> tuple[float, float, str]:
        async with AdminClient(node.address, timeout_ms=10_000) as admin:
            await admin.describe_quorum()
            started = time.monotonic()
            m = await controller_call(
                admin,
                ApiKey.CREATE_TOPICS,
                {
                    "topics": [
                        {"name": "huge", "num_partitions": 10_000_000, "replication_factor": 1}
                    ],
                    "timeout": 10_000,
                    "validate_only": False,
                },
                "CreateTopics",
            )
            (topic,) = m.topics
            refused = f"{ErrorCode(topic.error_code).name}: {topic.error_message}"
            refused_s = time.monotonic() - started
            started = time.monotonic()
            await admin.describe_quorum()
            return refused_s, time.monotonic() - started, refused

    try:
        refused_s, next_s, refused = asyncio.run(go())
        assert refused.startswith("policy_violation"), refused
        assert "excessively large batch operation" in refused
        # Not a timing goal: a generous bound that building 10M records could never meet.
        assert refused_s < 5 and next_s < 5, (refused_s, next_s)
    finally:
        node.stop(signal.SIGTERM)
