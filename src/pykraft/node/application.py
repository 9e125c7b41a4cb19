"""What runs on a node's log: the interface between ``RaftNode`` and its application (the
metadata controller of ``pykraft server``, ``pykraft.node.controller_host``).

The node calls, all on its event loop:

* ``api_rows()`` once at start: the APIs the application serves, added to the listener's
  table (and to ApiVersions);
* ``started()`` once storage is open and the core built, before the first input;
* ``refuse(request, session)`` first for every request: an error response when the
  session's principal may not make it (authorization), None to go on;
* ``handle(request, session)`` for every request the node does not answer from its
  own state: an ``Answer`` takes it, None leaves it to the node (the quorum RPCs);
* ``after_ready(ready)`` after the node performed each ``Ready`` (a new high watermark, a
  leader change, a loaded snapshot); the application writes through ``RaftNode.run``,
  never from inside this call;
* ``features()`` for ApiVersions: supported ranges, finalized levels and their epoch;
* ``image()`` the metadata image, for Metadata and DescribeCluster (None: none yet);
* ``scram_credential(mechanism, user)`` a SCRAM user's credential from the log (SASL);
* ``metrics()`` its series for the Prometheus endpoint: a gauge as (name, help, value), or a
  whole metric family;
* ``not_ready()`` why it is not ready, one line each (``/health/ready``; empty: ready);
* ``stopped()`` once, when the node shuts down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kio.static.protocol import ResponsePayload

from pykraft.metadata.image import Image
from pykraft.net.answer import Answer
from pykraft.net.sasl import ScramCredential
from pykraft.net.security import Session
from pykraft.node.metrics import Extra
from pykraft.protocol import ApiVersionRange, DecodedRequest
from pykraft.raft.interfaces import Ready

__all__ = ["Application"]


class Application(Protocol):
    def api_rows(self) -> tuple[ApiVersionRange, ...]: ...

    def started(self) -> None: ...

    def refuse(self, request: DecodedRequest, session: Session) -> ResponsePayload | None: ...

    def handle(self, request: DecodedRequest, session: Session) -> Answer | None: ...

    def after_ready(self, ready: Ready) -> None: ...

    def features(
        self,
    ) -> tuple[Mapping[str, tuple[int, int]], Mapping[str, int], int]: ...

    def image(self) -> Image | None: ...

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None: ...

    def metrics(self) -> list[Extra]: ...

    def not_ready(self) -> list[str]: ...  # why it is not ready (the health endpoint)

    def stopped(self) -> None: ...
