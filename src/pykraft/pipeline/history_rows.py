"""One node's rows in history order, for the history report (``history.py``), the log's gaps
included.

Theory of operation. A node's history is its earliest snapshot (rank 0: each partition's
starting state, no event) when its segments no longer reach back to offset 0, then every
segment record after it (rank 1), ordered by offset. A snapshot the segments skip over -- its
last offset (``end_offset - 1``, the offset its records carry) inside no segment batch, above
the log's start -- is a gap in the log: the snapshot is the only word on what happened there,
so its records join the history at that offset (rank 1), each marked with the gap's kind in
``gap``:

* ``"recovery"``: the snapshot's epoch is at least ``RESTORE_EPOCH_JUMP`` above the epoch of
  the last batch below it. ``pykraft metadata restore`` starts a new quorum 1,000 epochs (and
  1,000,000 offsets) past its backup (``backup/restore.py``), and a backup kept on the
  restored quorum copies that snapshot and goes on after the gap, so a history read from such
  a backup crosses the restore here;
* ``"log gap"``: any other snapshot in a gap (a backup that fell behind its source's
  retention, or a restore with ``--epoch-gap`` below 1,000).

Rows that are not in a gap have ``gap`` null.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = ["RESTORE_EPOCH_JUMP", "gap_snapshots", "history_rows"]

# backup.restore.Gaps.epoch's default (the pipeline does not import the backup; a test keeps
# the two equal)
RESTORE_EPOCH_JUMP = 1_000


def history_rows(
    table: DataFrame, tables: Mapping[str, DataFrame], node: int, gaps: bool = True
) -> DataFrame:
    """``table``'s rows of ``node`` in history order (``rank``, ``offset``) with ``gap``;
    ``gaps=False`` leaves the snapshots in gaps out (tables whose snapshot rows would read as
    events that did not happen, such as broker registrations)."""
    segments = tables["batches"].where((F.col("node") == node) & (F.col("source") == "segment"))
    start = segments.agg(F.min("base_offset")).first()
    log_start = 0 if start is None or start[0] is None else int(start[0])
    base = -1
    if log_start > 0:
        earliest = (
            tables["snapshots"]
            .where((F.col("node") == node) & F.col("crc_ok") & (F.col("end_offset") >= log_start))
            .agg(F.min("end_offset"))
            .first()
        )
        if earliest is not None and earliest[0] is not None:
            base = int(earliest[0]) - 1
    in_gaps = gap_snapshots(tables, node, above=base) if gaps else {}
    rows = table.where(F.col("node") == node)
    snapshot = F.col("source") == "snapshot"
    from_snapshot = snapshot & (F.col("offset") == base)
    from_gap = snapshot & F.col("offset").isin(list(in_gaps) or [-2])
    from_log = (F.col("source") == "segment") & (F.col("offset") > base)
    return (
        rows.where(from_snapshot | from_gap | from_log)
        .withColumn("rank", F.when(from_snapshot, 0).otherwise(1))
        .withColumn("gap", _gap_kind(in_gaps))
    )


def gap_snapshots(tables: Mapping[str, DataFrame], node: int, above: int = -1) -> dict[int, str]:
    """The last offset of each snapshot of ``node`` in a gap of its log (above offset
    ``above``, the history's base), with the gap's kind (the module's docstring)."""
    batches = tables["batches"].where((F.col("node") == node) & (F.col("source") == "segment"))
    snapshots = (
        tables["snapshots"]
        .where((F.col("node") == node) & F.col("crc_ok") & (F.col("end_offset") - 1 > above))
        .select((F.col("end_offset") - 1).alias("last"), F.col("epoch").alias("snapshot_epoch"))
        .distinct()
    )
    covered = snapshots.join(
        batches,
        (F.col("base_offset") <= F.col("last")) & (F.col("last_offset") >= F.col("last")),
        "left_semi",
    )
    below = (
        snapshots.join(covered, "last", "left_anti")
        .join(batches, F.col("last_offset") < F.col("last"))
        .groupBy("last", "snapshot_epoch")
        .agg(F.max(F.struct("last_offset", "epoch"))["epoch"].alias("epoch_below"))
    )
    return {
        int(row["last"]): (
            "recovery"
            if row["snapshot_epoch"] - row["epoch_below"] >= RESTORE_EPOCH_JUMP
            else "log gap"
        )
        for row in below.collect()
    }


def _gap_kind(in_gaps: Mapping[int, str]) -> Column:
    kind: Column = F.lit(None).cast("string")
    for last, name in in_gaps.items():
        kind = F.when((F.col("source") == "snapshot") & (F.col("offset") == last), name).otherwise(
            kind
        )
    return kind
