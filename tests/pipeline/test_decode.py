"""The pure half of ingest: one file's bytes -> table rows (no Spark)."""

from __future__ import annotations

import json
from typing import Any

from crc32c import crc32c

from pykraft.pipeline import decode
from pykraft.pipeline.committed import (
    GIVEN,
    MAJORITY,
    SNAPSHOT,
    NodeLog,
    committed_prefixes,
    parse_node_offsets,
)
from pykraft.pipeline.schemas import BY_TABLE
from pykraft.pipeline.totals import NodeTotals, voter_count
from pykraft.records import build_batch

from .logfiles import T0_MS, LogBuilder, write_node, write_snapshot

SEGMENT_PATH = "file:/data/n1/__cluster_metadata-0/00000000000000000000.log"


def rows_by_table(node: int, path: str, content: bytes) -> dict[str, list[dict[str, Any]]]:
    """Each table's rows as dicts keyed by the table's column names (``schemas.BY_TABLE``)."""
    rows = decode.decode_rows(node, path, content)
    named: dict[str, list[dict[str, Any]]] = {}
    for table, table_rows in rows.items():
        columns = BY_TABLE[table].fieldNames()
        assert all(len(r) == decode.WIDTHS[table] == len(columns) for r in table_rows)
        named[table] = [dict(zip(columns, r, strict=True)) for r in table_rows]
    return named


def pick(row: dict[str, Any], *columns: str) -> tuple[Any, ...]:
    return tuple(row[c] for c in columns)


def three_epoch_log() -> LogBuilder:
    b = LogBuilder()
    b.leader_change(1, 1)
    b.voters(1)
    b.data(1, count=3)
    b.leader_change(2, 2)
    b.data(2, count=2)
    return b


def test_file_names() -> None:
    assert decode.parse_file_name(SEGMENT_PATH) == decode.FileName("segment", 0, None)
    snap = decode.parse_file_name("/x/00000000000000000120-0000000007.checkpoint")
    assert snap == decode.FileName("snapshot", 120, 7)
    assert decode.parse_file_name("/x/00000000000000000120-0000000007.checkpoint.part") is None
    assert decode.parse_file_name("/x/quorum-state") is None


def test_segment_rows() -> None:
    b = three_epoch_log()
    rows = rows_by_table(1, SEGMENT_PATH, b"".join(b.batches))
    batches = rows["batches"]
    columns = ("base_offset", "last_offset", "epoch", "is_control", "crc_ok")
    assert [pick(r, *columns) for r in batches] == [
        (0, 0, 1, True, True),
        (1, 1, 1, True, True),
        (2, 4, 1, False, True),
        (5, 5, 2, True, True),
        (6, 7, 2, False, True),
    ]
    records = rows["records"]
    assert [r["offset"] for r in records] == list(range(8))
    assert [r["record_type"] for r in records][:3] == ["LEADER_CHANGE", "KRAFT_VOTERS", "DATA"]
    assert json.loads(records[2]["value_json"]) == {"tag": "x", "i": 0}
    assert json.loads(records[0]["value_json"])["leader_id"] == 1
    changes = rows["leader_changes"]
    assert [pick(r, "offset", "epoch", "leader_id") for r in changes] == [(0, 1, 1), (5, 2, 2)]
    assert changes[0]["voters"] == [(1, None), (2, None), (3, None)]
    assert changes[0]["granting_voters"] == [(1, None), (2, None)]
    (voters,) = rows["voter_sets"]
    assert voters["offset"] == 1 and [v[0] for v in voters["voters"]] == [1, 2, 3]
    assert voters["voters"][0][2] == [("CONTROLLER", "127.0.0.1", 9091)]
    size = len(b"".join(b.batches))
    assert rows["files"] == [
        {
            "node": 1,
            "source": "segment",
            "file": SEGMENT_PATH,
            "size_bytes": size,
            "base_offset": 0,
            "batches": 5,
            "valid_bytes": size,
            "error": None,
        }
    ]


def test_bad_crc_is_flagged_and_not_decoded() -> None:
    b = three_epoch_log()
    data = bytearray(b"".join(b.batches))
    third = sum(len(x) for x in b.batches[:2])
    data[third + 70] ^= 0xFF  # inside the third batch's records
    rows = rows_by_table(1, SEGMENT_PATH, bytes(data))
    assert [r["crc_ok"] for r in rows["batches"]] == [True, True, False, True, True]
    assert [r["offset"] for r in rows["records"]] == [0, 1, 5, 6, 7]
    assert rows["files"][0]["error"] is None


def test_torn_tail_stops_reading_and_says_why() -> None:
    b = three_epoch_log()
    data = b"".join(b.batches)
    rows = rows_by_table(1, SEGMENT_PATH, data[:-10])
    assert len(rows["batches"]) == 4
    (files,) = rows["files"]
    assert files["valid_bytes"] == sum(len(x) for x in b.batches[:4])
    assert files["error"] is not None and "torn" in files["error"]


def test_garbage_stops_reading() -> None:
    rows = rows_by_table(1, SEGMENT_PATH, b"\x00" * 100)
    assert rows["batches"] == [] and rows["files"][0]["error"] is not None


def test_snapshot_rows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log_dir = write_node(tmp_path, 1, three_epoch_log().batches)
    path = write_snapshot(log_dir, 8, 2, [b'{"k": 1}', b"\x01\x02"])
    rows = rows_by_table(1, str(path), path.read_bytes())
    (snap,) = rows["snapshots"]
    assert pick(snap, "end_offset", "epoch") == (8, 2)
    assert pick(snap, "batches", "records", "crc_ok", "has_header", "has_footer") == (
        5,
        2,
        True,
        True,
        True,
    )
    assert pick(snap, "last_contained_log_timestamp_ms", "kraft_version") == (T0_MS, 1)
    assert [v[0] for v in snap["voters"]] == [1, 2, 3]
    (voters,) = rows["voter_sets"]
    # In force at the snapshot's last offset.
    assert pick(voters, "node", "source", "offset", "epoch") == (1, "snapshot", 7, 2)
    data = [r for r in rows["records"] if r["record_type"] == "DATA"]
    assert json.loads(data[1]["value_json"]) == {"size": 2, "hex": "0102"}


def test_render_data_value() -> None:
    assert decode.render_data_value(None) == "null"
    assert decode.render_data_value(b'{"b":1,"a":2}') == '{"a": 2, "b": 1}'
    big = decode.render_data_value(b"\xff" * (decode.VALUE_RENDER_MAX_BYTES + 1))
    assert json.loads(big)["truncated"] is True


def test_unknown_file() -> None:
    rows = rows_by_table(1, "/x/notes.txt", b"hello")
    assert rows["files"][0]["source"] == "unknown"


def test_a_batch_with_many_records() -> None:
    batch = build_batch(0, 1, [b"v"] * 300, T0_MS)
    rows = rows_by_table(1, SEGMENT_PATH, batch)
    assert len(rows["records"]) == 300 and rows["records"][299]["offset"] == 299


# -- committed prefixes -----------------------------------------------------------------


def test_committed_given_wins() -> None:
    logs = [NodeLog(1, 0, 10, 0), NodeLog(2, 0, 8, 0), NodeLog(3, 0, 4, 0)]
    got = committed_prefixes(logs, 3, {1: 6})
    assert [(p.node, p.committed_offset, p.source) for p in got] == [
        (1, 6, GIVEN),
        (2, 8, MAJORITY),  # majority end: 2nd largest of (10, 8, 4)
        (3, 4, MAJORITY),  # capped at its own log end
    ]


def test_committed_snapshot_raises_the_majority_bound() -> None:
    logs = [NodeLog(1, 0, 10, 0), NodeLog(2, 0, 3, 0), NodeLog(3, 9, 9, 9)]
    got = {p.node: p for p in committed_prefixes(logs, 3, {})}
    assert got[1].committed_offset == 9
    assert got[3].committed_offset == 9


def test_committed_too_few_nodes_for_a_majority() -> None:
    got = committed_prefixes([NodeLog(1, 0, 10, 5)], 3, {})
    assert [(p.committed_offset, p.source) for p in got] == [(5, SNAPSHOT)]


def test_parse_node_offsets() -> None:
    assert parse_node_offsets(["1=10", "2=0"]) == {1: 10, 2: 0}
    for bad in ("1", "a=1", "1=x"):
        try:
            parse_node_offsets([bad])
        except ValueError:
            continue
        raise AssertionError(bad)


def test_columns_come_in_bounded_chunks() -> None:
    b = LogBuilder()
    for _ in range(5):
        b.data(1, count=4)
    content = b"".join(b.batches)
    chunks = list(decode.decode_file(1, SEGMENT_PATH, content, chunk_rows_max=6))
    records = [c for c in chunks if c.table == "records"]
    # cut between batches once 6 rows are held: 8, 8, 4
    assert [len(c) for c in records] == [8, 8, 4]
    assert chunks[-1].table == "files" and len(chunks[-1]) == 1
    assert [r[3] for c in records for r in c.rows()] == list(range(20))


def test_valid_crc_over_malformed_records_stops_the_file() -> None:
    b = three_epoch_log()
    bad = build_batch(8, 2, [b"v"], T0_MS)
    # a record count of 2 for one record: the CRC covers it, so recompute it
    body = bytearray(bad)
    body[57:61] = (2).to_bytes(4, "big")
    body[23:27] = (1).to_bytes(4, "big")  # last offset delta
    body[17:21] = crc32c(bytes(body[21:])).to_bytes(4, "big")
    rows = rows_by_table(1, SEGMENT_PATH, b"".join(b.batches) + bytes(body))
    assert len(rows["batches"]) == 5
    assert "stopped at position" in rows["files"][0]["error"]


def test_node_totals_from_columns() -> None:
    b = three_epoch_log()
    content = b"".join(b.batches)
    totals = NodeTotals()
    for cols in decode.decode_file(1, SEGMENT_PATH, content, chunk_rows_max=2):
        totals.add(cols)
    assert (totals.files, totals.file_bytes, totals.batches, totals.records) == (
        1,
        len(content),
        5,
        8,
    )
    assert (totals.log_start_offset, totals.log_end_offset) == (0, 8)
    assert totals.leader_change == (5, 2, 3) and totals.voter_set == (1, 1, 3)
    again = NodeTotals.from_json(totals.to_json())
    assert again == totals
    merged = again.merge(NodeTotals(files=1, log_start_offset=3, snapshot_end_offset=6))
    assert (merged.files, merged.log_start_offset, merged.snapshot_end_offset) == (2, 0, 6)
    assert merged.node_log(1) == NodeLog(1, 0, 8, 6)
    assert voter_count({1: merged}) == 3
