"""Delegation tokens in the metadata log: Create/Renew/ExpireDelegationToken as Kafka's
DelegationTokenControlManager handles them, and the sweep of expired tokens
(docs/kafka/SECURITY-CONTRACT.md 6.4).

Theory of operation. A token is a DelegationTokenRecord: owner, requester, renewers, issue,
max and expiry timestamps and an id; its secret, the HMAC-SHA512 of the id under
``delegation.token.secret.key``, is never stored: every broker and controller with the same
key computes it (brokers authenticate clients with SCRAM over it, ``tokenauth=true``).
Tokens are off (DELEGATION_TOKEN_AUTH_DISABLED) without the key. A token-authenticated
caller may not create, renew or expire tokens, nor may a client on a PLAINTEXT connection or
an anonymous one over SSL unless the request was forwarded by a broker (which applied those
rules to its own client). Renew and expire find the token by its HMAC; only the owner or a
renewer may; a token past its expiry or max is DELEGATION_TOKEN_EXPIRED. Renew and expire
rewrite the whole record with the new expiry; an expiry period below zero removes the token
(RemoveDelegationTokenRecord). The active controller's tick removes tokens past their expiry
or max every ``delegation.token.expiry.check.interval.ms``.

Pure: the time is the caller's ``now_ms``; token ids come from the seeded randomness.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator

from kio.schema.errors import ErrorCode

from pykraft.controller.acls import Op, Res
from pykraft.controller.authorization import Allowed, Caller
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.context import duration_ms
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.versions import IBP_3_6_IV2
from pykraft.protocol import views

__all__ = [
    "create_token",
    "expire_token",
    "expired_tokens",
    "renew_token",
    "token_hmac",
]


def token_hmac(secret: str, token_id: str) -> bytes:
    """HmacSHA512 of the token id under the shared secret (Kafka's DelegationTokenManager)."""
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def tokens(image: Image) -> Iterator[r.DelegationTokenRecord]:
    return iter(image.tokens.by_id.values())


def _gate(config: ControllerConfig, metadata_version: int, caller: Caller) -> ErrorCode | None:
    """Kafka's allowTokenRequests and the two feature checks."""
    if not config.delegation_token_secret_key:
        return ErrorCode.delegation_token_auth_disabled
    if metadata_version < IBP_3_6_IV2:
        return ErrorCode.unsupported_version
    if caller.token_authenticated:
        return ErrorCode.delegation_token_request_not_allowed
    if not caller.forwarded and (
        caller.protocol == "PLAINTEXT"
        or (caller.protocol == "SSL" and caller.principal == "User:ANONYMOUS")
    ):
        return ErrorCode.delegation_token_request_not_allowed
    return None


def _create_error(code: ErrorCode, caller: Caller) -> views.CreateDelegationTokenResponse:
    kind, _, name = caller.principal.partition(":")
    return {
        "error_code": code,
        "principal_type": kind,
        "principal_name": name,
        "token_requester_principal_type": kind,
        "token_requester_principal_name": name,
        "issue_timestamp": -1,
        "expiry_timestamp": -1,
        "max_timestamp": -1,
        "token_id": "",
        "hmac": b"",
        "throttle_time": 0,
    }


def create_token(
    image: Image,
    config: ControllerConfig,
    metadata_version: int,
    rng: RandomSource,
    request: views.CreateDelegationTokenRequest,
    caller: Caller,
    now_ms: int,
    allowed: Allowed,
) -> tuple[RecordList, views.CreateDelegationTokenResponse]:
    error = _gate(config, metadata_version, caller)
    if error is not None:
        return [], _create_error(error, caller)
    owner_name = getattr(request, "owner_principal_name", None) or ""
    owner_type = getattr(request, "owner_principal_type", "User")  # v3+, with the name
    owner = f"{owner_type}:{owner_name}" if owner_name else caller.principal
    if owner != caller.principal and not allowed(Op.CREATE_TOKENS, Res.USER, owner):
        return [], _create_error(ErrorCode.delegation_token_authorization_failed, caller)
    renewers = [f"{x.principal_type}:{x.principal_name}" for x in request.renewers]
    if any(not x.startswith("User:") for x in renewers):
        return [], _create_error(ErrorCode.invalid_principal_type, caller)
    token_id = base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode()
    token_id = token_id.rstrip("=")
    requested = duration_ms(request.max_lifetime)
    max_ms = now_ms + (
        min(config.delegation_token_max_lifetime_ms, requested)
        if requested > 0
        else config.delegation_token_max_lifetime_ms
    )
    expiry_ms = min(max_ms, now_ms + config.delegation_token_expiry_time_ms)
    record = r.DelegationTokenRecord(
        owner=owner,
        requester=caller.principal,
        renewers=tuple(renewers),
        issue_timestamp=now_ms,
        max_timestamp=max_ms,
        expiration_timestamp=expiry_ms,
        token_id=token_id,
    )
    owner_kind, _, owner_short = owner.partition(":")
    req_kind, _, req_name = caller.principal.partition(":")
    return [(record, 0)], {
        "error_code": ErrorCode.none,
        "principal_type": owner_kind,
        "principal_name": owner_short,
        "token_requester_principal_type": req_kind,
        "token_requester_principal_name": req_name,
        "issue_timestamp": now_ms,
        "expiry_timestamp": expiry_ms,
        "max_timestamp": max_ms,
        "token_id": token_id,
        "hmac": token_hmac(config.delegation_token_secret_key, token_id),
        "throttle_time": 0,
    }


def _find(
    image: Image,
    config: ControllerConfig,
    metadata_version: int,
    token_hmac_bytes: bytes,
    caller: Caller,
    now_ms: int,
) -> r.DelegationTokenRecord | ErrorCode:
    """The token whose HMAC the request gives, or why it cannot be renewed or expired."""
    error = _gate(config, metadata_version, caller)
    if error is not None:
        return error
    secret = config.delegation_token_secret_key
    for rec in tokens(image):
        if hmac.compare_digest(token_hmac(secret, rec.token_id), token_hmac_bytes):
            if rec.max_timestamp < now_ms or rec.expiration_timestamp < now_ms:
                return ErrorCode.delegation_token_expired
            if caller.principal != rec.owner and caller.principal not in rec.renewers:
                return ErrorCode.delegation_token_owner_mismatch
            return rec
    return ErrorCode.delegation_token_not_found


def _rewritten(rec: r.DelegationTokenRecord, expiry_ms: int) -> r.DelegationTokenRecord:
    return r.DelegationTokenRecord(
        owner=rec.owner,
        requester=rec.requester,
        renewers=tuple(rec.renewers),
        issue_timestamp=rec.issue_timestamp,
        max_timestamp=rec.max_timestamp,
        expiration_timestamp=expiry_ms,
        token_id=rec.token_id,
    )


def renew_token(
    image: Image,
    config: ControllerConfig,
    metadata_version: int,
    request: views.RenewDelegationTokenRequest,
    caller: Caller,
    now_ms: int,
) -> tuple[RecordList, views.RenewDelegationTokenResponse]:
    rec = _find(image, config, metadata_version, bytes(request.hmac), caller, now_ms)
    if isinstance(rec, ErrorCode):
        return [], {"error_code": rec, "expiry_timestamp": -1, "throttle_time": 0}
    period = duration_ms(request.renew_period)
    expiry_time = config.delegation_token_expiry_time_ms
    expiry_ms = min(
        rec.max_timestamp, now_ms + (min(expiry_time, period) if period > 0 else expiry_time)
    )
    return [(_rewritten(rec, expiry_ms), 0)], {
        "error_code": ErrorCode.none,
        "expiry_timestamp": expiry_ms,
        "throttle_time": 0,
    }


def expire_token(
    image: Image,
    config: ControllerConfig,
    metadata_version: int,
    request: views.ExpireDelegationTokenRequest,
    caller: Caller,
    now_ms: int,
) -> tuple[RecordList, views.ExpireDelegationTokenResponse]:
    rec = _find(image, config, metadata_version, bytes(request.hmac), caller, now_ms)
    period = duration_ms(request.expiry_time_period)
    if isinstance(rec, ErrorCode):
        return [], {"error_code": rec, "expiry_timestamp": -1, "throttle_time": 0}
    if period < 0:
        return [(r.RemoveDelegationTokenRecord(token_id=rec.token_id), 0)], {
            "error_code": ErrorCode.none,
            "expiry_timestamp": now_ms,
            "throttle_time": 0,
        }
    expiry_ms = min(rec.max_timestamp, now_ms + period)
    return [(_rewritten(rec, expiry_ms), 0)], {
        "error_code": ErrorCode.none,
        "expiry_timestamp": expiry_ms,
        "throttle_time": 0,
    }


def expired_tokens(image: Image, now_ms: int) -> RecordList:
    """RemoveDelegationTokenRecords for every token past its expiry or max (the sweep)."""
    return [
        (r.RemoveDelegationTokenRecord(token_id=rec.token_id), 0)
        for rec in tokens(image)
        if rec.max_timestamp < now_ms or rec.expiration_timestamp < now_ms
    ]
