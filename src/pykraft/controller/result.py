"""What a controller operation returns (Kafka's ``ControllerResult<T>`` and
``ApiMessageAndVersion``): the metadata records to append as one batch, each with the version
it is written at, and the response sent once they commit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from pykraft.metadata.serde import MetadataRecord

__all__ = ["RecordAndVersion", "RecordList", "Response", "Result"]

# A metadata record and the version it is written at (Kafka's ApiMessageAndVersion).
RecordAndVersion: TypeAlias = tuple[MetadataRecord, int]
RecordList: TypeAlias = list[RecordAndVersion]
# A response's fields by name, made into the API's kio message by ``protocol.build.make``
# (which refuses a name no version of the message has).
Response: TypeAlias = dict[str, Any]
T = TypeVar("T")


@dataclass(slots=True)
class Result(Generic[T]):
    """Records to append (one batch) and the response, sent once they commit.
    ``on_written(last_offset)`` runs after the append (Kafka's controlled-shutdown offset)."""

    records: RecordList
    response: T
    on_written: Callable[[int], None] | None = None
