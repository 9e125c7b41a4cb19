"""SCRAM credentials in the metadata log: AlterUserScramCredentials as Kafka's
ScramControlManager validates and writes it (docs/kafka/SECURITY-CONTRACT.md 6.1), and the
StoredKey/ServerKey derivation shared with ``storage format --add-scram``.

Theory of operation. A client sends, per user, deletions (name, mechanism) and upsertions
(name, mechanism, iterations, salt, salted password: the password itself never leaves the
client). Each user gets one result. A user named twice in one request is refused
(DUPLICATE_RESOURCE) and all its entries dropped; an empty name, an unknown mechanism, too
few or too many iterations, or the deletion of a credential that does not exist refuse that
user with Kafka's code and text. Accepted upsertions become UserScramCredentialRecords
holding salt, StoredKey = H(HMAC(salted password, "Client Key")), ServerKey =
HMAC(salted password, "Server Key") and the iterations; deletions become
RemoveUserScramCredentialRecords. All of one request's records commit together.
"""

from __future__ import annotations

from collections import Counter

from kio.schema.errors import ErrorCode

from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, scram_keys
from pykraft.metadata.versions import IBP_3_5_IV2
from pykraft.protocol import views

__all__ = ["MECHANISMS", "alter_user_scram_credentials", "scram_keys"]


def alter_user_scram_credentials(
    image: Image, metadata_version: int, request: views.AlterUserScramCredentialsRequest
) -> tuple[RecordList, views.AlterUserScramCredentialsResponse]:
    entries = [(d.name, int(d.mechanism), None) for d in request.deletions] + [
        (u.name, int(u.mechanism), u) for u in request.upsertions
    ]
    counts = Counter(name for name, _, _ in entries)
    results: dict[str, tuple[int, str | None]] = {}
    records: RecordList = []
    for name, mechanism, upsert in entries:
        if name in results:
            continue
        error = _check(image, metadata_version, counts[name], name, mechanism, upsert)
        if error is not None:
            results[name] = error
            continue
        results[name] = (ErrorCode.none, None)
        if upsert is None:
            records.append((r.RemoveUserScramCredentialRecord(name=name, mechanism=mechanism), 0))
        else:
            stored_key, server_key = scram_keys(mechanism, bytes(upsert.salted_password))
            records.append(
                (
                    r.UserScramCredentialRecord(
                        name=name,
                        mechanism=mechanism,
                        salt=bytes(upsert.salt),
                        stored_key=stored_key,
                        server_key=server_key,
                        iterations=int(upsert.iterations),
                    ),
                    0,
                )
            )
    failed = {name for name, (code, _) in results.items() if code != ErrorCode.none}
    records = [(rec, v) for rec, v in records if getattr(rec, "name", None) not in failed]
    return records, {
        "throttle_time": 0,
        "results": [
            {"user": name, "error_code": code, "error_message": message}
            for name, (code, message) in results.items()
        ],
    }


def _check(
    image: Image,
    metadata_version: int,
    times: int,
    name: str,
    mechanism: int,
    upsert: views.alter_user_scram_credentials.ScramCredentialUpsertion | None,
) -> tuple[int, str] | None:
    if metadata_version < IBP_3_5_IV2:
        return ErrorCode.unsupported_version, "The current metadata.version does not support SCRAM"
    if times > 1:
        return (
            ErrorCode.duplicate_resource,
            "A user credential cannot be altered twice in the same request",
        )
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    if upsert is None:
        if image.scram.credential(name, mechanism) is None:
            return (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        return None
    iterations = int(upsert.iterations)
    if iterations < MIN_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    return None
