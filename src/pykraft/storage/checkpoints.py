"""The small files beside the metadata log's segments that say how much of it is known good,
and where it starts (Kafka's names and formats, see ``log.py``'s docstring):
``recovery-point-offset-checkpoint``, ``leader-epoch-checkpoint``, pykraft's
``control-batch-checkpoint``, ``.kafka_cleanshutdown`` and ``log-start-offset``. Each is
replaced atomically (tmp + fsync + rename). A missing or damaged checkpoint reads as
"unknown" (None or 0): the log then scans everything, never trusts a bad file."""

from __future__ import annotations

import bisect
import logging
from pathlib import Path
from typing import Final

from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage._files import StorageError, atomic_write

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "CONTROL_CHECKPOINT_FILE",
    "EPOCH_CHECKPOINT_FILE",
    "LOG_START_FILE",
    "RECOVERY_POINT_FILE",
    "read_control_checkpoint",
    "read_epoch_checkpoint",
    "read_log_start",
    "read_recovery_point",
    "write_checkpoints",
    "write_clean_shutdown",
    "write_log_start",
]

log = logging.getLogger("pykraft.storage.log")

LOG_START_FILE: Final = "log-start-offset"
# Kafka's names and formats; all three in the partition directory (see log.py's docstring).
RECOVERY_POINT_FILE: Final = "recovery-point-offset-checkpoint"
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
EPOCH_CHECKPOINT_FILE: Final = "leader-epoch-checkpoint"
# pykraft's own, beside them and written with them: the control batches below the point.
CONTROL_CHECKPOINT_FILE: Final = "control-batch-checkpoint"
_VERSION: Final = 0


def read_log_start(directory: Path) -> tuple[int, int]:
    """(log start offset, its snapshot's epoch); (0, 0) when never written."""
    path = directory / LOG_START_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return 0, 0
    try:
        offset_text, epoch_text = text.split()
        offset, epoch = int(offset_text), int(epoch_text)
    except ValueError:
        raise StorageError(f"{path}: unparsable log start offset {text!r}") from None
    if offset < 0 or epoch < 0:
        raise StorageError(f"{path}: negative log start offset or epoch {text!r}")
    return offset, epoch


def write_log_start(directory: Path, snapshot_id: OffsetAndEpoch) -> None:
    atomic_write(directory / LOG_START_FILE, f"{snapshot_id.offset} {snapshot_id.epoch}\n".encode())


def topic_partition(directory: Path) -> tuple[str, str]:
    """From the directory's name, Kafka's ``<topic>-<partition>``."""
    topic, _, partition = directory.name.rpartition("-")
    return (topic, partition) if topic and partition.isdigit() else (directory.name, "0")


def read_recovery_point(directory: Path) -> int:
    """The recovery point for this partition (0 when unknown or unreadable: scan all)."""
    path = directory / RECOVERY_POINT_FILE
    try:
        lines = path.read_text().split("\n")
        if int(lines[0]) != _VERSION:
            raise ValueError(f"version {lines[0]}")
        for line in lines[2 : 2 + int(lines[1])]:
            topic, partition, offset = line.split()
            if (topic, partition) == topic_partition(directory):
                return max(int(offset), 0)
    except FileNotFoundError:
        pass
    except (ValueError, IndexError) as e:
        log.warning("%s unreadable (%s): scanning the whole log", path, e)
    return 0


def _read_rows(path: Path, width: int) -> list[tuple[int, ...]] | None:
    """The rows of a checkpoint in Kafka's layout (version 0, count, one row per line);
    None when missing or damaged (then everything is scanned)."""
    try:
        lines = path.read_text().split("\n")
        if int(lines[0]) != _VERSION:
            raise ValueError(f"version {lines[0]}")
        rows = [tuple(int(v) for v in line.split()) for line in lines[2 : 2 + int(lines[1])]]
        if len(rows) != int(lines[1]) or any(len(row) != width for row in rows):
            raise ValueError("rows do not match the count")
        return rows
    except FileNotFoundError:
        return None
    except (ValueError, IndexError) as e:
        log.warning("%s unreadable (%s): scanning the whole log", path, e)
        return None


def read_epoch_checkpoint(directory: Path) -> list[tuple[int, int]] | None:
    """``(epoch, start offset)`` of every epoch below the recovery point."""
    rows = _read_rows(directory / EPOCH_CHECKPOINT_FILE, 2)
    return None if rows is None else [(epoch, start) for epoch, start in rows]


def read_control_checkpoint(directory: Path) -> list[int] | None:
    """The base offsets of the control batches below the recovery point."""
    rows = _read_rows(directory / CONTROL_CHECKPOINT_FILE, 1)
    return None if rows is None else [offset for (offset,) in rows]


def write_checkpoints(
    directory: Path,
    recovery_point: int,
    epochs: list[tuple[int, int]],
    control_offsets: list[int],
) -> None:
    """Record ``recovery_point``: the epochs and control batches below it first, then the
    offset (each file replaced atomically). Every batch below it must be durable, index
    entries included. ``control_offsets`` ascending."""
    below = [(e, s) for e, s in epochs if s < recovery_point]
    text = f"{_VERSION}\n{len(below)}\n" + "".join(f"{e} {s}\n" for e, s in below)
    atomic_write(directory / EPOCH_CHECKPOINT_FILE, text.encode())
    control = control_offsets[: bisect.bisect_left(control_offsets, recovery_point)]
    text = f"{_VERSION}\n{len(control)}\n" + "".join(f"{o}\n" for o in control)
    atomic_write(directory / CONTROL_CHECKPOINT_FILE, text.encode())
    topic, partition = topic_partition(directory)
    atomic_write(
        directory / RECOVERY_POINT_FILE,
        f"{_VERSION}\n1\n{topic} {partition} {recovery_point}\n".encode(),
    )


def write_clean_shutdown(directory: Path) -> None:
    """Kafka's ``.kafka_cleanshutdown`` marker (after a flush and a checkpoint at the end)."""
    atomic_write(
        directory / CLEAN_SHUTDOWN_FILE, f'{{"version":{_VERSION},"brokerEpoch":-1}}'.encode()
    )
