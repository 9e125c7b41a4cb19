"""A human-readable description of a metadata log directory (``storage info``, demo)."""

from __future__ import annotations

from pathlib import Path

from pykraft.records import decode_control, decode_records, iter_batches
from pykraft.storage._files import StorageError
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog
from pykraft.storage.meta import read_meta_properties, uuid_to_kafka
from pykraft.storage.quorum_state import FileQuorumStateStore
from pykraft.storage.snapshots import FileSnapshotStore, read_snapshot

_BATCHES_SHOWN_MAX = 20


def describe_log_dir(log_dir: Path, *, show_batches: bool = False) -> str:
    """meta.properties, quorum-state, segments and snapshots of ``log_dir``. Opening the
    log runs recovery (a torn tail is truncated, as a starting node would)."""
    if not log_dir.is_dir():
        raise StorageError(f"{log_dir}: no such directory")
    lines = [f"metadata.log.dir: {log_dir}"]
    meta = read_meta_properties(log_dir)
    if meta is None:
        lines.append("  meta.properties: missing (not formatted)")
    else:
        lines.append(
            f"  meta.properties: version={meta.version} cluster.id={meta.cluster_id} "
            f"node.id={meta.node_id} directory.id={uuid_to_kafka(meta.directory_id)}"
        )
    partition_dir = log_dir / PARTITION_DIR_NAME
    if not partition_dir.is_dir():
        lines.append(f"  {PARTITION_DIR_NAME}: missing")
        return "\n".join(lines) + "\n"
    state = FileQuorumStateStore(partition_dir).read()
    lines.append(f"  quorum-state: {state if state is not None else 'none yet'}")
    with FileLog.open(partition_dir) as log:
        lines.append(
            f"  log: start offset {log.start_offset}, end offset {log.end_offset}, "
            f"epochs {log.epochs()}"
        )
        for base, end, size in log.segments():
            lines.append(f"    segment {base:020d}.log: offsets [{base}, {end}), {size} bytes")
        if show_batches:
            lines.extend(_describe_batches(log))
    store = FileSnapshotStore.open(partition_dir)
    for path in store.refused:
        lines.append(f"  snapshot {path.name}: REFUSED (corrupt)")
    for snapshot_id in store.snapshot_ids():
        contents = read_snapshot(store, snapshot_id)
        lines.append(
            f"  snapshot {snapshot_id.offset}-{snapshot_id.epoch}: {store.size(snapshot_id)} "
            f"bytes, kraft.version={contents.kraft_version}, "
            f"{len(contents.records)} data records"
        )
        for voter in contents.voters or ():
            lines.append(
                f"    voter {voter.voter_id} directory "
                f"{uuid_to_kafka(voter.directory_id) if voter.directory_id else '-'} "
                f"endpoints {[f'{e.name}://{e.host}:{e.port}' for e in voter.endpoints]}"
            )
        for record in contents.records[:5]:
            lines.append(f"    record {record.offset}: {record.value!r}")
    return "\n".join(lines) + "\n"


def _describe_batches(log: FileLog) -> list[str]:
    lines: list[str] = []
    offset = log.start_offset
    while offset < log.end_offset and len(lines) < _BATCHES_SHOWN_MAX:
        data = log.read(offset, 1 << 20)
        for header, pos in iter_batches(data):
            kind = "data"
            if header.is_control:
                batch = data[pos : pos + header.size]
                kind = ", ".join(decode_control(r)[0].name for r in decode_records(batch))
            lines.append(
                f"    batch offsets [{header.base_offset}, {header.next_offset}) epoch "
                f"{header.epoch}: {header.record_count} records ({kind}), {header.size} bytes"
            )
            offset = header.next_offset
    return lines
