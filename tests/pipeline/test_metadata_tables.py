"""Kafka's metadata records decoded into tables (issue 31, ``pipeline/metadata_tables.py``):
a log written by the real controller (topics, brokers fenced and unfenced, ISR changes,
configs, producer ids, a reassignment) and records of every other kind, decoded from the
bytes of a segment and of a snapshot, without Spark."""

from __future__ import annotations

import json
import random
import uuid

from pykraft.metadata import records as r
from pykraft.metadata.serde import encode_record
from pykraft.pipeline import decode
from pykraft.pipeline import metadata_tables as mt
from pykraft.records import build_batch
from tests.controller.harness import Harness


def harness_log() -> tuple[Harness, bytes]:
    """A controller busy with every kind of request, its records as one segment (one batch
    per 50 records)."""
    h = Harness(seed=3)
    for broker in (1, 2, 3):
        h.live_broker(broker)
    h.random_requests(random.Random(3), 60)
    for broker in (1, 2, 3):
        h.heartbeat(broker)  # a session may have run out during the random ticks
    assert h.create_topic("kept", 3, 2)["error_code"] == 0
    values = [encode_record(rec, v) for rec, v, _ in h.written]
    segment = b"".join(
        build_batch(i, 1, values[i : i + 50], 1_700_000_000_000 + i)
        for i in range(0, len(values), 50)
    )
    return h, segment


def test_every_controller_record_lands_in_its_table() -> None:
    h, segment = harness_log()
    tables = decode.decode_rows(1, "/x/__cluster_metadata-0/00000000000000000000.log", segment)
    records = tables[decode.RECORDS]
    assert len(records) == len(h.written)
    # The JSON of each record names its type, as kafka-dump-log's decoder does.
    types = [json.loads(row[11])["type"] for row in records]
    assert types == [mt.kafka_type_name(rec) for rec, _, _ in h.written]
    assert mt.kafka_type_name(r.ZkMigrationStateRecord()) == "ZK_MIGRATION_STATE_RECORD"
    assert mt.kafka_type_name(r.NoOpRecord()) == "NO_OP_RECORD"
    by_type: dict[str, int] = {}
    for rec, _, _ in h.written:
        by_type[type(rec).__name__] = by_type.get(type(rec).__name__, 0) + 1
    assert len(tables[mt.TOPICS]) == by_type.get("TopicRecord", 0) + by_type.get(
        "RemoveTopicRecord", 0
    )
    assert len(tables[mt.PARTITION_CHANGES]) == by_type.get("PartitionRecord", 0) + by_type.get(
        "PartitionChangeRecord", 0
    )
    broker_kinds = (
        "RegisterBrokerRecord",
        "BrokerRegistrationChangeRecord",
        "FenceBrokerRecord",
        "UnfenceBrokerRecord",
        "UnregisterBrokerRecord",
    )
    assert len(tables[mt.BROKERS]) == sum(by_type.get(k, 0) for k in broker_kinds)
    assert len(tables[mt.CONFIGS]) == by_type.get("ConfigRecord", 0) > 0
    assert len(tables[mt.PRODUCER_IDS]) == by_type.get("ProducerIdsRecord", 0) > 0
    assert len(tables[mt.FEATURES]) == by_type["FeatureLevelRecord"]
    assert tables[mt.UNDECODED] == []
    # Offsets, batch offsets and columns line up with what was written.
    for row in tables[mt.PARTITION_CHANGES]:
        rec = next(x for x, _, off in h.written if off == row[3])
        assert isinstance(rec, r.PartitionRecord | r.PartitionChangeRecord)
        assert row[4] == row[3] // 50 * 50  # the batch's base offset
        assert (row[8], row[9]) == (str(rec.topic_id), rec.partition_id)
        assert row[14] == rec.leader
    registered = [row for row in tables[mt.BROKERS] if row[8] == "register"]
    assert sorted(row[9] for row in registered)[:3] == [1, 2, 3]
    assert all(row[14] is True for row in registered)  # brokers register fenced
    assert any(row[8] == "unfence" for row in tables[mt.BROKERS])


def test_secrets_never_reach_a_table() -> None:
    values = [
        r.UserScramCredentialRecord(
            name="alice",
            mechanism=2,
            salt=b"pepper!",
            stored_key=b"stored",
            server_key=b"srv",
            iterations=8192,
        ),
        r.ConfigRecord(
            resource_type=4,
            resource_name="",
            name="listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
            value='org.apache...ScramLoginModule required password="s3cret";',
        ),
        r.ConfigRecord(resource_type=4, resource_name="1", name="ssl.key.password", value="pw"),
        r.ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="1000"),
        # The controller's rule (controller/configs.sensitive_config): a broker config of a
        # known non-secret type is shown, one of no known type is not (Kafka's maybeSensitive),
        # nor a listener's keystore password under its prefix.
        r.ConfigRecord(resource_type=4, resource_name="", name="num.io.threads", value="8"),
        r.ConfigRecord(resource_type=4, resource_name="", name="my.plugin.token", value="quartz"),
        r.ConfigRecord(
            resource_type=4,
            resource_name="1",
            name="listener.name.internal.ssl.keystore.password",
            value="zircon",
        ),
    ]
    batch = build_batch(0, 1, [encode_record(v, 0) for v in values], 1)
    tables = decode.decode_rows(1, "/x/__cluster_metadata-0/00000000000000000000.log", batch)
    dumped = json.dumps(tables, default=str)
    for secret in ("s3cret", "pepper", "cGVwcGVy", "quartz", "cXVhcnR6", "zircon", '"pw"'):
        assert secret not in dumped, secret
    ((*_, event, name, mechanism, iterations),) = tables[mt.SCRAM_USERS]
    assert (event, name, mechanism, iterations) == ("upsert", "alice", "SCRAM-SHA-512", 8192)
    configs = {row[9]: (row[10], row[11]) for row in tables[mt.CONFIGS]}
    assert configs["ssl.key.password"] == (None, True)
    assert configs["retention.ms"] == ("1000", False)
    assert configs["num.io.threads"] == ("8", False)
    assert configs["my.plugin.token"] == (None, True)
    assert configs["listener.name.internal.ssl.keystore.password"] == (None, True)


def test_every_other_kind_and_a_bad_value() -> None:
    entity = r.client_quota_record.EntityData(entity_type="user", entity_name=None)
    values = [
        encode_record(
            r.AccessControlEntryRecord(
                id=uuid.UUID(int=7),
                resource_type=2,
                resource_name="orders",
                pattern_type=4,
                principal="User:bob",
                host="*",
                operation=3,
                permission_type=3,
            ),
            0,
        ),
        encode_record(r.RemoveAccessControlEntryRecord(id=uuid.UUID(int=7)), 0),
        encode_record(
            r.ClientQuotaRecord(entity=(entity,), key="producer_byte_rate", value=1e6), 0
        ),
        encode_record(r.ZkMigrationStateRecord(zk_migration_state=1), 0),
        encode_record(r.BeginTransactionRecord(name="Bootstrap records"), 0),
        encode_record(r.EndTransactionRecord(), 0),
        encode_record(r.NoOpRecord(), 0),  # records table only
        b"\x01\x63\x00",  # frame 1, record type 99: no such metadata record
        b'{"not": "metadata"}',
    ]
    batch = build_batch(0, 4, values, 1)
    tables = decode.decode_rows(2, "/x/__cluster_metadata-0/00000000000000000000.log", batch)
    assert [row[7:] for row in tables[mt.ACLS]] == [
        ("add", str(uuid.UUID(int=7)), 2, "orders", 4, "User:bob", "*", 3, 3),
        ("remove", str(uuid.UUID(int=7)), None, None, None, None, None, None, None),
    ]
    assert [row[7:] for row in tables[mt.QUOTAS]] == [
        ("user=<default>", "producer_byte_rate", 1e6, False)
    ]
    assert [row[7:] for row in tables[mt.MIGRATION_STATE]] == [(1, "MIGRATION")]
    assert [row[7:] for row in tables[mt.TRANSACTIONS]] == [
        ("begin", "Bootstrap records"),
        ("end", None),
    ]
    undecoded = tables[mt.UNDECODED]
    assert [row[3] for row in undecoded] == [7, 8]  # offsets of the two bad values
    assert all(row[7] for row in undecoded)  # a reason each
    assert len(tables[decode.RECORDS]) == len(values)  # nothing is dropped


def test_snapshot_rows_carry_the_snapshot_offset() -> None:
    h, _ = harness_log()
    values = [encode_record(rec, v) for rec, v in h.image.records(2, 3)]
    batch = build_batch(0, 1, values, 5)
    name = "/x/__cluster_metadata-0/00000000000000001234-0000000001.checkpoint"
    tables = decode.decode_rows(1, name, batch)
    partitions = tables[mt.PARTITION_CHANGES]
    assert partitions and {row[3] for row in partitions} == {1233}
    assert {row[1] for row in partitions} == {"snapshot"}
    assert len(partitions) == sum(len(t.partitions) for t in h.image.topics.values())
