"""``pykraft server start``: run one node until SIGTERM/SIGINT, then shut down gracefully.

Log lines go to stderr, one per event, ``key=value`` structured (role transitions name
from, to, epoch and reason).

The node runs the metadata controller (``pykraft.node.controller_host``) on its log.

``pykraft.debug.append.interval.ms`` (pykraft's own, off by default) makes the leader append
one small record every interval and log ``committed offset=... value=node-<id>-<n>`` once it
commits: a heartbeat the end-to-end tests and ``pykraft local up`` follow. The record is a
metadata ``NoOpRecord`` carrying the value in a tagged field of its own
(``pykraft.metadata.tagged``), so every controller, pykraft's or Kafka's, replays it as a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Final

from pykraft import native
from pykraft.metadata.tagged import tagged_noop, tagged_value
from pykraft.net.apis import SERVED_APIS
from pykraft.net.server import KafkaServer
from pykraft.node.collector import freeze_from_now_on
from pykraft.node.config import ConfigError, NodeConfig, load_config
from pykraft.node.controller_host import ControllerHost
from pykraft.node.driver import AppendLostError, NodeStartError, RaftNode
from pykraft.node.reconfigure import ListenerLimits, ListenerTls, replace_tls
from pykraft.protocol.apis import import_newest
from pykraft.raft.config import NotLeaderError
from pykraft.raft.roles import Leader
from pykraft.storage import StorageError
from pykraft.storage.bootstrap import read_bootstrap_metadata, read_bootstrap_records

__all__ = ["debug_record", "debug_value", "run_server", "serve"]


def debug_record(value: bytes) -> bytes:
    """The debug appender's record: a NoOpRecord carrying ``value``."""
    return tagged_noop(value)


def debug_value(record_value: bytes | None) -> bytes | None:
    """The value of a debug record (None for any other record)."""
    return tagged_value(record_value)


log = logging.getLogger("pykraft.node")

# Kafka's combined mode (process.roles=broker,controller) or a broker alone: pykraft runs the
# controller role only (issue 46); a node that started anyway would run no broker at all.
BROKER_ROLE_REFUSED: Final = (
    "process.roles must be controller: pykraft is a KRaft controller only; run an Apache "
    "Kafka broker beside it (process.roles=broker), as `pykraft local up` does"
)


def _setup_logging(node_id: int) -> None:
    logging.basicConfig(
        level=os.environ.get("PYKRAFT_LOG_LEVEL", "INFO").upper(),
        stream=sys.stderr,
        format=f"%(asctime)s %(levelname)s [node {node_id}] %(name)s: %(message)s",
    )


async def _debug_appender(node: RaftNode, interval_ms: int) -> None:
    """Append a numbered record every interval while leader; log each commit."""
    sequence = 0
    while True:
        await asyncio.sleep(interval_ms / 1000)
        core = node.core
        if core is None or not isinstance(core.state, Leader):
            continue
        value = f"node-{node.config.node_id}-{sequence}".encode()
        sequence += 1
        epoch = core.epoch
        try:
            offset = await node.append([debug_record(value)])
            await node.wait_committed(offset, epoch)
        except (NotLeaderError, AppendLostError, ConnectionError) as e:
            log.info("debug append not committed value=%s: %s", value.decode(), e)
            continue
        log.info("committed offset=%d epoch=%d value=%s", offset, epoch, value.decode())


def _prepare(host: ControllerHost) -> None:
    """Before the node starts: the core's build logged, the newest message classes imported
    and everything imported so far frozen out of the cyclic collector."""
    core_build = native.status()
    log.info(
        "consensus core: %s (%s)",
        "compiled" if core_build.active else "interpreted",
        core_build.reason,
    )
    # The messages of the newest versions, imported before the loop serves (a first Fetch
    # held it 50-60 ms importing its classes); older versions are imported on first use.
    import_newest(SERVED_APIS.with_apis(*host.api_rows()))
    # Everything imported so far (modules, kio's schema classes) lives as long as the process:
    # keep it out of the cyclic GC's scans. A full collection over it took 30-50 ms on a
    # loaded leader (the K=1024 bench's p99); frozen, a collection sees only what the load
    # allocates. Collected here, before the node's loop-lag sampler runs: after the start it
    # held the loop 100-120 ms, counted as the node's longest stall (bench/bench_scale.py).
    gc.collect()
    gc.freeze()


def _reconfigurable(config: NodeConfig, host: ControllerHost, server: KafkaServer) -> None:
    """What changes without a restart (``node/reconfigure.py``): the listener's connection
    quotas, and its TLS stores when it has TLS."""
    name, props = server.listener_name, config.properties
    host.watches.append(ListenerLimits(props, name, config.node_id, server.gate))
    if server.security.server_ssl is not None:
        tls = ListenerTls(props, name, config.node_id, lambda c: replace_tls(server, c))
        host.watches.append(tls)


async def serve(config: NodeConfig) -> int:
    node = RaftNode(config)
    try:
        bootstrap = read_bootstrap_metadata(config.metadata_log_dir)
        bootstrap_records = read_bootstrap_records(config.metadata_log_dir)
    except StorageError as e:
        log.error("cannot start: %s", e)
        return 1
    host = ControllerHost(
        node, config.controller_config(), bootstrap=bootstrap, bootstrap_records=bootstrap_records
    )
    node.application = host
    _prepare(host)
    try:
        await node.start()
    except NodeStartError as e:
        log.error("cannot start: %s", e)
        return 1
    except OSError as e:
        log.error("cannot listen on %s: %s", config.controller_listener, e)
        return 1
    _reconfigurable(config, host, node.server)
    # What the start built joins it, and what survives a long full collection later.
    freeze_from_now_on()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, host.request_snapshot)  # a snapshot on demand
    interval_ms = config.debug_append_interval_ms
    appender = asyncio.ensure_future(_debug_appender(node, interval_ms)) if interval_ms else None
    stopped = asyncio.ensure_future(node.stopped.wait())
    requested = asyncio.ensure_future(stop.wait())
    await asyncio.wait((stopped, requested), return_when=asyncio.FIRST_COMPLETED)
    requested.cancel()
    stopped.cancel()
    if node.failed is not None:
        if appender is not None:
            appender.cancel()
        return 1
    log.info("shutdown requested")
    if appender is not None:
        appender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await appender
    await node.shutdown()
    return 0


def _run(main: Coroutine[Any, Any, int]) -> int:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency, but optional here
        return asyncio.run(main)
    result: int = uvloop.run(main)
    return result


def run_server(path: Path) -> int:
    """Load the config (a one-line error naming the key if bad), then serve."""
    try:
        config = load_config(path)
    except ConfigError as e:
        print(f"pykraft server: {e}", file=sys.stderr)
        return 1
    if config.process_roles != ("controller",):
        print(
            f"pykraft server: {BROKER_ROLE_REFUSED} (process.roles={','.join(config.process_roles)})",
            file=sys.stderr,
        )
        return 1
    _setup_logging(config.node_id)
    for key in config.unknown_keys:
        log.warning("config %s is not used by pykraft", key)
    return _run(serve(config))
