"""Kafka's ``ControllerApis`` cluster check, made before anything else looks at a request
(the quorum's RPCs included): the principal must hold the operation the API needs on the
cluster (``controller/authorization.cluster_operation``). While the controller's image loads
its authorizer is not ready, and only super users pass (Kafka's AuthorizerNotReadyException
reaches the client as UNKNOWN_SERVER_ERROR). A refusal is logged as Kafka logs it."""

from __future__ import annotations

import logging
from typing import Final

from pykraft.controller import authorization
from pykraft.controller.log_listener import MetaLogListener
from pykraft.net.security import Session
from pykraft.node.request_fields import caller_of
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode

__all__ = ["AUTHORIZER_NOT_READY", "cluster_refusal"]

log = logging.getLogger("pykraft.controller")

AUTHORIZER_NOT_READY: Final = "The authorizer is not ready: the metadata image is loading"


def cluster_refusal(
    listener: MetaLogListener | None, request: DecodedRequest, session: Session
) -> tuple[ErrorCode, str] | None:
    """(error, message) refusing ``request`` at the cluster level, or None to go on."""
    op = authorization.cluster_operation(request.api_key)
    if listener is None or op is None:
        return None
    principal = session.principal
    if listener.cold:
        authorizer = listener.controller.authorizer
        if authorizer is None or str(principal) in authorizer.super_users:
            return None
        why, code, message = (
            "the authorizer is not ready",
            ErrorCode.unknown_server_error,
            AUTHORIZER_NOT_READY,
        )
    elif listener.controller.allowed(caller_of(session), op):
        return None
    else:
        why = f"Principal {principal} is not authorized"
        code, message = (
            ErrorCode.cluster_authorization_failed,
            authorization.CLUSTER_AUTHORIZATION_FAILED,
        )
    log.error(
        "Unexpected error handling request %s from %s: %s",
        ApiKey(request.api_key).name,
        session.client_host,
        why,
    )
    return code, message
