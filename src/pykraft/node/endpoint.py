"""The node's HTTP port (``metrics.port``): Prometheus metrics at ``/metrics`` (and ``/``) and
the health answers of ``node/health.py`` at ``/health/live``, ``/health/ready`` and
``/health/safe-to-restart``.

Theory of operation. The server runs on threads of its own (the standard library's WSGI
server, one thread per request), never on the node's event loop. Whatever it reads of the
node it reads on the loop: a step is posted to the loop (``call_on_loop``) and waited for
with a bound; a loop that does not answer in time is the answer (not live, not ready, an
empty scrape), never a hung probe. The facts come from the :class:`EndpointSite` (the
driver): the core, the application, the clock. ``safe-to-restart`` needs the leader's view
of the voters: the leader reads it off its own core; any other node asks the quorum for
DescribeQuorum through its own controller listener (the admin client follows to the leader),
with the listener's client security, off the loop. ``/health/live`` names the process's
``incarnation`` (a random id drawn at start), by which a rolling restart knows the node came
back as a new process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Final, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from pykraft.node.health import (
    LIVE_BOUND_S,
    HealthFacts,
    HwmWatch,
    Verdict,
    VoterCatchUp,
    readiness,
    restart_safety,
)
from pykraft.node.metrics import Snapshot, current_state, registry_of
from pykraft.node.on_loop import LoopTimeout, call_on_loop
from pykraft.raft.roles import Follower, Leader

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from pykraft.net.security import ClientSecurity
    from pykraft.node.application import Application
    from pykraft.node.config import NodeConfig
    from pykraft.raft.api import RaftApi

__all__ = [
    "EndpointSite",
    "HealthSource",
    "NodeEndpoint",
    "health_facts",
    "leader_view",
    "open_endpoint",
]

log = logging.getLogger(__name__)
QUORUM_TIMEOUT_MS: Final = 5_000  # DescribeQuorum through the listener
# This process's own id, in /health/live: a roller knows a restarted node by a new one (a
# pid may repeat: a container's process is always 1).
INCARNATION: Final = uuid.uuid4().hex


class EndpointSite(Protocol):
    """What the endpoint reads of the node (the driver)."""

    def health_facts(self) -> HealthFacts | None: ...  # on the loop; None before start

    def leader_view(self) -> tuple[int, list[VoterCatchUp]] | None: ...  # on the loop

    node_id: int
    fetch_timeout_ms: int
    listener_address: tuple[str, int]
    client_security: ClientSecurity | None


class HealthSource:
    """A node as the endpoint sees it: its core, its clock and its application's reasons
    through callables (the driver hands them over; no back pointer)."""

    def __init__(
        self,
        config: NodeConfig,
        core: Callable[[], RaftApi | None],
        now_ms: Callable[[], int],
        application: Application | None,
    ) -> None:
        """``application``: its ``not_ready`` reasons count (None: a bare quorum)."""
        self._core = core
        self._now_ms = now_ms
        self._application = application
        self._watch = HwmWatch()
        self.node_id = config.node_id
        self.fetch_timeout_ms = config.quorum_fetch_timeout_ms
        listener = config.controller_listener
        host = listener.host if listener.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        self.listener_address = (host, listener.port)
        self.client_security = None if config.security is None else config.security.client

    def health_facts(self) -> HealthFacts | None:
        core = self._core()
        if core is None:
            return None
        app = self._application
        reasons = app.not_ready() if app is not None else ()
        return health_facts(core, self._now_ms(), self.fetch_timeout_ms, self._watch, reasons)

    def leader_view(self) -> tuple[int, list[VoterCatchUp]] | None:
        core = self._core()
        return None if core is None else leader_view(core, self._now_ms())


def leader_view(core: RaftApi, now_ms: int) -> tuple[int, list[VoterCatchUp]] | None:
    """The leader's voters and their last caught-up times (its DescribeQuorum); None on a
    node that does not lead."""
    if not isinstance(core.state, Leader):
        return None
    described = core.describe_quorum(now_ms)
    return described.leader_id, [
        VoterCatchUp(v.replica_key.id, v.last_caught_up_timestamp) for v in described.voters
    ]


def health_facts(
    core: RaftApi, now_ms: int, fetch_timeout_ms: int, watch: HwmWatch, application: Iterable[str]
) -> HealthFacts:
    """Readiness facts off the core (on the loop)."""
    role = core.state
    heard: int | None = None
    if isinstance(role, Leader):
        heard = _majority_heard_ms(core, role, now_ms)
    elif isinstance(role, Follower) and role.fetched_from_leader:
        heard = now_ms - (role.fetch_deadline_ms - fetch_timeout_ms)
    caught_up = core.caught_up_ms
    leo = core.log.end_offset
    return HealthFacts(
        node_id=core.local_key.id,
        role=current_state(core),
        leader_id=core.leader_id,
        epoch=core.epoch,
        high_watermark=core.high_watermark,
        log_end_offset=leo,
        fetch_timeout_ms=fetch_timeout_ms,
        heard_ms_ago=max(heard, 0) if heard is not None else None,
        caught_up_ms_ago=now_ms - caught_up if caught_up >= 0 else None,
        hwm_stuck_ms=watch.stuck_ms(core.high_watermark, leo, now_ms),
        application=tuple(application),
    )


def _majority_heard_ms(core: RaftApi, leader: Leader, now_ms: int) -> int | None:
    """How long ago a majority of the voters (the leader itself included, if a voter) last
    fetched; None when fewer than a majority ever did in this epoch."""
    local = core.local_key.id
    times = []
    for vid in core.voters.voters:
        progress = leader.progress.voters.get(vid)
        if vid == local:
            times.append(now_ms)
        elif progress is not None and progress.last_fetch_ms >= 0:
            times.append(progress.last_fetch_ms)
    majority = len(core.voters.voters) // 2 + 1
    if len(times) < majority:
        return None
    times.sort(reverse=True)
    return now_ms - times[majority - 1]


def _remote_view(site: EndpointSite) -> tuple[int, list[VoterCatchUp]]:
    """DescribeQuorum through this node's own listener (followed to the leader)."""
    from pykraft.admin.client import AdminClient

    host, port = site.listener_address

    async def ask() -> tuple[int, list[VoterCatchUp]]:
        client = AdminClient(
            f"{host}:{port}",
            request_timeout_ms=QUORUM_TIMEOUT_MS,
            timeout_ms=QUORUM_TIMEOUT_MS,
            client_id="pykraft-health",
            security=site.client_security,
        )
        try:
            info = await client.describe_quorum()
        finally:
            await client.close()
        return info.leader_id, [
            VoterCatchUp(v.replica_id, v.last_caught_up_timestamp) for v in info.voters
        ]

    return asyncio.run(ask())


class NodeEndpoint:
    """The HTTP server of ``metrics.port`` (module docstring)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, site: EndpointSite, registry: CollectorRegistry
    ) -> None:
        self._loop = loop
        self._site = site
        self._metrics = make_wsgi_app(registry)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def start(self, host: str, port: int) -> None:
        server = make_server(
            host or "0.0.0.0", port, self._app, _ThreadingServer, handler_class=_QuietHandler
        )
        self._server = server
        self.port = int(server.server_port)
        self._thread = threading.Thread(
            target=server.serve_forever, name="pykraft-endpoint", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # -- the answers ---------------------------------------------------------------------

    def _app(self, environ: WSGIEnvironment, start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        answers = {
            "/health/live": self.live,
            "/health/ready": self.ready,
            "/health/safe-to-restart": self.safe_to_restart,
        }
        answer = answers.get(path.rstrip("/"))
        if answer is None:
            metrics: Iterable[bytes] = self._metrics(environ, start)
            return metrics
        verdict = answer()
        status = "200 OK" if verdict.ok else "503 Service Unavailable"
        body = verdict.body()
        start(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def live(self) -> Verdict:
        try:
            call_on_loop(self._loop, lambda: None, LIVE_BOUND_S)
        except LoopTimeout:
            return Verdict(False, (f"the event loop did not answer within {LIVE_BOUND_S} s",))
        return Verdict(True, (), {"node_id": self._site.node_id, "incarnation": INCARNATION})

    def ready(self) -> Verdict:
        try:
            facts = call_on_loop(self._loop, self._site.health_facts, LIVE_BOUND_S)
        except LoopTimeout:
            return Verdict(False, (f"the event loop did not answer within {LIVE_BOUND_S} s",))
        if facts is None:
            return Verdict(False, ("the node has not started",))
        return readiness(facts)

    def safe_to_restart(self) -> Verdict:
        site = self._site
        try:
            view = call_on_loop(self._loop, site.leader_view, LIVE_BOUND_S)
            if view is None:
                view = _remote_view(site)
        except LoopTimeout:
            return Verdict(False, (f"the event loop did not answer within {LIVE_BOUND_S} s",))
        except Exception as e:  # the quorum did not answer: not known to be safe
            return Verdict(False, (f"DescribeQuorum failed: {e}",), {"node_id": site.node_id})
        leader_id, voters = view
        return restart_safety(site.node_id, leader_id, voters, site.fetch_timeout_ms)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def open_endpoint(
    loop: asyncio.AbstractEventLoop,
    config: NodeConfig,
    take_metrics: Callable[[], Snapshot | None],
    source: HealthSource,
) -> NodeEndpoint:
    """The node's HTTP port, started on ``metrics.port`` (the listener's host)."""
    assert config.metrics_port is not None
    endpoint = NodeEndpoint(loop, source, registry_of(loop, take_metrics))
    endpoint.start(config.controller_listener.host, config.metrics_port)
    log.info("metrics and health endpoint listening port=%d", endpoint.port)
    return endpoint
