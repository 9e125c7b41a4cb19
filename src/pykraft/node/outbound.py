"""Where the node's core speaks to its peers: the core's messages out, the peers' answers and
the requests for the core in.

Theory of operation. A request the core answers (``RaftNode.handle_request`` routes it here
when neither the application nor the node answers it) is stepped in by :meth:`Router.step_in`
under an id of ours. ``RaftNode._pump`` hands every message of a ``Ready`` to
:meth:`Router.send`. A request goes to its peer's channel (``peers.py``: the address from the
voter set, the endpoint the core names, or ``controller.quorum.voters``); a response completes
the inbound request it answers (``PendingAnswers``: the driver numbered it when the core
stepped it, ``inbound.py``) and is written to that connection in the same call. A peer's
answer, or the failure of a request, comes back through :meth:`Router._on_peer_result` as
one more input of the core, stepped by the node's ``run`` (at once, or after the running
flush: the core is never stepped while frozen). DescribeQuorum's replica timestamps leave as
wall-clock times (D11); the core keeps monotonic ones.

The router sees the node through :class:`RouterHost`, what it uses of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from pykraft.net.answer import Answer
from pykraft.net.convert import RejectedRequest
from pykraft.net.security import Session
from pykraft.node.config import NodeConfig
from pykraft.node.inbound import PendingAnswers, decode_for_core, source_of, wall_clock
from pykraft.node.metrics import RaftMetrics, record_count
from pykraft.node.peers import Peers
from pykraft.protocol import DecodedRequest
from pykraft.raft.api import RaftApi
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    DescribeQuorumResponse,
    FetchResponse,
    Inbound,
    Outbound,
    RequestFailed,
    is_request,
)
from pykraft.raft.types import Endpoint

__all__ = ["Router", "RouterHost"]

log = logging.getLogger("pykraft.node")


class RouterHost(Protocol):
    """What the router uses of the node (``RaftNode``)."""

    @property
    def core(self) -> RaftApi | None: ...
    @property
    def metrics(self) -> RaftMetrics | None: ...
    @property
    def port(self) -> int: ...
    @property
    def stopping(self) -> bool: ...

    def now_ms(self) -> int: ...

    def run(self, step: Callable[[], None]) -> None: ...


class Router:
    """The peer channels and the inbound requests awaiting the core's answer."""

    def __init__(self, config: NodeConfig, host: RouterHost) -> None:
        self._host = host
        self.peers = Peers(config, self._on_peer_result)
        self.inbound = PendingAnswers()  # requests stepped into the core, by our ids
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    async def close(self) -> None:
        await self.peers.close()

    def send(self, message: Outbound) -> None:
        """One message of the core's ``Ready``: a request to its peer, or the answer to an
        inbound request."""
        body = message.body
        if is_request(body):
            self._send_request(message.dst, message.request_id, body, message.endpoint)
            return
        if isinstance(body, DescribeQuorumResponse):  # replica timestamps as wall clock (D11)
            body = wall_clock(body, self._host.now_ms(), int(time.time() * 1000))
        self.inbound.answer(message.request_id, body)

    def _send_request(
        self, dst: int, request_id: int, body: AnyRequest, endpoint: Endpoint | None
    ) -> None:
        core = self._host.core
        assert core is not None and self._loop is not None
        address = self.peers.address_of(core, dst, endpoint, lambda: self._host.port)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("request %d to %d at %s: %s", request_id, dst, address, body)
        self.peers.send(self._loop, address, dst, request_id, body)

    def _on_peer_result(self, request_id: int, response: AnyResponse | None, dst: int) -> None:
        host = self._host
        core = host.core
        if core is None or host.stopping:
            return
        metrics = host.metrics
        if isinstance(response, FetchResponse) and response.records and metrics:
            metrics.on_fetch(host.now_ms(), record_count(response.records))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("answer %d from %d: %s", request_id, dst, response)
        if response is None:
            host.run(lambda: core.step(RequestFailed(dst, request_id), host.now_ms()))
        else:
            host.run(lambda: core.step(Inbound(dst, request_id, response), host.now_ms()))

    def step_in(
        self, core: RaftApi, request: DecodedRequest, session: Session, node_id: int
    ) -> Answer:
        """A request for the core: stepped in under an id of ours, its ``Answer`` completed
        when the core's response leaves (:meth:`send`), or refused if the core cannot read
        it."""
        try:
            body = decode_for_core(request, node_id)
        except RejectedRequest as e:
            return Answer(e.response)
        assert self._loop is not None
        timeout_ms = core.config.voter_change_timeout_ms
        rid, answer = self.inbound.add(self._loop, request, session.listener_name, body, timeout_ms)
        host = self._host
        host.run(lambda: core.step(Inbound(source_of(body), rid, body), host.now_ms()))
        return answer

    def voter_addresses(self, core: RaftApi | None) -> dict[int, tuple[str, int]]:
        """Each voter's address on the controller listener, from the voter set (falling back
        to ``controller.quorum.voters``)."""
        return self.peers.voter_addresses(core)

    def leader_address(self, core: RaftApi | None) -> tuple[str, int] | None:
        return self.peers.leader_address(core, lambda: self._host.port)
