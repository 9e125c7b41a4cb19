"""``pykraft local up``: a local Kafka cluster whose controllers are pykraft, for development.

First run: picks free ports on 127.0.0.1, writes ``controller-<id>.properties`` (and with
``--brokers N``, Apache Kafka 4.4.0 ``broker-<id>.properties``, ids 100, 101, ...) under ``--dir``,
formats each data directory (one cluster id, kept in ``cluster.id``; the brokers with Kafka's
own ``kafka-storage format``). Later runs reuse the files and data. Starts one ``pykraft
server start`` per controller (logs in ``controller-<id>.log``) and one Kafka broker per broker
(Kafka's jars through ``scripts/kafka.sh``; logs in ``broker-<id>.log``), prints the bootstrap
addresses, then the status: the active controller and its epoch, the brokers and their state,
topics, partitions and offline partitions, and who is down, checked each second and printed
as a line whenever it changes (not when only the high watermark or the lag moved). Without Java (or Maven) the controllers run
alone, and it says why in one line.

A failover playground: a controller or broker that exits (kill -9 it to watch KRaft fail over)
is reported in one line and the cluster keeps running; ``pykraft local restart ID --dir DIR``
(from another terminal) starts it again (or restarts a running one), and ``up
--restart-after S`` restarts whatever died after S seconds by itself. Ctrl-C stops the
brokers first (a controlled shutdown each), then the controllers, all with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pykraft.cli._common import command_group
from pykraft.cli.local_hints import print_client_settings, print_examples, print_health
from pykraft.cli.local_roll import register_roll
from pykraft.interop.cluster import free_ports
from pykraft.interop.secure import BROKER_LISTENER

if TYPE_CHECKING:
    from pykraft.interop.secure import SecureSetup
    from pykraft.net.security import ClientSecurity

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
    up.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL everywhere with a generated CA, Kafka's StandardAuthorizer and SCRAM "
        "users (first run of a directory); prints the client properties to use",
    )
    up.add_argument(
        "--restart-after",
        type=float,
        default=None,
        metavar="S",
        help="restart a controller or broker S seconds after it exits (default: on request)",
    )
    up.add_argument("--build", type=Path, help="start the controllers from this pykraft tree")
    up.set_defaults(func=_up)
    restart = commands.add_parser(
        "restart", help="restart a controller or broker of a running `pykraft local up`"
    )
    restart.add_argument("id", type=int, help="a controller's node.id or a broker's (100, ...)")
    restart.add_argument("--dir", type=Path, default=Path("pykraft-local"), help="state directory")
    restart.add_argument("--build", type=Path, help="a controller: start it from this pykraft tree")
    restart.set_defaults(func=_restart)
    register_roll(commands)


def _prepare(
    base: Path, count: int, secure: SecureSetup | None = None
) -> list[tuple[int, int, Path]]:
    """(node id, port, config path) per controller; writes and formats on first run (with
    ``secure``: SASL_SSL, the authorizer, and the SCRAM users at format)."""
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
        ports = free_ports(2 * count)  # the listeners, then the metrics and health ports
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(ports[:count], start=1))
        for node_id, config in enumerate(configs, start=1):
            config.write_text(
                f"node.id={node_id}\nprocess.roles=controller\n"
                f"listeners=CONTROLLER://127.0.0.1:{ports[node_id - 1]}\n"
                "controller.listener.names=CONTROLLER\n"
                f"metadata.log.dir={(base / f'controller-{node_id}').resolve()}\n"
                f"controller.quorum.voters={voters}\n"
                f"metrics.port={ports[count + node_id - 1]}\n"
            )
            if secure is not None:
                _append(config, secure.controller_config())
    cluster_file = base / "cluster.id"
    if not cluster_file.exists():
        cluster_file.write_text(uuid_to_kafka(random_uuid()) + "\n")
    cluster_id = cluster_file.read_text().strip()
    result = []
    for node_id, path in enumerate(configs, start=1):
        node_config = load_config(path)
        if read_meta_properties(node_config.metadata_log_dir) is None:
            scram = _scram_args(secure)
            format_storage(node_config, cluster_id, scram=scram)
            print(f"formatted {node_config.metadata_log_dir}")
        result.append((node_id, node_config.controller_listener.port, path))
    return result


def _append(config: Path, settings: dict[str, object]) -> None:
    with config.open("a") as out:
        for key, value in settings.items():
            out.write(f"{key}={value}\n")


def _scram_args(secure: SecureSetup | None) -> list[Any]:
    from pykraft.storage.scram import parse_add_scram

    if secure is None:
        return []
    args = secure.format_args()
    return [parse_add_scram(args[i + 1]) for i in range(0, len(args), 2)]


def _prepare_brokers(
    base: Path, count: int, voters: str, cluster_id: str, secure: SecureSetup | None = None
) -> list[Path]:
    """Broker configs (first run) and Kafka's format of their log directories; raises
    ``KafkaError`` when Kafka cannot run here."""
    from pykraft.interop.kafka import REFERENCE_DIST, KafkaDist, repo_root, write_properties

    cache = Path(os.environ.get("PYKRAFT_KAFKA_CACHE", repo_root() / ".cache"))
    if not (cache / f"kafka-{REFERENCE_DIST}" / ".stamp").exists():
        print("fetching Apache Kafka's jars from Maven Central (first run only)", flush=True)
    dist = KafkaDist.get(REFERENCE_DIST)
    configs = [base / f"broker-{100 + i}.properties" for i in range(count)]
    listener = "PLAINTEXT" if secure is None else BROKER_LISTENER
    if not all(c.exists() for c in configs):
        ports = free_ports(count)
        for i, (config, port) in enumerate(zip(configs, ports, strict=True)):
            write_properties(
                config,
                {
                    "process.roles": "broker",
                    "node.id": 100 + i,
                    "listeners": f"{listener}://127.0.0.1:{port}",
                    "advertised.listeners": f"{listener}://127.0.0.1:{port}",
                    "controller.listener.names": "CONTROLLER",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "inter.broker.listener.name": listener,
                    "controller.quorum.voters": voters,
                    "log.dirs": (base / f"broker-{100 + i}").resolve(),
                    "offsets.topic.replication.factor": min(count, 3),
                    "transaction.state.log.replication.factor": min(count, 3),
                    "transaction.state.log.min.isr": min(count, 2),
                    "group.initial.rebalance.delay.ms": 0,
                    **(secure.broker_config() if secure is not None else {}),
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


async def _cluster_status(ports: list[int], security: ClientSecurity | None = None) -> str:
    """The controllers' view: active controller, brokers, topics (empty when unknown)."""
    from pykraft.admin import AdminClient, AdminError
    from pykraft.admin.metadata import brokers, topics

    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    try:
        # A TLS and SASL handshake costs a few round trips more than PLAINTEXT.
        slow = security is not None
        async with AdminClient(
            bootstrap,
            timeout_ms=4_000 if slow else 1_500,
            request_timeout_ms=2_000 if slow else 700,
            security=security,
        ) as admin:
            _, found = await brokers(admin)
            listed = await topics(admin)
    except (AdminError, OSError, TimeoutError):
        return ""
    states = " ".join(f"{b.broker_id}:{'fenced' if b.fenced else 'up'}" for b in found) or "-"
    partitions = [p for t in listed for p in t.partitions]
    offline = sum(1 for p in partitions if p.leader < 0)
    return f" brokers={states} topics={len(listed)} partitions={len(partitions)} offline={offline}"


async def _status(
    ports: list[int], with_cluster: bool = False, security: ClientSecurity | None = None
) -> str:
    from pykraft.admin.describe import describe_quorum_request
    from pykraft.net.client import Connection
    from pykraft.protocol import ErrorCode

    cluster = await _cluster_status(ports, security) if with_cluster else ""
    request = describe_quorum_request()
    for port in ports:
        try:
            conn = await Connection.open(
                "127.0.0.1", port, timeout_ms=500 if security is None else 2_000, security=security
            )
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


def _start_controller(
    directory: Path, node_id: int, config: Path, build: Path | None = None
) -> subprocess.Popen[bytes]:
    """``pykraft server start`` in its own session, its output in ``controller-N.log``; from
    the pykraft source tree ``build`` (its ``src/`` first on the path) when given."""
    env = dict(os.environ)
    if build is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(build / "src"), env.get("PYTHONPATH")])
        )
    with (directory / f"controller-{node_id}.log").open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
            env=env,
        )


RESTART_DIR = "restart-requests"  # ``local restart ID`` drops a file named ID here
PID_FILE = "local-up.pid"


class Member:
    """One controller or broker process of the local cluster, which can die and be
    started again."""

    def __init__(self, kind: str, node_id: int, start: Callable[..., Any], log: Path) -> None:
        self.kind = kind
        self.node_id = node_id
        self._start = start
        self.log = log
        self.process: Any = None
        self.down_since: float | None = None
        self.build: Path | None = None  # a controller's pykraft source tree (an upgrade)

    def start(self) -> None:
        self.process = self._start(self.build) if self.kind == "controller" else self._start()
        self.down_since = None

    @property
    def alive(self) -> bool:
        p = self.process
        if p is None:
            return False
        if isinstance(p, subprocess.Popen):
            return p.poll() is None
        return bool(p.running)

    def exit_code(self) -> int | None:
        p = self.process
        if isinstance(p, subprocess.Popen):
            return p.poll()
        return None if p is None else p.popen.poll()

    def stop(self, timeout_s: float) -> bool:
        """SIGTERM and wait (a broker's controlled shutdown); True when it stopped cleanly."""
        p = self.process
        if p is None or not self.alive:
            return True
        if isinstance(p, subprocess.Popen):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                return False
            return True
        return bool(p.stop(timeout_s=timeout_s) in (0, 143))

    def name(self) -> str:
        return f"{self.kind} {self.node_id}"


class Watch:
    """The status loop: who died, restarts asked for (``local restart``) or due
    (``--restart-after``), and the status line (redrawn on a terminal, printed on change
    otherwise)."""

    def __init__(
        self,
        directory: Path,
        members: list[Member],
        ports: list[int],
        restart_after: float | None,
        security: ClientSecurity | None = None,
    ) -> None:
        self.security = security
        self.directory = directory
        self.members = members
        self.ports = ports
        self.restart_after = restart_after
        self.stopping = False
        self._last_state = ""

    def run(self) -> None:
        def on_signal(signum: int, frame: object) -> None:
            self.stopping = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        requests = self.directory / RESTART_DIR
        requests.mkdir(exist_ok=True)
        while not self.stopping:
            self._notice_exits()
            self._restarts(requests)
            self._show()
            with contextlib.suppress(InterruptedError):
                time.sleep(STATUS_INTERVAL_S)

    def _say(self, text: str) -> None:
        print(time.strftime("%H:%M:%S ") + text, flush=True)
        self._last_state = ""  # show the status again after a message

    def _notice_exits(self) -> None:
        for m in self.members:
            if m.down_since is None and not m.alive:
                m.down_since = time.monotonic()
                how = (
                    f"restarting it in {self.restart_after:g} s"
                    if self.restart_after is not None
                    else f"`pykraft local restart {m.node_id} --dir {self.directory}` starts it again"
                )
                self._say(f"{m.name()} exited (code {m.exit_code()}; log {m.log}); {how}")

    def _restarts(self, requests: Path) -> None:
        asked: dict[int, str] = {}  # node id -> the build asked for ("": the same)
        for request in requests.iterdir():
            if not request.name.isdigit():
                continue  # being written (``local restart`` renames it when complete)
            with contextlib.suppress(OSError):
                asked[int(request.name)] = request.read_text().strip()
                request.unlink()
        now = time.monotonic()
        for m in self.members:
            due = (
                self.restart_after is not None
                and m.down_since is not None
                and now - m.down_since >= self.restart_after
            )
            if m.node_id not in asked and not due:
                continue
            if asked.get(m.node_id) and m.kind == "controller":
                m.build = Path(asked[m.node_id])
            if m.alive:
                self._say(f"restarting {m.name()} (SIGTERM)")
                m.stop(STOP_TIMEOUT_S * 2)
            m.start()
            self._say(f"{m.name()} started again")
            if m.node_id in asked:  # ``request_restart``'s caller may wait for this
                (requests / f"{m.node_id}.started").touch()

    def _show(self) -> None:
        brokers_up = any(m.kind == "broker" and m.alive for m in self.members)
        line = asyncio.run(_status(self.ports, with_cluster=brokers_up, security=self.security))
        down = [m.name() for m in self.members if not m.alive]
        state = line + (f" down={','.join(down)}" if down else "")
        # What changes every second (the high watermark, the lag) is not a change of state:
        # a line is printed when the rest changes, with the figures of that moment.
        key = " ".join(w for w in state.split() if not w.startswith(("high_watermark=", "lag=")))
        if key != self._last_state:
            print(time.strftime("%H:%M:%S ") + state, flush=True)
        self._last_state = key


def _stop(members: list[Member]) -> int:
    """Brokers first (controlled shutdown while the controllers run), then the controllers;
    1 when anything did not stop cleanly."""
    code = 0
    for m in members:
        if m.kind == "broker" and m.alive:
            m.process.signal(signal.SIGTERM)  # controlled shutdown, while the controllers run
    for kind, timeout in (("broker", STOP_TIMEOUT_S * 2), ("controller", STOP_TIMEOUT_S)):
        for m in members:
            if m.kind == kind and not m.stop(timeout):
                code = 1
    return code


def request_restart(directory: Path, node_id: int, build: Path | None) -> None:
    """Ask the running ``local up`` to (re)start ``node_id`` (a controller from ``build``)."""
    (directory / RESTART_DIR).mkdir(exist_ok=True)
    (directory / RESTART_DIR / f"{node_id}.started").unlink(missing_ok=True)  # an older one
    partial = directory / RESTART_DIR / f".{node_id}"
    partial.write_text("" if build is None else str(build))
    partial.rename(directory / RESTART_DIR / str(node_id))  # complete when it appears


def restarted(directory: Path, node_id: int, timeout_s: float) -> bool:
    """Wait until ``local up`` started ``node_id`` again after ``request_restart``."""
    done = directory / RESTART_DIR / f"{node_id}.started"
    deadline = time.monotonic() + timeout_s
    while not done.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    done.unlink()
    return True


def _restart(args: argparse.Namespace) -> int:
    """``pykraft local restart ID``: ask the running ``local up`` to (re)start a member."""
    directory: Path = args.dir
    known = [
        directory / f"controller-{args.id}.properties",
        directory / f"broker-{args.id}.properties",
    ]
    if not any(p.exists() for p in known):
        print(
            f"pykraft local restart: no controller or broker {args.id} in {directory}",
            file=sys.stderr,
        )
        return 2
    pid_file = directory / PID_FILE
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        print(
            f"pykraft local restart: no `pykraft local up` is running on {directory}",
            file=sys.stderr,
        )
        return 2
    request_restart(directory, args.id, None if args.build is None else args.build.resolve())
    print(
        f"restart of {args.id} requested (the running `pykraft local up` does it within a second)"
    )
    return 0


SECURE_MARKER: Final = "secure"


def _secure_setup(base: Path, asked: bool) -> SecureSetup | None:
    """The secure cluster's settings when ``--secure`` is given or the directory was made
    secure on its first run (the marker file); the CA is kept, the nodes' certificates are
    issued again each time."""
    marker = base / SECURE_MARKER
    fresh = not (base / "controller-1.properties").exists()
    if not (marker.exists() or (asked and fresh)):
        return None
    from pykraft.interop.secure import SecureSetup

    base.mkdir(parents=True, exist_ok=True)
    marker.write_text("SASL_SSL, StandardAuthorizer, SCRAM users (pykraft local up --secure)\n")
    return SecureSetup(base)


def _members(
    directory: Path, controllers: list[tuple[int, int, Path]], broker_configs: list[Path]
) -> list[Member]:
    """The controllers (pykraft) and brokers (Kafka's) the local cluster runs."""
    members = [
        Member(
            "controller",
            node_id,
            functools.partial(_start_controller, directory, node_id, config),
            directory / f"controller-{node_id}.log",
        )
        for node_id, _, config in controllers
    ]
    if broker_configs:
        from pykraft.interop.kafka import REFERENCE_DIST, KafkaDist

        dist = KafkaDist.get(REFERENCE_DIST)
        for config in broker_configs:
            log = directory / (config.stem + ".log")
            broker_id = int(config.stem.split("-", 1)[1])
            start = functools.partial(dist.start, "server", str(config), log=log)
            members.append(Member("broker", broker_id, start, log))
    return members


def _up(args: argparse.Namespace) -> int:
    from pykraft.node.config import ConfigError
    from pykraft.storage import StorageError

    if args.controllers < 1:
        print("pykraft local up: --controllers must be >= 1", file=sys.stderr)
        return 2
    secure = _secure_setup(args.dir, args.secure)
    if args.secure and secure is None:
        print(
            f"pykraft local up: {args.dir} was made without --secure; use another --dir",
            file=sys.stderr,
        )
        return 2
    try:
        controllers = _prepare(args.dir, args.controllers, secure)
    except (ConfigError, StorageError) as e:
        print(f"pykraft local up: {e}", file=sys.stderr)
        return 1
    broker_configs: list[Path] = []
    if args.brokers > 0:
        from pykraft.interop.kafka import KafkaError

        voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port, _ in controllers)
        cluster_id = (args.dir / "cluster.id").read_text().strip()
        try:
            broker_configs = _prepare_brokers(args.dir, args.brokers, voters, cluster_id, secure)
        except KafkaError as e:
            reason = str(e).splitlines()[0]
            print(f"no Kafka brokers: {reason}; running the controllers alone", flush=True)

    members = _members(args.dir, controllers, broker_configs)
    for m in members:
        m.build = (
            args.build.resolve() if args.build is not None and m.kind == "controller" else None
        )
    ports = [port for _, port, _ in controllers]
    (args.dir / PID_FILE).write_text(f"{os.getpid()}\n")
    for m in members:
        if m.kind == "controller":
            m.start()
    print("bootstrap controllers: " + ",".join(f"127.0.0.1:{p}" for p in ports), flush=True)
    for m in members:
        if m.kind == "broker":
            m.start()
    if broker_configs:
        bootstrap = ",".join(_broker_address(c) for c in broker_configs)
        print("bootstrap.servers=" + bootstrap, flush=True)
        if secure is None:
            print_examples(bootstrap)
    print_health(controllers)
    security = print_client_settings(args.dir, secure)
    try:
        Watch(args.dir, members, ports, args.restart_after, security).run()
    finally:
        code = _stop(members)
        with contextlib.suppress(OSError):
            (args.dir / PID_FILE).unlink()
    print("stopped", flush=True)
    return code
