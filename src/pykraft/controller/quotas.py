"""Client quotas in the metadata log: AlterClientQuotas as Kafka's ClientQuotaControlManager
validates and writes it (docs/kafka/SECURITY-CONTRACT.md 6.2).

Theory of operation. An entity is a user, a client id, both, or an IP address (a null name
is the default entity of that type); each op sets or removes one quota key. Every entry is
checked on its own (entity shape, key, value) and answered per entry with Kafka's message;
an accepted entry becomes ClientQuotaRecords, one per key that actually changes (setting a
key to its current value, or removing one that is not set, writes nothing).
``validate_only`` answers the same and writes nothing. The brokers enforce the quotas they
read from the log; the controller enforces ``controller_mutation_rate`` (KIP-599) itself.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.records.client_quota_record import EntityData
from pykraft.protocol import views

__all__ = ["alter_client_quotas", "quota_value"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
_LONG, _INT, _DOUBLE = "LONG", "INT", "DOUBLE"
_CLIENT_KEYS: Final = {
    "producer_byte_rate": _LONG,
    "consumer_byte_rate": _LONG,
    "request_percentage": _DOUBLE,
    "controller_mutation_rate": _DOUBLE,
}
_IP_KEYS: Final = {"connection_creation_rate": _INT}
_MAX: Final = {_LONG: 2**63 - 1, _INT: 2**31 - 1}


class _Invalid(Exception):
    pass


def _entity(entry: views.alter_client_quotas.EntryData) -> tuple[tuple[str, str | None], ...]:
    parts = tuple(
        sorted(
            ((str(e.entity_type), e.entity_name) for e in entry.entity),
            key=lambda part: (part[0], part[1] or ""),
        )
    )
    if not parts:
        raise _Invalid("Invalid empty client quota entity")
    types = [t for t, _ in parts]
    for kind, name in parts:
        if kind not in (USER, CLIENT_ID, IP):
            raise _Invalid(f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            raise _Invalid(f"Empty {kind} not supported")
    if len(set(types)) != len(types):
        raise _Invalid(f"Duplicate {types[0]} in client quota entity")
    if IP in types:
        if len(types) > 1:
            raise _Invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with "
                "User or ClientId"
            )
        name = parts[0][1]
        if name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                # Kafka resolves a host name through DNS; the controller does no I/O, so
                # only addresses are accepted (docs/DECISIONS.md).
                raise _Invalid(f"{name} is not a valid IP or resolvable host.") from None
    return parts


def _check_op(keys: dict[str, str], op: views.alter_client_quotas.OpData) -> None:
    key = str(op.key)
    kind = keys.get(key)
    if kind is None:
        raise _Invalid(f"Invalid configuration key {key}")
    if op.remove:
        return
    value = float(op.value)
    if value <= 0:
        raise _Invalid(f"Quota {key} must be greater than 0")
    if kind in _MAX:
        if abs(value - round(value)) > 1e-6:
            raise _Invalid(f"{key} cannot be a fractional value.")
        if value > _MAX[kind]:
            raise _Invalid(f"Proposed value for {key} is too large for a {kind}.")


def quota_value(image: Image, entity: tuple[tuple[str, str | None], ...], key: str) -> float | None:
    return image.client_quotas.value(entity, key)


def alter_client_quotas(
    image: Image, request: views.AlterClientQuotasRequest
) -> tuple[RecordList, views.AlterClientQuotasResponse]:
    records: RecordList = []
    results: list[views.alter_client_quotas_response.EntryData] = []
    seen: set[tuple[tuple[str, str | None], ...]] = set()
    for entry in request.entries:
        wire_entity: list[views.alter_client_quotas_response.EntityData] = [
            {"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity
        ]
        try:
            entity = _entity(entry)
            if entity in seen:
                raise _Invalid(f"Ignoring duplicate entity {entity}")
            seen.add(entity)
            keys = _IP_KEYS if entity[0][0] == IP else _CLIENT_KEYS
            changes: dict[str, views.alter_client_quotas.OpData] = {}
            for op in entry.ops:
                _check_op(keys, op)
                changes[str(op.key)] = op
        except _Invalid as e:
            results.append(
                {
                    "error_code": ErrorCode.invalid_request,
                    "error_message": str(e),
                    "entity": wire_entity,
                }
            )
            continue
        for key, op in changes.items():
            current = quota_value(image, entity, key)
            if op.remove:
                if current is None:
                    continue
            elif current == float(op.value):
                continue
            records.append(
                (
                    r.ClientQuotaRecord(
                        entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
                        key=key,
                        value=0.0 if op.remove else float(op.value),
                        remove=bool(op.remove),
                    ),
                    0,
                )
            )
        results.append({"error_code": ErrorCode.none, "error_message": None, "entity": wire_entity})
    if request.validate_only:
        records = []
    return records, {"throttle_time": 0, "entries": results}
