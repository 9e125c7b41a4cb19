"""``pykraft pipeline`` reads a metadata backup as it reads a controller's log directory
(issue 48 item 4): once the controller's retention deleted the segments behind its newest
snapshot, its own directory holds only the snapshot, while the backup's tables still show
every record, topic creations included."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from pykraft.backup.take import backup_round
from pykraft.pipeline.ingest import LogDir, run_ingest
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog
from pykraft.storage.snapshots import FileSnapshotStore, write_snapshot

from ..storage.test_backup import _metadata_log


def test_the_pipeline_reads_history_a_backup_kept_past_retention(
    spark: SparkSession, tmp_path: Path
) -> None:
    source, backup = _metadata_log(tmp_path)
    partition = source / PARTITION_DIR_NAME
    write_snapshot(
        FileSnapshotStore.open(partition), OffsetAndEpoch(11, 4), [], timestamp_ms=0,
        last_contained_log_timestamp_ms=0,
    )  # fmt: skip
    log = FileLog.open(partition)
    log.delete_before(OffsetAndEpoch(11, 4))
    log.close(clean=True)
    assert len(list(partition.glob("*.log"))) == 1  # the active segment alone (offsets 9-10)
    backup_round(source, backup, 2)

    out = tmp_path / "tables"
    run_ingest(spark, [LogDir.parse(str(source)), LogDir.parse(f"9={backup}")], str(out))
    records = spark.read.parquet(str(out / "records"))
    offsets = {
        node: sorted(
            r.offset for r in records.where(f"node = {node} and source = 'segment'").collect()
        )
        for node in (1, 9)
    }
    assert offsets[1] == [9, 10]  # the controller's own directory: its active segment
    assert offsets[9] == list(range(11))  # the backup: every record, offsets 0-10
    topics = spark.read.parquet(str(out / "topics")).where("node = 9").collect()
    assert sorted((t.name, t.offset) for t in topics if t.event == "create") == [
        ("a", 1),
        ("b", 7),
        ("c", 10),
    ]
