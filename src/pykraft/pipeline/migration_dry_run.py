"""KIP-866 dry run on Spark (issue 18): from an export of a ZooKeeper cluster's znodes (``pykraft
migration export``: one JSON line per znode with its data, zkVersion and children), the
metadata records a migration would write and a report of what would be migrated and what
would be refused -- without a controller, without touching ZooKeeper.

The conversion is the controller's own (``zk_data.read_all_metadata``), run per entity on the
executors: every topic's znodes (its assignment, partition states and config) form one group;
everything else (broker configs, quotas, SCRAM users, the producer id block, ACL and
delegation-token roots) forms the ``cluster`` group. A group sees exactly the znodes it owns
plus two small ones every group needs (``/admin/delete_topics``, for pending deletions, and
the ``/brokers/topics`` listing cut down to the group's topic), so the records of all groups
together are the records of the whole snapshot (checked by the tests against a real
ZooKeeper).

Output, under ``out``: ``records/`` (Parquet: entity, seq, record_type, record_version,
value -- the framed record as Kafka's metadata log holds it --, json) and ``report.json``:
records by type, topics, partitions, the broker ids the assignments name, refused items and
pending deletions with their reasons.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pykraft.migration import zk_data
from pykraft.migration.zk_export import export_lines, snapshot_of

__all__ = ["DryRunReport", "export_lines", "read_export", "run_dry_run", "snapshot_of"]

EXPORT_SCHEMA = T.StructType(
    [
        T.StructField("path", T.StringType(), False),
        T.StructField("data", T.StringType(), True),  # base64; null for a znode without data
        T.StructField("version", T.IntegerType(), False),
        T.StructField("children", T.ArrayType(T.StringType()), True),
    ]
)
OUT_SCHEMA = T.StructType(
    [
        T.StructField("entity", T.StringType(), False),
        T.StructField("kind", T.StringType(), False),  # record | refused | skipped_deletion
        T.StructField("seq", T.IntegerType(), False),
        T.StructField("record_type", T.StringType(), True),
        T.StructField("record_version", T.IntegerType(), True),
        T.StructField("value", T.BinaryType(), True),
        T.StructField("json", T.StringType(), True),
    ]
)
CLUSTER = "cluster"
_TOPIC_PREFIX = zk_data.TOPICS + "/"
_TOPIC_CONFIG_PREFIX = zk_data.CONFIG + "/topics/"


def read_export(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.schema(EXPORT_SCHEMA).json(path)


def _entity_column() -> Any:
    """``topic:<name>`` for a topic's znodes, ``cluster`` for the rest."""
    path = F.col("path")
    under_topics = path.startswith(_TOPIC_PREFIX)
    under_configs = path.startswith(_TOPIC_CONFIG_PREFIX)
    topic_name = F.when(
        under_topics, F.split(F.substring(path, len(_TOPIC_PREFIX) + 1, 1 << 20), "/")[0]
    ).when(under_configs, F.substring(path, len(_TOPIC_CONFIG_PREFIX) + 1, 1 << 20))
    return F.when(topic_name.isNotNull(), F.concat(F.lit("topic:"), topic_name)).otherwise(
        F.lit(CLUSTER)
    )


def _entity_rows(
    shared: dict[str, dict[str, Any]], entity: str, rows: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """One entity's znodes (with the shared listing) as one snapshot, converted by
    ``read_all_metadata``: its records, then what it refused or skipped."""
    from pykraft.metadata.serde import encode_record
    from pykraft.pipeline.decode import to_jsonable

    nodes = {row["path"]: row for row in rows}
    listing = dict(shared[zk_data.TOPICS])
    if entity.startswith("topic:"):
        name = entity[len("topic:") :]
        listing["children"] = [name] if name in (listing["children"] or ()) else []
    else:
        listing["children"] = []
    nodes[zk_data.TOPICS] = listing
    if zk_data.DELETE_TOPICS in shared:
        nodes.setdefault(zk_data.DELETE_TOPICS, shared[zk_data.DELETE_TOPICS])
    load = zk_data.read_all_metadata(snapshot_of(nodes.values()))
    seq = 0
    for record, version in load.records():
        yield {
            "entity": entity,
            "kind": "record",
            "seq": seq,
            "record_type": type(record).__name__,
            "record_version": version,
            "value": encode_record(record, version),
            "json": json.dumps(to_jsonable(record), sort_keys=True),
        }
        seq += 1
    for kind, notes in (
        ("refused", load.refused),
        ("skipped_deletion", load.skipped_deletions),
    ):
        for note in notes:
            yield {
                "entity": entity,
                "kind": kind,
                "seq": seq,
                "record_type": None,
                "record_version": None,
                "value": None,
                "json": json.dumps(note),
            }
            seq += 1


def _convert(shared: dict[str, dict[str, Any]]) -> Any:
    """The executors' function (mapInArrow over entity-sorted partitions): each entity's
    rows become one snapshot, converted by ``read_all_metadata``."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        current: str | None = None
        rows: list[dict[str, Any]] = []

        def flush() -> Any:
            out = list(_entity_rows(shared, current, rows)) if current is not None else []
            return pa.RecordBatch.from_pylist(out, schema=_arrow_schema()) if out else None

        for batch in batches:
            for row in batch.to_pylist():
                if row["entity"] != current:
                    done = flush()
                    if done is not None:
                        yield done
                    current, rows = row["entity"], []
                rows.append(row)
        done = flush()
        if done is not None:
            yield done

    return run


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("entity", pa.string()),
            ("kind", pa.string()),
            ("seq", pa.int32()),
            ("record_type", pa.string()),
            ("record_version", pa.int32()),
            ("value", pa.binary()),
            ("json", pa.string()),
        ]
    )


@dataclass
class DryRunReport:
    records: dict[str, int]
    topics: int
    partitions: int
    broker_ids: list[int]
    refused: list[str]
    skipped_deletions: list[str]
    cluster_id: str | None

    def lines(self) -> list[str]:
        out = [
            f"cluster id: {self.cluster_id}",
            f"would migrate: {self.topics} topics, {self.partitions} partitions, "
            f"{sum(self.records.values())} records",
        ]
        out += [f"  {name}: {count}" for name, count in sorted(self.records.items())]
        out.append(f"brokers named by assignments: {self.broker_ids}")
        out += [f"would refuse: {note}" for note in self.refused]
        out += [f"would skip (pending deletion): {name}" for name in self.skipped_deletions]
        return out


def run_dry_run(spark: SparkSession, export: str, out: str) -> DryRunReport:
    """Convert ``export`` into ``out``/records (Parquet) and ``out``/report.json."""
    znodes = read_export(spark, export).withColumn("entity", _entity_column())
    shared = {
        row["path"]: row.asDict()
        for row in znodes.where(
            F.col("path").isin(zk_data.TOPICS, zk_data.DELETE_TOPICS, zk_data.CLUSTER_ID)
        ).collect()
    }
    shared.setdefault(
        zk_data.TOPICS, {"path": zk_data.TOPICS, "data": None, "version": 0, "children": []}
    )
    parts = max(1, spark.sparkContext.defaultParallelism)
    records = (
        znodes.where(F.col("path") != zk_data.TOPICS)
        .repartition(parts, "entity")
        .sortWithinPartitions("entity", "path")
        .mapInArrow(_convert(shared), OUT_SCHEMA)
        .cache()
    )
    Path(out).mkdir(parents=True, exist_ok=True)
    records.write.mode("overwrite").parquet(str(Path(out) / "records"))
    kept = records.where(F.col("kind") == "record")
    counts = {
        row["record_type"]: int(row["count"])
        for row in kept.groupBy("record_type").count().collect()
    }
    notes = records.where(F.col("kind") != "record").orderBy("entity", "seq").collect()
    brokers = _broker_ids(kept)
    cluster = shared.get(zk_data.CLUSTER_ID)
    cluster_id = None
    if cluster is not None and cluster["data"] is not None:
        cluster_id = zk_data.cluster_id(snapshot_of([cluster]))
    report = DryRunReport(
        records=counts,
        topics=counts.get("TopicRecord", 0),
        partitions=counts.get("PartitionRecord", 0),
        broker_ids=brokers,
        refused=[json.loads(n["json"]) for n in notes if n["kind"] == "refused"],
        skipped_deletions=[json.loads(n["json"]) for n in notes if n["kind"] == "skipped_deletion"],
        cluster_id=cluster_id,
    )
    (Path(out) / "report.json").write_text(json.dumps(asdict(report), indent=2) + "\n")
    records.unpersist()
    return report


def _broker_ids(records: DataFrame) -> list[int]:
    replicas = F.get_json_object(F.col("json"), "$.replicas")
    ids = (
        records.where(F.col("record_type") == "PartitionRecord")
        .select(F.explode(F.from_json(replicas, T.ArrayType(T.IntegerType()))).alias("id"))
        .distinct()
        .collect()
    )
    return sorted(int(row["id"]) for row in ids)
