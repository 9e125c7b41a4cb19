"""The metadata controller's files: the records a snapshot holds (the image as records), and
the image a stopped node's metadata log directory replays to (for tools and tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pykraft.controller.quorum_controller import QuorumController
from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.metadata.image import Image
from pykraft.metadata.serde import decode_record
from pykraft.records import decode_records, iter_batches
from pykraft.storage import PARTITION_DIR_NAME, FileSnapshotStore, read_snapshot

__all__ = ["load_image", "snapshot_values"]


def snapshot_values(controller: QuorumController) -> list[bytes]:
    """The image as the encoded records of a metadata snapshot, at the versions the
    finalized metadata.version writes, all at once (tools; a running controller generates
    them in slices: ``SnapshotGenerator``)."""
    image = controller.image
    return SnapshotGenerator(image, image.last_offset + 1).all_values()


def load_image(
    metadata_log_dir: Path,
    end_offset: int | None = None,
    *,
    before_replay: Callable[[Image, Any, int], None] | None = None,
    after_replay: Callable[[Image, Any, int], None] | None = None,
) -> Image:
    """The image a controller replays from a stopped node's metadata log directory: its
    newest snapshot at or below ``end_offset``, then every whole batch below it (default: the
    whole log). Records that cannot be replayed raise (this is for tests and tools).
    ``before_replay`` / ``after_replay`` see each log record (not the snapshot's) with the
    image as it is just before / after it (the fault checker's rules on the log)."""
    partition_dir = metadata_log_dir / PARTITION_DIR_NAME
    image = Image()
    position = 0
    store = FileSnapshotStore.open(partition_dir)
    ids = [s for s in store.snapshot_ids() if end_offset is None or s.offset <= end_offset]
    if ids:
        contents = read_snapshot(store, ids[-1])
        for record in contents.records:
            if record.value is not None:
                value, version = decode_record(record.value)
                image.replay(value, version, ids[-1].offset - 1, record.value)
        position = ids[-1].offset
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        for header, pos in iter_batches(data):
            if end_offset is not None and header.next_offset > end_offset:
                return image
            if header.last_offset < position or header.is_control:
                continue
            for record in decode_records(data[pos : pos + header.size]):
                if record.offset >= position and record.value is not None:
                    value, version = decode_record(record.value)
                    if before_replay is not None:
                        before_replay(image, value, record.offset)
                    image.replay(value, version, record.offset, record.value)
                    if after_replay is not None:
                        after_replay(image, value, record.offset)
            position = header.next_offset
    return image
