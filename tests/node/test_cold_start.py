"""A controller whose image is still loading at start (``MetaLogListener.cold``, issue 30):
its raft runs, but controller requests get NOT_CONTROLLER, and with an authorizer only super
users pass the cluster check (Kafka's StandardAuthorizer before its initial load; the others
get UNKNOWN_SERVER_ERROR); once the load is in, the normal rules apply again. A real
single-voter node with its real host; the load is made cold again by hand after the start
(a load of a large snapshot is what makes it last)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kio.schema.errors import ErrorCode

from pykraft.net.security import KafkaPrincipal, SecurityProtocol, Session
from pykraft.node.config import STANDARD_AUTHORIZER, load_config
from pykraft.node.controller_host import ControllerHost
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make
from pykraft.protocol.codec import DecodedRequest

from .test_driver import leader_node, single_voter


def _heartbeat() -> DecodedRequest:
    fields = {"broker_id": 5, "broker_epoch": 1, "current_metadata_offset": 0, "want_fence": True}
    message = make(request_schema(ApiKey.BROKER_HEARTBEAT, 1), fields)
    return DecodedRequest(ApiKey.BROKER_HEARTBEAT, 1, 7, "test", message)


def _session(user: str) -> Session:
    return Session("CONTROLLER", SecurityProtocol.PLAINTEXT, KafkaPrincipal("User", user))


def test_a_cold_controller_sends_brokers_away_and_passes_only_super_users(tmp_path: Path) -> None:
    path = single_voter(tmp_path)
    with path.open("a") as f:
        f.write(f"authorizer.class.name={STANDARD_AUTHORIZER}\nsuper.users=User:admin\n")
        f.write("allow.everyone.if.no.acl.found=true\n")
    config = load_config(path)

    async def go() -> None:
        async with leader_node(config) as node:
            host = ControllerHost(node, config.controller_config(), bootstrap=None)
            node.application = host
            host.started()
            await asyncio.sleep(0.2)  # the first sync: nothing to load here
            listener = host.listener
            assert listener is not None and not listener.cold and host.controller is not None
            # Warm: anyone passes the cluster check (no ACLs, allow.everyone...).
            assert host.refuse(_heartbeat(), _session("alice")) is None

            listener.begin_load()  # as at the start of a process with a large snapshot
            assert listener.cold and host.controller is None
            assert host.refuse(_heartbeat(), _session("admin")) is None
            refused = host.refuse(_heartbeat(), _session("alice"))
            assert refused is not None
            assert int(refused.error_code) == ErrorCode.unknown_server_error
            answer = host.handle(_heartbeat(), _session("admin"))
            assert answer is not None and answer.payload is not None
            assert int(answer.payload.error_code) == ErrorCode.not_controller

            host._run_sync()  # the host's next sync (after the node's next Ready) loads it
            await asyncio.sleep(0.2)
            assert not listener.cold and host.controller is not None
            assert host.refuse(_heartbeat(), _session("alice")) is None

    asyncio.run(go())
