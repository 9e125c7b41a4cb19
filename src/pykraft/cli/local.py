"""``pykraft local up``: a local quorum of controller processes for development.

First run: picks free ports on 127.0.0.1, writes ``controller-<id>.properties`` under
``--dir``, formats each data directory (one cluster id, kept in ``cluster.id``). Later runs
reuse the files and data. Starts one ``pykraft server start`` per controller (logs in
``controller-<id>.log``), prints the bootstrap address and a status line whenever the
quorum's state changes (from DescribeQuorum), and on Ctrl-C stops every process with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pykraft.cli._common import command_group

STATUS_INTERVAL_S = 1.0
STOP_TIMEOUT_S = 15


def register(sub: Any) -> None:
    _, commands = command_group(
        sub, "local", help="run a local quorum for development", dest="local_command"
    )
    up = commands.add_parser("up", help="format (first run) and start a local quorum")
    up.add_argument("--controllers", type=int, default=3, help="number of voters (default 3)")
    up.add_argument("--dir", type=Path, default=Path("pykraft-local"), help="state directory")
    up.set_defaults(func=_up)


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _prepare(base: Path, count: int) -> list[tuple[int, int, Path]]:
    """(node id, port, config path) per controller; writes and formats on first run."""
    from pykraft.node.config import load_config
    from pykraft.storage import (
        ServerConfig,
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
            format_storage(ServerConfig.load(path), cluster_id)
            print(f"formatted {node_config.metadata_log_dir}")
        result.append((node_id, node_config.controller_listener.port, path))
    return result


async def _status(ports: list[int]) -> str:
    from pykraft.net.client import Connection
    from pykraft.node.describe import describe_quorum_request
    from pykraft.protocol import ErrorCode

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
                f"observers={observers} lag={lag}"
            )
    return "no leader"


def _up(args: argparse.Namespace) -> int:
    from pykraft.node.config import ConfigError
    from pykraft.storage import StorageError
    from pykraft.storage.properties import ConfigError as StorageConfigError

    if args.controllers < 1:
        print("pykraft local up: --controllers must be >= 1", file=sys.stderr)
        return 2
    try:
        controllers = _prepare(args.dir, args.controllers)
    except (ConfigError, StorageConfigError, StorageError) as e:
        print(f"pykraft local up: {e}", file=sys.stderr)
        return 1
    processes: list[subprocess.Popen[bytes]] = []
    for node_id, _port, config in controllers:
        out = (args.dir / f"controller-{node_id}.log").open("ab")
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
            )
        )
        out.close()
    ports = [port for _, port, _ in controllers]
    print("bootstrap controllers: " + ",".join(f"127.0.0.1:{p}" for p in ports), flush=True)
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    last = ""
    while not stopping:
        if any(p.poll() is not None for p in processes):
            print("a controller exited; see its log in " + str(args.dir), file=sys.stderr)
            break
        line = asyncio.run(_status(ports))
        if line != last:
            print(time.strftime("%H:%M:%S ") + line, flush=True)
            last = line
        with contextlib.suppress(InterruptedError):
            time.sleep(STATUS_INTERVAL_S)
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    code = 0
    for p in processes:
        try:
            p.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code = 1
    print("stopped", flush=True)
    return code
