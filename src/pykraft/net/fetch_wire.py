"""The leader's Fetch answer straight to wire bytes, without kio.

A leader encodes one FetchResponse per follower per commit, and kio's generic writer spends
~50 us on it (type checks per field); this writes the same bytes in a few microseconds.
Only what ``convert.response_to_kio`` builds for a FetchResponse is covered: Fetch v13-17
(all flexible, topic ids), one topic (``METADATA_TOPIC_ID``) with one partition, and a
partition-level error (a top-level error is still built through kio). The bytes are the
ones kio writes for ``response_to_kio(response, version, listener_name=...)``, field for
field (tests/net/test_fetch_wire.py compares them):

    header v1:  correlation id (int32), no tagged fields
    body:       throttle time 0 (int32), error 0 (int16), session id 0 (int32),
                responses: [topic id (uuid), partitions: [index, error, high watermark,
                last stable offset -1, log start offset, aborted transactions null,
                preferred read replica -1, records, tags: 0 diverging epoch, 1 current
                leader, 2 snapshot id -- each only when not its default (-1, -1)]]
                tags: 0 node endpoints (v16+, when the listener's endpoint is known)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from pykraft.net._wire import METADATA_PARTITION, METADATA_TOPIC_ID
from pykraft.raft.messages import FetchResponse

__all__ = ["FETCH_VERSIONS", "fetch_response_frame"]

FETCH_VERSIONS: Final = range(13, 18)

_HEADER: Final = struct.Struct(">ii")  # frame size, correlation id
# throttle time, error, session id; responses: one topic (compact array length 2)
_PREFIX: Final = struct.pack(">ihib", 0, 0, 0, 2) + METADATA_TOPIC_ID.bytes + b"\x02"
_PARTITION: Final = struct.Struct(">ihqqq")  # index, error, high watermark, LSO, log start
_AFTER_PARTITION: Final = b"\x00" + struct.pack(">i", -1)  # aborted txns null, read replica
_EPOCH_END_OFFSET: Final = struct.Struct(">iqb")  # epoch, end offset, no tagged fields
_LEADER: Final = struct.Struct(">iib")  # leader id, leader epoch, no tagged fields
_SNAPSHOT_ID: Final = struct.Struct(">qib")  # end offset, epoch, no tagged fields


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(value: str) -> bytes:
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def _tagged(tag: int, value: bytes) -> bytes:
    return _uvarint(tag) + _uvarint(len(value)) + value


def fetch_response_frame(
    response: FetchResponse, api_version: int, listener_name: str
) -> Callable[[int], bytes]:
    """``frame(correlation_id)``: the whole framed answer (size prefix included)."""
    assert api_version in FETCH_VERSIONS, api_version
    parts = [
        _PREFIX,
        _PARTITION.pack(
            METADATA_PARTITION,
            response.error,
            response.high_watermark,
            -1,
            response.log_start_offset,
        ),
        _AFTER_PARTITION,
        _uvarint(len(response.records) + 1),
        response.records,
    ]
    tags = []
    diverging = response.diverging_epoch
    if diverging is not None and (diverging.epoch, diverging.offset) != (-1, -1):
        tags.append(_tagged(0, _EPOCH_END_OFFSET.pack(diverging.epoch, diverging.offset, 0)))
    if (response.leader_id, response.epoch) != (-1, -1):
        tags.append(_tagged(1, _LEADER.pack(response.leader_id, response.epoch, 0)))
    snapshot = response.snapshot_id
    if snapshot is not None and (snapshot.offset, snapshot.epoch) != (-1, -1):
        tags.append(_tagged(2, _SNAPSHOT_ID.pack(snapshot.offset, snapshot.epoch, 0)))
    parts += [_uvarint(len(tags)), *tags, b"\x00"]  # partition's tags; the topic has none
    endpoint = None
    if api_version >= 16:
        endpoint = next((e for e in response.leader_endpoints if e.name == listener_name), None)
    if endpoint is None:
        parts.append(b"\x00")
    else:
        node = (
            b"\x02"  # one NodeEndpoint
            + struct.pack(">i", response.leader_id)
            + _compact_string(endpoint.host)
            + struct.pack(">i", endpoint.port)
            + b"\x00\x00"  # rack null, no tagged fields
        )
        parts += [b"\x01", _tagged(0, node)]
    body = b"\x00" + b"".join(parts)  # header v1's (empty) tagged fields, then the body

    def frame(correlation_id: int) -> bytes:
        return _HEADER.pack(len(body) + 4, correlation_id) + body

    return frame
