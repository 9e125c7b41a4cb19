"""``pykraft local up``: a local Kafka cluster whose controllers are pykraft, for development.

First run: picks free ports on 127.0.0.1, writes ``controller-<id>.properties`` (and with
``--brokers N``, Apache Kafka ``broker-<id>.properties``, ids 100, 101, ...) under ``--dir``,
formats each data directory (one cluster id, kept in ``cluster.id``; the brokers with Kafka's
own ``kafka-storage format``). Later runs reuse the files and data. Starts one ``pykraft
server start`` per controller (logs in ``controller-<id>.log``) and one Kafka broker per broker
(Kafka's jars through ``scripts/kafka.sh``; logs in ``broker-<id>.log``), prints the bootstrap
addresses, then once a second a status line when something changed: the active controller
and its epoch, the brokers and their state, topics, partitions and offline partitions. Without
Java (or Maven) the controllers run alone, and it says why in one line. Ctrl-C stops the
brokers first (a controlled shutdown each), then the controllers, all with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pykraft.cli._common import command_group
from pykraft.interop.cluster import free_ports

STATUS_INTERVAL_S = 1.0
STOP_TIMEOUT_S = 15


def register(sub: Any) -> None:
    _, commands = command_group(
        sub, "local", help="run a local quorum for development", dest="local_command"
    )
    up = commands.add_parser("up", help="format (first run) and start a local quorum")
    up.add_argument("--controllers", type=int, default=3, help="number of voters (default 3)")
    up.add_argument(
        "--brokers", type=int, default=0, help="Apache Kafka brokers to run (default 0)"
    )
    up.add_argument("--dir", type=Path, default=Path("pykraft-local"), help="state directory")
    up.set_defaults(func=_up)


def _prepare(base: Path, count: int) -> list[tuple[int, int, Path]]:
    """(node id, port, config path) per controller; writes and formats on first run."""
    from pykraft.node.config import load_config
    from pykraft.storage import (
        format_storage,
        random_uuid,
        read_meta_properties,
        uuid_to_kafka,
    )

    base.mkdir(parents=True, exist_ok=True)
    configs = [base / f"controller-{i}.properties" for i in range(1, count + 1)]
    if not all(c.exists() for c in configs):
        ports = free_ports(count)
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(ports, start=1))
        for node_id, (config, port) in enumerate(zip(configs, ports, strict=True), start=1):
            config.write_text(
                f"node.id={node_id}\nprocess.roles=controller\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\n"
                "controller.listener.names=CONTROLLER\n"
                f"metadata.log.dir={(base / f'controller-{node_id}').resolve()}\n"
                f"controller.quorum.voters={voters}\n"
            )
    cluster_file = base / "cluster.id"
    if not cluster_file.exists():
        cluster_file.write_text(uuid_to_kafka(random_uuid()) + "\n")
    cluster_id = cluster_file.read_text().strip()
    result = []
    for node_id, path in enumerate(configs, start=1):
        node_config = load_config(path)
        if read_meta_properties(node_config.metadata_log_dir) is None:
            format_storage(node_config, cluster_id)
            print(f"formatted {node_config.metadata_log_dir}")
        result.append((node_id, node_config.controller_listener.port, path))
    return result


def _prepare_brokers(base: Path, count: int, voters: str, cluster_id: str) -> list[Path]:
    """Broker configs (first run) and Kafka's format of their log directories; raises
    ``KafkaError`` when Kafka cannot run here."""
    from pykraft.interop.kafka import KafkaDist, write_properties

    dist = KafkaDist.get("4")
    configs = [base / f"broker-{100 + i}.properties" for i in range(count)]
    if not all(c.exists() for c in configs):
        ports = free_ports(count)
        for i, (config, port) in enumerate(zip(configs, ports, strict=True)):
            write_properties(
                config,
                {
                    "process.roles": "broker",
                    "node.id": 100 + i,
                    "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "controller.listener.names": "CONTROLLER",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "controller.quorum.voters": voters,
                    "log.dirs": (base / f"broker-{100 + i}").resolve(),
                    "offsets.topic.replication.factor": min(count, 3),
                    "transaction.state.log.replication.factor": min(count, 3),
                    "transaction.state.log.min.isr": min(count, 2),
                    "group.initial.rebalance.delay.ms": 0,
                },
            )
    for i, config in enumerate(configs):
        if not (base / f"broker-{100 + i}" / "meta.properties").exists():
            dist.format_storage(config, cluster_id)
            print(f"formatted {base / f'broker-{100 + i}'} (kafka-storage)")
    return configs


def _broker_address(config: Path) -> str:
    for line in config.read_text().splitlines():
        if line.startswith("listeners="):
            return line.split("//", 1)[1]
    return "?"


async def _cluster_status(ports: list[int]) -> str:
    """The controllers' view: active controller, brokers, topics (empty when unknown)."""
    from pykraft.admin import AdminClient, AdminError
    from pykraft.admin.metadata import brokers, topics

    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    try:
        async with AdminClient(bootstrap, timeout_ms=1_500, request_timeout_ms=700) as admin:
            _, found = await brokers(admin)
            listed = await topics(admin)
    except (AdminError, OSError, TimeoutError):
        return ""
    states = " ".join(f"{b.broker_id}:{'fenced' if b.fenced else 'up'}" for b in found) or "-"
    partitions = [p for t in listed for p in t.partitions]
    offline = sum(1 for p in partitions if p.leader < 0)
    return f" brokers={states} topics={len(listed)} partitions={len(partitions)} offline={offline}"


async def _status(ports: list[int], with_cluster: bool = False) -> str:
    from pykraft.admin.describe import describe_quorum_request
    from pykraft.net.client import Connection
    from pykraft.protocol import ErrorCode

    cluster = await _cluster_status(ports) if with_cluster else ""
    request = describe_quorum_request()
    for port in ports:
        try:
            conn = await Connection.open("127.0.0.1", port, timeout_ms=500)
        except (OSError, TimeoutError):
            continue
        try:
            response: Any = await conn.request(request, timeout_ms=500)
        except (OSError, TimeoutError):
            continue
        finally:
            conn.close()
            await conn.wait_closed()
        p = response.topics[0].partitions[0]
        if p.error_code == ErrorCode.none:
            # Lag as Kafka's describe --replication reports it: the leader's log end offset
            # minus the replica's.
            leader_leo = max((v.log_end_offset for v in p.current_voters), default=0)
            voters = ",".join(str(v.replica_id) for v in p.current_voters)
            lag = " ".join(
                f"{v.replica_id}:{leader_leo - v.log_end_offset}" for v in p.current_voters
            )
            observers = ",".join(str(o.replica_id) for o in p.observers) or "-"
            return (
                f"leader={p.leader_id} epoch={p.leader_epoch} "
                f"high_watermark={p.high_watermark} voters={voters} "
                f"observers={observers} lag={lag}{cluster}"
            )
    return "no leader"


def _start_controller(directory: Path, node_id: int, config: Path) -> subprocess.Popen[bytes]:
    """``pykraft server start`` in its own session, its output in ``controller-N.log``."""
    with (directory / f"controller-{node_id}.log").open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
        )


def _watch(
    directory: Path,
    processes: list[subprocess.Popen[bytes]],
    brokers_running: list[Any],
    ports: list[int],
) -> None:
    """A status line whenever it changes, until Ctrl-C / SIGTERM or a process exits."""
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    last = ""
    while not stopping:
        if any(p.poll() is not None for p in processes):
            print("a controller exited; see its log in " + str(directory), file=sys.stderr)
            break
        if any(not b.running for b in brokers_running):
            print("a broker exited; see its log in " + str(directory), file=sys.stderr)
            break
        line = asyncio.run(_status(ports, with_cluster=bool(brokers_running)))
        if line != last:
            print(time.strftime("%H:%M:%S ") + line, flush=True)
            last = line
        with contextlib.suppress(InterruptedError):
            time.sleep(STATUS_INTERVAL_S)


def _stop(processes: list[subprocess.Popen[bytes]], brokers_running: list[Any]) -> int:
    """Brokers first (controlled shutdown while the controllers run), then the controllers;
    1 when anything did not stop cleanly."""
    code = 0
    for b in brokers_running:
        b.signal(signal.SIGTERM)  # controlled shutdown, while the controllers still run
    for b in brokers_running:
        if b.stop(timeout_s=STOP_TIMEOUT_S * 2) not in (0, 143):
            code = 1
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code = 1
    return code


def _up(args: argparse.Namespace) -> int:
    from pykraft.node.config import ConfigError
    from pykraft.storage import StorageError

    if args.controllers < 1:
        print("pykraft local up: --controllers must be >= 1", file=sys.stderr)
        return 2
    try:
        controllers = _prepare(args.dir, args.controllers)
    except (ConfigError, StorageError) as e:
        print(f"pykraft local up: {e}", file=sys.stderr)
        return 1
    broker_configs: list[Path] = []
    if args.brokers > 0:
        from pykraft.interop.kafka import KafkaError

        voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port, _ in controllers)
        cluster_id = (args.dir / "cluster.id").read_text().strip()
        try:
            broker_configs = _prepare_brokers(args.dir, args.brokers, voters, cluster_id)
        except KafkaError as e:
            reason = str(e).splitlines()[0]
            print(f"no Kafka brokers: {reason}; running the controllers alone", flush=True)
    processes = [_start_controller(args.dir, node_id, config) for node_id, _, config in controllers]
    ports = [port for _, port, _ in controllers]
    print("bootstrap controllers: " + ",".join(f"127.0.0.1:{p}" for p in ports), flush=True)
    brokers_running = []
    if broker_configs:
        from pykraft.interop.kafka import KafkaDist

        dist = KafkaDist.get("4")
        for config in broker_configs:
            log = args.dir / (config.stem + ".log")
            brokers_running.append(dist.start("server", str(config), log=log))
        print(
            "bootstrap.servers=" + ",".join(_broker_address(c) for c in broker_configs),
            flush=True,
        )
    _watch(args.dir, processes, brokers_running, ports)
    code = _stop(processes, brokers_running)
    print("stopped", flush=True)
    return code
