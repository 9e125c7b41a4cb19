"""ControllerRegistration (KIP-919): every controller tells each new leader who it is.

Kafka's controllers send ControllerRegistration to the active controller, which records the
controller's listeners and supported features. pykraft's do the same after each leader
change (from a follower or observer: the leader needs no registration of its own): the
leader keeps, per controller id, its endpoints and kraft.version range. That is what lets a
KIP-642 target name an observer by id (its endpoints go into the VotersRecord that adds it)
and what the kraft.version upgrade checks observers against (D10).

One attempt per leader change, retried with backoff while the leader stays the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any, Final

import kio.schema.controller_registration.v0.request as registration_v0

from pykraft.net.client import Connection
from pykraft.net.convert import KRAFT_VERSION_FEATURE
from pykraft.net.security import ClientSecurity
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.types import Endpoint

__all__ = ["ControllerRegistrar"]

log = logging.getLogger("pykraft.node")

ATTEMPTS_MAX: Final = 5
BACKOFF_S: Final = 0.5
PLAINTEXT: Final = 0  # SecurityProtocol id: pykraft's listeners are PLAINTEXT


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("ControllerRegistration failed: %r", task.exception())


class ControllerRegistrar:
    """Sends ControllerRegistration to the leader after each leader change."""

    def __init__(
        self,
        controller_id: int,
        listeners: tuple[Endpoint, ...],
        kraft_versions: tuple[int, int],
        *,
        timeout_ms: int,
        security: ClientSecurity | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.security = security
        self.listeners = listeners
        self.kraft_versions = kraft_versions
        self.incarnation_id = uuid.uuid4()
        self.timeout_ms = timeout_ms
        self._task: asyncio.Task[None] | None = None
        self.registered_with: tuple[int, int] | None = None  # (leader id, epoch) that answered

    def leader_changed(
        self, leader_id: int, epoch: int, address: Callable[[], tuple[str, int] | None]
    ) -> None:
        """Register with ``leader_id`` (reached at ``address()``) unless that is us."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if leader_id < 0 or leader_id == self.controller_id or not self.listeners:
            return
        self._task = asyncio.ensure_future(self._register(leader_id, epoch, address))
        self._task.add_done_callback(_log_crash)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _protocol(self) -> int:
        """The controller listener's security protocol id, as Kafka registers it."""
        return PLAINTEXT if self.security is None else int(self.security.protocol)

    def _request(self) -> Any:
        low, high = self.kraft_versions
        return registration_v0.ControllerRegistrationRequest(
            controller_id=self.controller_id,  # type: ignore[arg-type]
            incarnation_id=self.incarnation_id,
            zk_migration_ready=False,
            listeners=tuple(
                registration_v0.Listener(
                    name=e.name,
                    host=e.host,
                    port=e.port,  # type: ignore[arg-type]
                    security_protocol=self._protocol(),  # type: ignore[arg-type]
                )
                for e in self.listeners
            ),
            features=(
                registration_v0.Feature(
                    name=KRAFT_VERSION_FEATURE,
                    min_supported_version=low,  # type: ignore[arg-type]
                    max_supported_version=high,  # type: ignore[arg-type]
                ),
            ),
        )

    async def _register(
        self, leader_id: int, epoch: int, address: Callable[[], tuple[str, int] | None]
    ) -> None:
        failure = "no address for the leader"
        for attempt in range(ATTEMPTS_MAX):
            if attempt:
                await asyncio.sleep(BACKOFF_S * attempt)
            where = address()
            if where is None:
                continue
            try:
                conn = await Connection.open(
                    *where, timeout_ms=self.timeout_ms, security=self.security
                )
            except (OSError, TimeoutError, ConnectionError) as e:
                failure = f"{where}: {e!r}"
                continue
            try:
                if ApiKey.CONTROLLER_REGISTRATION not in conn.peer_versions:
                    log.info("leader %d does not take ControllerRegistration", leader_id)
                    return
                answer: Any = await conn.request(self._request(), timeout_ms=self.timeout_ms)
            except (OSError, TimeoutError, ConnectionError) as e:
                failure = f"{where}: {e!r}"
                continue
            finally:
                conn.close()
            if answer.error_code == ErrorCode.none:
                self.registered_with = (leader_id, epoch)
                log.info("registered with leader %d epoch %d", leader_id, epoch)
                return
            failure = f"{ErrorCode(answer.error_code).name} {answer.error_message or ''}"
        log.warning(
            "ControllerRegistration to leader %d epoch %d failed %d times: %s",
            leader_id,
            epoch,
            ATTEMPTS_MAX,
            failure,
        )
