"""The leader's hand-written FetchResponse bytes equal kio's for every shape the core makes."""

from __future__ import annotations

import random
import uuid

import pytest

from pykraft.net.convert import response_to_kio
from pykraft.net.fetch_wire import FETCH_VERSIONS, fetch_response_frame
from pykraft.protocol import ErrorCode, encode_response
from pykraft.raft.messages import FetchResponse
from pykraft.raft.types import Endpoint, OffsetAndEpoch
from pykraft.records import build_batch

LISTENER = "CONTROLLER"
PARTITION_ERRORS = (
    ErrorCode.none,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.not_leader_or_follower,
)


def random_response(rng: random.Random) -> FetchResponse:
    def offset_and_epoch() -> OffsetAndEpoch | None:
        return rng.choice(
            [
                None,
                OffsetAndEpoch(-1, -1),
                OffsetAndEpoch(rng.randrange(1 << 40), rng.randrange(99)),
            ]
        )

    records = b""
    if rng.random() < 0.6:
        count = rng.choice([1, 3, 200])
        records = build_batch(rng.randrange(1 << 30), 3, [b"v" * rng.randrange(300)] * count, 0)
    endpoints = rng.choice(
        [
            (),
            (Endpoint(LISTENER, "127.0.0.1", rng.randrange(1, 65536)),),
            (Endpoint("OTHER", "10.0.0.1", 1), Endpoint(LISTENER, "h" * 200, 9093)),
            (Endpoint("OTHER", "10.0.0.1", 1),),
        ]
    )
    return FetchResponse(
        rng.choice(PARTITION_ERRORS),
        rng.choice([-1, 0, 7, 1 << 20]),
        rng.choice([-1, 1, 3]),
        rng.randrange(-1, 1 << 40),
        rng.randrange(0, 1 << 40),
        records,
        offset_and_epoch(),
        offset_and_epoch(),
        endpoints,
    )


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_bytes_equal_kios(version: int) -> None:
    rng = random.Random(version)
    for _ in range(300):
        response = random_response(rng)
        correlation_id = rng.randrange(1 << 31)
        kio = response_to_kio(response, version, listener_name=LISTENER)
        expected = encode_response(correlation_id, kio)
        frame = fetch_response_frame(response, version, LISTENER)
        assert frame(correlation_id) == expected, response


def test_large_records_and_a_long_varint() -> None:
    records = build_batch(0, 1, [uuid.uuid4().bytes * 64] * 300, 0)  # ~300 kB
    response = FetchResponse(ErrorCode.none, 2, 1, 10, 0, records, None, None, ())
    kio = response_to_kio(response, 17, listener_name=LISTENER)
    assert fetch_response_frame(response, 17, LISTENER)(5) == encode_response(5, kio)
