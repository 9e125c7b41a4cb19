"""The fault harness's checker and schedule, on made-up replicas (no processes)."""

from __future__ import annotations

import uuid

from pykraft.faults.broker_side import BROKER_KINDS, BUSY, MIN_HOLD_S
from pykraft.faults.check import Replica, check
from pykraft.faults.cluster import BROKER_BASE
from pykraft.faults.run import LEADER, NETWORK_KINDS, PROCESS_KINDS, RunConfig, schedule
from pykraft.faults.workload import Ack

INC = uuid.UUID(int=7)


def replica(node_id: int, *, start: int = 0, end: int = 10, crc: int = 1) -> Replica:
    r = Replica(node_id, start, end)
    r.batches = [(0, 5, 1, 11), (5, 10, 2, crc)]
    r.registrations = {6: (1000, str(INC))}
    r.leaders = {1: 1, 2: 2}
    return r


def test_identical_replicas_holding_every_ack_pass() -> None:
    verdict = check([replica(1), replica(2), replica(3)], [Ack(6, 1000, INC, 0.0)], committed=10)
    assert verdict.ok and verdict.checked == 1


def test_an_ack_missing_or_different_on_one_replica_is_lost() -> None:
    other = replica(2)
    other.registrations = {6: (1000, str(uuid.UUID(int=8)))}
    verdict = check([replica(1), other], [Ack(6, 1000, INC, 0.0)], committed=10)
    assert not verdict.ok and "offset 6" in verdict.lost[0]
    verdict = check([replica(1)], [Ack(12, 1000, INC, 0.0)], committed=10)
    assert verdict.lost == ["offset 12 acknowledged, above the committed 10"]


def test_divergent_batches_and_short_replicas_are_reported() -> None:
    verdict = check([replica(1), replica(2, crc=99)], [], committed=10)
    assert len(verdict.divergences) == 1 and "batch 1" in verdict.divergences[0]
    verdict = check([replica(1), replica(2, end=8)], [], committed=10)
    assert any("below the committed" in d for d in verdict.divergences)


def test_two_leaders_in_one_epoch_across_logs() -> None:
    other = replica(2)
    other.leaders = {1: 3}
    verdict = check([replica(1), other], [], committed=10)
    assert verdict.two_leaders == ["epoch 1: leader 1 in node 1's log, 3 in node 2's"]


def test_an_ack_below_every_log_start_is_not_checkable_here() -> None:
    verdict = check([replica(1, start=7), replica(2, start=7)], [Ack(6, 1000, INC, 0.0)], 10)
    assert verdict.ok and verdict.checked == 0


def test_the_schedule_is_the_seeds_and_a_minute_sees_every_kind() -> None:
    config = RunConfig(seed=11, seconds=60, voters=3, observers=1)
    faults = schedule(config)
    assert faults == schedule(config)
    assert faults != schedule(RunConfig(seed=12, seconds=60, voters=3, observers=1))
    assert {f.kind for f in faults} == set(PROCESS_KINDS + NETWORK_KINDS)
    assert any(LEADER in f.targets for f in faults)
    no_net = schedule(RunConfig(seed=11, seconds=60, voters=3, observers=1, netns=False))
    assert {f.kind for f in no_net} == set(PROCESS_KINDS)
    for f in faults:
        if f.kind == "split":  # a minority of the voters
            assert 1 <= len(f.targets) <= 1


def test_with_brokers_the_schedule_adds_the_broker_kinds_and_keeps_the_controllers() -> None:
    config = RunConfig(seed=5, seconds=120, voters=3, observers=1, brokers=3)
    faults = schedule(config)
    assert {f.kind for f in faults} == set(PROCESS_KINDS + NETWORK_KINDS + BROKER_KINDS)
    for f in faults:
        if f.kind in BROKER_KINDS:  # a broker, or the busiest partition's leader
            assert f.targets[0] == BUSY or f.targets[0] > BROKER_BASE
        else:
            assert all(t <= 4 for t in f.targets)
        if f.kind in ("fence", "isr"):  # held past the session timeout / replica lag time
            assert f.hold_s >= MIN_HOLD_S[f.kind] + 2.0


def test_topic_results_against_the_final_listing() -> None:
    """A deleted topic listed at the end is a disagreement, unless a create of it went
    unanswered (it may take effect later: a broker's forwarded retry); a topic created and
    never deleted must be listed."""
    from pykraft.faults.kafka_check import KafkaVerdict, topic_results_disagree
    from pykraft.faults.kafka_workload import TopicOp

    ops = [
        TopicOp("create", "a", True),
        TopicOp("create", "b", True),
        TopicOp("delete", "b", True),
        TopicOp("create", "c", False),  # no answer: it may still be created
        TopicOp("delete", "c", True),
        TopicOp("create", "d", True),
    ]
    verdict = KafkaVerdict()
    assert topic_results_disagree(ops, {"a", "b", "c"}, verdict) == [
        "b: deleted, still listed",
        "d: created, never deleted, missing",
    ]
    assert verdict.recreated == ["c"]
    assert topic_results_disagree(ops, {"a", "d"}, KafkaVerdict()) == []
