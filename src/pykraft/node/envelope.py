"""Envelope (KIP-590): a broker forwards an admin request it got from a client to the active
controller, wrapped with the client's principal; the controller answers the inner request as
its own and wraps the answer. Only the APIs Kafka forwards are accepted.

The broker's connection must hold CLUSTER_ACTION (checked with every request before this,
``ControllerHost.refuse``); the inner request is then authorized as the principal and the
client address the envelope carries (Kafka's DefaultKafkaPrincipalBuilder bytes and the raw
IP), so a broker's client can do no more through the broker than its ACLs allow.

The node it arrives at is seen through :class:`EnvelopeSite`: the APIs it serves, whether its
controller is the active one, and how it answers a request. ``ControllerHost`` is one."""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any, Protocol

from kio.static.protocol import ResponsePayload

from pykraft.net.answer import Answer
from pykraft.net.security import Session, decode_principal
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode
from pykraft.protocol.apis import response_schema
from pykraft.protocol.build import make
from pykraft.protocol.codec import decode_request, encode_response
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS, FORWARDABLE
from pykraft.protocol.errors import ProtocolError

if TYPE_CHECKING:
    from pykraft.protocol.apis import ApiTable

__all__ = ["EnvelopeSite", "envelope", "envelope_error"]

log = logging.getLogger("pykraft.controller")


class EnvelopeSite(Protocol):
    """What an Envelope needs of the node that receives it."""

    @property
    def served_apis(self) -> ApiTable: ...

    @property
    def active(self) -> bool:
        """This node's controller is the active one."""
        ...

    def answer(self, request: DecodedRequest, session: Session) -> Answer:
        """The node's answer to ``request`` as if it came in on ``session``."""
        ...


def envelope(site: EnvelopeSite, request: DecodedRequest, session: Session) -> Answer:
    """A broker's forwarded request (KIP-590): decoded, answered as if it came in on the
    listener, and its answer wrapped in the Envelope response."""
    version = request.api_version
    m: Any = request.message
    try:
        inner = decode_request(bytes(m.request_data), site.served_apis)
    except ProtocolError as e:
        log.warning("envelope with an unreadable request: %s", e)
        return Answer(envelope_error(version, ErrorCode.invalid_request))
    if inner.api_key not in FORWARDABLE:
        return Answer(envelope_error(version, ErrorCode.invalid_request))
    try:
        principal = decode_principal(bytes(m.request_principal or b""))
    except ValueError as e:
        log.warning("envelope with an unreadable principal: %s", e)
        return Answer(envelope_error(version, ErrorCode.principal_deserialization_failure))
    try:
        client_host = str(ipaddress.ip_address(bytes(m.client_host_address)))
    except ValueError:
        log.warning("envelope with an unreadable client address")
        return Answer(envelope_error(version, ErrorCode.invalid_request))
    # The inner request runs as the broker's client: its principal and address (KIP-590).
    session = Session(
        session.listener_name, session.security_protocol, principal, client_host, True
    )
    if inner.api_key in CONTROLLER_API_VERSIONS and not site.active:
        # Kafka answers an Envelope to a standby at the envelope level.
        return Answer(envelope_error(version, ErrorCode.not_controller))
    inner_answer = site.answer(inner, session)
    outer = Answer()

    def wrap() -> None:
        payload = inner_answer.payload
        assert payload is not None
        data = encode_response(inner.correlation_id, payload)[4:]
        outer.set(make(response_schema(ApiKey.ENVELOPE, version), {"response_data": data}))

    if inner_answer.done:
        wrap()
    else:
        inner_answer.attach(wrap)
        outer.on_cancel = inner_answer.cancel
    return outer


def envelope_error(version: int, code: ErrorCode) -> ResponsePayload:
    return make(
        response_schema(ApiKey.ENVELOPE, version), {"response_data": None, "error_code": code}
    )
