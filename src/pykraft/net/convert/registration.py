"""ControllerRegistration (70, v0; KIP-919) between kio and the core: a controller's
listeners and kraft.version range, sent to the active controller, which the core reads to
know a would-be voter's endpoints and whether it can be added (D4). A registration without
the kraft.version feature says range 0-0."""

from __future__ import annotations

import datetime
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    KRAFT_VERSION_FEATURE,
    Converters,
    kio_module,
    listeners,
)
from pykraft.protocol import ApiKey
from pykraft.raft.messages import ControllerRegistrationRequest, ControllerRegistrationResponse

__all__ = ["CONVERTERS"]


def request_from_kio(message: RequestPayload, _local_id: int) -> ControllerRegistrationRequest:
    m: Any = message
    kraft = next((f for f in m.features if str(f.name) == KRAFT_VERSION_FEATURE), None)
    return ControllerRegistrationRequest(
        controller_id=int(m.controller_id),
        incarnation_id=str(m.incarnation_id),
        listeners=listeners(m.listeners),
        min_kraft_version=int(kraft.min_supported_version) if kraft is not None else 0,
        max_kraft_version=int(kraft.max_supported_version) if kraft is not None else 0,
    )


def response_to_kio(
    response: ControllerRegistrationResponse, version: int, _listener: str
) -> ResponsePayload:
    mod = kio_module(ApiKey.CONTROLLER_REGISTRATION, version, "response")
    result: ResponsePayload = mod.ControllerRegistrationResponse(
        throttle_time=datetime.timedelta(0),
        error_code=response.error,
        error_message=response.error_message,
    )
    return result


CONVERTERS: Final = Converters(request_from_kio=request_from_kio, response_to_kio=response_to_kio)
