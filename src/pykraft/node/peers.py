"""Where the node's requests go: each voter's and the leader's address on the controller
listener, and one ``PeerChannel`` per address."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pykraft.net.client import ChannelStats, PeerChannel
from pykraft.node.config import NodeConfig
from pykraft.protocol import FRAME_MAX_BYTES_DEFAULT
from pykraft.raft.api import RaftApi
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AnyRequest,
    AnyResponse,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
)
from pykraft.raft.types import Endpoint

__all__ = ["Address", "PeerResult", "Peers"]

_VOTER_CHANGES = (AddRaftVoterRequest, RemoveRaftVoterRequest, UpdateRaftVoterRequest)

log = logging.getLogger("pykraft.node")

Address = tuple[str, int]
# (core request id, response or None when the request failed, destination node id)
PeerResult = Callable[[int, AnyResponse | None, int], None]


class Peers:
    """The node's outbound side. Invariant: ``_request_dst`` holds the core's id of every
    request handed to a channel whose result has not been reported yet."""

    __slots__ = ("_channels", "_config", "_on_result", "_request_dst", "_static", "stats")

    def __init__(self, config: NodeConfig, on_result: PeerResult) -> None:
        self._config = config
        self._on_result = on_result
        # One channel per (address, lane). Responses come back in order per connection, so a
        # voter-change request (whose answer waits for a commit) gets its own connection:
        # on the fetch connection it would hold back the very Fetch that commit needs
        # (an auto-joining controller's AddRaftVoter stalled 30 s that way).
        self._channels: dict[tuple[Address, str], PeerChannel] = {}
        self._request_dst: dict[int, int] = {}  # core request id -> destination node id
        # static voters (kraft.version 0)
        self._static = {v.id: (v.host, v.port) for v in config.quorum_voters}
        self.stats = ChannelStats()  # what every channel sent and received

    def voter_addresses(self, core: RaftApi | None) -> dict[int, Address]:
        """Each voter's address on the controller listener, from the voter set (falling back
        to ``controller.quorum.voters``)."""
        listener = self._config.controller_listener.name
        addresses = dict(self._static)
        if core is not None:
            for voter_id in core.voters.ids:
                for e in core.voters.endpoints(voter_id):
                    if e.name == listener:
                        addresses[voter_id] = (e.host, e.port)
                        break
            addresses = {i: a for i, a in addresses.items() if i in core.voters.ids}
        return addresses

    def leader_address(self, core: RaftApi | None, own_port: Callable[[], int]) -> Address | None:
        if core is None or core.leader_id < 0:
            return None
        listener = self._config.controller_listener
        if core.leader_id == self._config.node_id:
            return (listener.host or "localhost", own_port())
        for e in getattr(core.state, "leader_endpoints", ()):
            if e.name == listener.name:
                return (e.host, e.port)
        return self.voter_addresses(core).get(core.leader_id)

    def address_of(
        self, core: RaftApi, dst: int, endpoint: Endpoint | None, own_port: Callable[[], int]
    ) -> Address | None:
        """Where to send to ``dst``: the endpoint the core named, else the voter set's (or
        the static config's) address, else the leader's endpoint as learnt from responses."""
        if endpoint is not None:
            return endpoint.host, endpoint.port
        address = self.voter_addresses(core).get(dst)
        if address is None and dst == core.leader_id:
            address = self.leader_address(core, own_port)
        return address

    def send(
        self,
        loop: asyncio.AbstractEventLoop,
        address: Address | None,
        dst: int,
        request_id: int,
        body: AnyRequest,
    ) -> None:
        """Send on ``address``'s channel; the result comes through ``on_result`` (at once,
        as a failure, when there is no address)."""
        if address is None:
            log.debug("no address for node %d; failing request %d", dst, request_id)
            loop.call_soon(self._on_result, request_id, None, dst)
            return
        lane = "admin" if isinstance(body, _VOTER_CHANGES) else "quorum"
        channel = self._channels.get((address, lane))
        if channel is None:
            cfg = self._config
            channel = PeerChannel(
                address[0],
                address[1],
                listener_name=cfg.controller_listener.name,
                on_result=self._on_channel_result,
                request_timeout_ms=cfg.quorum_request_timeout_ms,
                retry_backoff_ms=cfg.quorum_retry_backoff_ms,
                # Responses are not bounded by socket.request.max.bytes (a limit on what
                # this node *accepts as requests*): a Fetch answer carries up to
                # fetch_max_bytes plus at least one whole batch, as Kafka's client allows.
                frame_max_bytes=max(FRAME_MAX_BYTES_DEFAULT, cfg.socket_request_max_bytes),
                security=None if cfg.security is None else cfg.security.client,
                stats=self.stats,
            )
            self._channels[(address, lane)] = channel
        self._request_dst[request_id] = dst
        channel.send(request_id, body)

    def _on_channel_result(self, request_id: int, response: AnyResponse | None) -> None:
        dst = self._request_dst.pop(request_id, None)
        if dst is not None:
            self._on_result(request_id, response, dst)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
