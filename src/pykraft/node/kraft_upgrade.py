"""kraft.version upgraded within an UpdateFeatures that names other features too, as Kafka
4.4.0 does it: ``kafka-features upgrade --release-version X`` always sends kraft.version
with metadata.version and the other features, and Kafka's ``FeatureControlManager`` asks its
raft client to upgrade kraft.version (``KRaftVersionAccessor.upgradeKRaftVersion``) within
the same request.

Theory of operation. An UpdateFeatures of kraft.version alone goes to the quorum (SPEC D10).
One that raises kraft.version beside other features goes here first: the quorum's upgrade is
started (``RaftApi.update_kraft_version``, validate-only when the request is); when the core
reports it done -- committed, or refused (a voter or observer that does not support the
level, a voter change in flight, leadership lost) -- the request either gets that error
(nothing written, as Kafka answers an update that fails) or goes on to the controller, which
then sees kraft.version at the requested level and writes the other features' records; the
response leaves once those commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kio.static.protocol import ResponsePayload

from pykraft.controller.authorization import Caller
from pykraft.net.answer import Answer
from pykraft.protocol import DecodedRequest, ErrorCode
from pykraft.raft.api import RaftApi
from pykraft.raft.interfaces import OperationResult

__all__ = ["KraftUpgrades"]

# (request, answer, caller, kraft.version the controller is to see)
Process = Callable[[DecodedRequest, Answer, Caller | None, int], None]
Refuse = Callable[[DecodedRequest, ErrorCode, str | None], ResponsePayload]


@dataclass(frozen=True, slots=True)
class _Waiting:
    request: DecodedRequest
    answer: Answer
    caller: Caller | None
    level: int


class KraftUpgrades:
    """Invariant: each waiting request is answered exactly once, by ``completed``."""

    def __init__(self, process: Process, refuse: Refuse) -> None:
        self._process = process
        self._refuse = refuse
        self._waiting: dict[int, _Waiting] = {}

    def start(
        self,
        core: RaftApi,
        request: DecodedRequest,
        answer: Answer,
        caller: Caller | None,
        level: int,
        now_ms: int,
    ) -> None:
        validate_only = bool(getattr(request.message, "validate_only", False))
        op_id = core.update_kraft_version(level, now_ms, validate_only)
        self._waiting[op_id] = _Waiting(request, answer, caller, level)

    def completed(self, results: Sequence[OperationResult]) -> None:
        for done in results:
            waiting = self._waiting.pop(done.op_id, None)
            if waiting is None or waiting.answer.done:
                continue
            if done.error != ErrorCode.none:
                waiting.answer.set(self._refuse(waiting.request, done.error, done.message))
            else:
                self._process(waiting.request, waiting.answer, waiting.caller, waiting.level)
