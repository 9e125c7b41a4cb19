"""What a controller operation returns (Kafka's ``ControllerResult<T>`` and
``ApiMessageAndVersion``): the metadata records to append as one batch, each with the version
it is written at, and the response sent once they commit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

from pykraft.metadata.serde import MetadataRecord

__all__ = ["RecordAndVersion", "RecordList", "Response", "Result"]

# A metadata record and the version it is written at (Kafka's ApiMessageAndVersion).
RecordAndVersion: TypeAlias = tuple[MetadataRecord, int]
RecordList: TypeAlias = list[RecordAndVersion]
# Any controller response's fields by name, made into the API's message by
# ``protocol.build.make`` (which refuses a name no version of the message has). A handler
# returns its API's own (``protocol/views/<api>_response.py``: a TypedDict of the fields of
# every served version), which is one.
Response: TypeAlias = Mapping[str, object]
T_co = TypeVar("T_co", bound=Response, covariant=True)


@dataclass(frozen=True, slots=True)
class Result(Generic[T_co]):
    """Records to append (one batch) and the response, sent once they commit.
    ``on_written(last_offset)`` runs after the append (Kafka's controlled-shutdown offset)."""

    records: RecordList
    response: T_co
    on_written: Callable[[int], None] | None = None
