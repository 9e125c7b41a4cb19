"""Garbage into the decoders: a decoded message or a ProtocolError, never anything else.

Two sources: plain random bytes (mostly rejected in the header), and valid frames of every
served message with random bytes overwritten/truncated, which reach deep into kio's readers
(and into ``_preflight``, whose job is to keep kio from aborting the process).
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.net.apis import KRAFT_APIS
from pykraft.protocol import (
    ProtocolError,
    RequestReader,
    ResponseReader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_schema,
    response_schema,
)

from .strategies import SERVED, entities


@st.composite
def mutated(draw: st.DrawFn, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        data[pos : pos + 4] = draw(st.binary(min_size=1, max_size=4))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), which=st.sampled_from(SERVED))
def test_mutated_requests(data: st.DataObject, which: tuple[int, int]) -> None:
    message = data.draw(entities(request_schema(*which)))
    frame = data.draw(mutated(encode_request(3, "c", message)[4:]))
    with contextlib.suppress(ProtocolError):
        decode_request(frame, KRAFT_APIS)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), which=st.sampled_from(SERVED))
def test_mutated_responses(data: st.DataObject, which: tuple[int, int]) -> None:
    message = data.draw(entities(response_schema(*which)))
    frame = data.draw(mutated(encode_response(3, message)[4:]))
    with contextlib.suppress(ProtocolError):
        decode_response(frame, {3: which})


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(max_size=300), chunk=st.integers(1, 64))
def test_random_bytes_into_readers(garbage: bytes, chunk: int) -> None:
    for reader in (
        RequestReader(KRAFT_APIS, frame_max_bytes=4096),
        ResponseReader(frame_max_bytes=4096),
    ):
        try:
            for i in range(0, len(garbage), chunk):
                reader.feed(garbage[i : i + chunk])
                while True:
                    if isinstance(reader, RequestReader):
                        got: object = reader.next_request()
                    else:
                        got = reader.next_response()
                    if got is None:
                        break
            reader.end_of_stream()
        except ProtocolError:
            pass


@settings(max_examples=300, deadline=None)
@given(which=st.sampled_from(SERVED), body=st.binary(max_size=64))
def test_valid_header_random_body(which: tuple[int, int], body: bytes) -> None:
    api_key, version = which
    header = api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01\xff\xff"
    if request_schema(api_key, version).__flexible__:
        header += b"\x00"
    with contextlib.suppress(ProtocolError):
        decode_request(header + body, KRAFT_APIS)
    with contextlib.suppress(ProtocolError):
        decode_response(b"\x00\x00\x00\x01" + body, {1: which})
