"""Kafka's frame layer: a 4-byte big-endian signed size, then that many bytes.

Theory of operation: :class:`FrameDecoder` is a sans-I/O state machine.  The network edge
calls :meth:`FrameDecoder.feed` with whatever bytes the socket produced (any chunking, even one
byte at a time) and then drains :meth:`FrameDecoder.next_frame` until it returns ``None``.  The
decoder never blocks, never loops longer than the bytes it was given, and holds at most the
bytes it was fed plus one partial frame.

Bounds (TigerBeetle style): a frame larger than ``frame_max_bytes`` (Kafka's
``socket.request.max.bytes``, default 104857600) is rejected as soon as its size prefix is
read, before its body is buffered; after that the decoder is *poisoned*: it discards further
input and re-raises the same error, because the byte stream has lost its framing.
"""

from __future__ import annotations

from collections import deque
from typing import Final, TypeAlias

from .errors import FrameTooLarge, MalformedFrame, ProtocolError

__all__ = [
    "FRAME_MAX_BYTES_DEFAULT",
    "SIZE_PREFIX_BYTES",
    "Buffer",
    "FrameDecoder",
    "encode_frame",
]

Buffer: TypeAlias = bytes | bytearray | memoryview
"""What the decoders accept: any contiguous byte buffer the socket layer hands us."""

SIZE_PREFIX_BYTES: Final = 4
FRAME_MAX_BYTES_DEFAULT: Final = 104_857_600
"""Kafka's ``socket.request.max.bytes`` default (100 MiB)."""


def encode_frame(payload: Buffer) -> bytes:
    """Prefix ``payload`` with its size; the inverse of :class:`FrameDecoder`."""
    view = memoryview(payload)
    return len(view).to_bytes(SIZE_PREFIX_BYTES, "big") + view.tobytes()


class FrameDecoder:
    """Split a byte stream into whole frames (payloads without their size prefix).

    Invariants: ``_buffer`` holds only the start of the next incomplete frame (fewer than
    ``SIZE_PREFIX_BYTES + frame size`` bytes); ``_frames`` holds complete frames not yet handed
    out, in stream order; once ``_error`` is set nothing more is buffered.
    """

    def __init__(self, *, frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT) -> None:
        if frame_max_bytes < 0:
            raise ValueError(f"frame_max_bytes must be >= 0, got {frame_max_bytes}")
        self.frame_max_bytes = frame_max_bytes
        self._buffer = bytearray()
        self._frames: deque[bytes] = deque()
        self._error: ProtocolError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the incomplete next frame held so far (0 when on a frame boundary)."""
        return len(self._buffer)

    def feed(self, data: Buffer) -> None:
        """Accept the next bytes of the stream.  Never raises for bad input: errors surface
        from :meth:`next_frame` after the frames that preceded them."""
        if self._error is not None:
            return
        view = memoryview(data).cast("B")
        if not self._buffer:
            # Fast path: slice whole frames straight out of the caller's chunk, copying each
            # payload once and buffering only the tail.
            pos = self._split(view)
            if self._error is None and pos < len(view):
                self._buffer += view[pos:]
            return
        self._buffer += view
        with memoryview(self._buffer) as buffered:
            pos = self._split(buffered)
        if self._error is not None:
            self._buffer = bytearray()
        elif pos:
            del self._buffer[:pos]

    def _split(self, view: memoryview) -> int:
        """Move every complete frame at the start of ``view`` to ``_frames``; return the
        position after the last one.  Sets ``_error`` on a bad size prefix."""
        pos = 0
        end = len(view)
        limit = self.frame_max_bytes
        while end - pos >= SIZE_PREFIX_BYTES:
            size = int.from_bytes(view[pos : pos + SIZE_PREFIX_BYTES], "big", signed=True)
            if size < 0:
                self._error = MalformedFrame(f"negative frame size {size}")
                return pos
            if size > limit:
                self._error = FrameTooLarge(size, limit)
                return pos
            body_start = pos + SIZE_PREFIX_BYTES
            if end - body_start < size:
                break
            self._frames.append(view[body_start : body_start + size].tobytes())
            pos = body_start + size
        return pos

    def next_frame(self) -> bytes | None:
        """The next complete frame, or ``None`` if more bytes are needed.

        Raises :class:`FrameTooLarge` / :class:`MalformedFrame` once every frame before the bad
        size prefix was returned, and on every call after that.
        """
        if self._frames:
            return self._frames.popleft()
        if self._error is not None:
            raise self._error
        return None

    def end_of_stream(self) -> None:
        """Declare that the peer closed the connection; raise if it left a frame half sent."""
        if self._error is not None:
            raise self._error
        if self._buffer:
            raise MalformedFrame(
                f"stream ended inside a frame ({len(self._buffer)} bytes of it buffered)"
            )
