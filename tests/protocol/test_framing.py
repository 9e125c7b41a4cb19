"""FrameDecoder fed whole, one byte at a time, truncated, with trailing bytes, oversize and
random garbage: whole frames or a typed ProtocolError, nothing else, never a hang."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    FrameDecoder,
    FrameTooLarge,
    MalformedFrame,
    ProtocolError,
    encode_frame,
)

PAYLOADS = [b"", b"a", b"hello world", bytes(range(256)) * 3]


def drain(decoder: FrameDecoder) -> list[bytes]:
    frames = []
    while (frame := decoder.next_frame()) is not None:
        frames.append(frame)
    return frames


def test_default_bound_is_kafka_socket_request_max_bytes() -> None:
    assert FRAME_MAX_BYTES_DEFAULT == 104857600
    assert FrameDecoder().frame_max_bytes == 104857600


def test_whole_stream_in_one_chunk() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"".join(encode_frame(p) for p in PAYLOADS))
    assert drain(decoder) == PAYLOADS
    decoder.end_of_stream()


def test_one_byte_at_a_time() -> None:
    decoder = FrameDecoder()
    out = []
    for byte in b"".join(encode_frame(p) for p in PAYLOADS):
        decoder.feed(bytes([byte]))
        out += drain(decoder)
    assert out == PAYLOADS
    assert decoder.buffered_bytes == 0


def test_truncated_stream_yields_nothing_then_end_of_stream_raises() -> None:
    data = encode_frame(b"hello world")
    for cut in range(1, len(data)):
        decoder = FrameDecoder()
        decoder.feed(data[:cut])
        assert decoder.next_frame() is None
        with pytest.raises(MalformedFrame, match="stream ended inside a frame"):
            decoder.end_of_stream()


def test_trailing_bytes_wait_for_the_rest_of_their_frame() -> None:
    decoder = FrameDecoder()
    second = encode_frame(b"second")
    decoder.feed(encode_frame(b"first") + second[:5])
    assert drain(decoder) == [b"first"]
    assert decoder.buffered_bytes == 5
    decoder.feed(second[5:])
    assert drain(decoder) == [b"second"]


def test_oversize_frame_rejected_before_its_body_is_buffered() -> None:
    decoder = FrameDecoder(frame_max_bytes=10)
    decoder.feed(encode_frame(b"ok") + (11).to_bytes(4, "big"))
    assert decoder.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge) as info:
        decoder.next_frame()
    assert (info.value.size_bytes, info.value.frame_max_bytes) == (11, 10)
    # Poisoned: further input is discarded, not buffered, and the error repeats.
    decoder.feed(b"x" * 1000)
    assert decoder.buffered_bytes == 0
    with pytest.raises(FrameTooLarge):
        decoder.next_frame()


def test_huge_size_prefix_with_default_bound_buffers_nothing() -> None:
    decoder = FrameDecoder()
    decoder.feed((2**31 - 1).to_bytes(4, "big") + b"abc")
    assert decoder.buffered_bytes == 0
    with pytest.raises(FrameTooLarge):
        decoder.next_frame()


def test_negative_size_is_malformed() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"\xff\xff\xff\xfe")
    with pytest.raises(MalformedFrame, match="negative"):
        decoder.next_frame()


def test_exactly_at_the_bound_is_accepted() -> None:
    decoder = FrameDecoder(frame_max_bytes=3)
    decoder.feed(encode_frame(b"abc"))
    assert decoder.next_frame() == b"abc"


@given(
    payloads=st.lists(st.binary(max_size=64), max_size=8),
    cuts=st.lists(st.integers(0, 600), max_size=12),
)
def test_any_chunking_yields_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    data = b"".join(encode_frame(p) for p in payloads)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    decoder = FrameDecoder()
    out = []
    for start, end in itertools.pairwise(bounds):
        decoder.feed(memoryview(data)[start:end])
        out += drain(decoder)
    assert out == payloads
    decoder.end_of_stream()


@settings(max_examples=300)
@given(garbage=st.binary(max_size=200), chunk=st.integers(1, 50))
def test_random_bytes_give_frames_or_protocol_error(garbage: bytes, chunk: int) -> None:
    decoder = FrameDecoder(frame_max_bytes=1000)
    try:
        for i in range(0, len(garbage), chunk):
            decoder.feed(garbage[i : i + chunk])
            for frame in drain(decoder):
                assert len(frame) <= 1000
        decoder.end_of_stream()
    except ProtocolError:
        pass
