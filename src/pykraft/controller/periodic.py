"""The active controller's periodic duties (Kafka's ``PeriodicTaskControlManager`` and the
tasks ``QuorumController`` registers with it), and the two leader elections Kafka's
controller makes on a timer without being asked.

Theory of operation. A task has a name, a period and a function of the time that returns
records and whether it wants to run again at once (more work than one batch should hold).
``activate`` schedules every task one period after the controller became active, as Kafka's
``PeriodicTaskControlManager.activate``; ``run_due`` runs the tasks that are due in the order
they were registered and returns the records of the first that wrote any (the others stay
due, so the next tick, which sees the image with those records applied, runs them); a task
that ran is due again one period later, or at once when it asked for that.
``next_deadline_ms`` tells the host when to tick.

The elections (``ReplicationControlManager.maybeBalancePartitionLeaders`` and
``maybeElectUncleanLeaders``):

* ``electPreferred`` (``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds``): a preferred-replica election of each partition
  that is led, but not by its first replica (the topics part's ``imbalanced`` index), so
  leadership goes back where the assignment put it after a broker restart or a rolling
  upgrade. A partition whose first replica may not lead (fenced, out of the ISR, in an
  offline directory) is left as it is.
* ``electUnclean`` (every ``unclean.leader.election.interval.ms``): an unclean election of
  each leaderless partition whose topic allows one (``unclean.leader.election.enable``, the
  topic's or the cluster's), so a partition left offline before its topic was switched to
  unclean elections does not wait for a broker event.

Both write at most ``MAX_ELECTIONS_PER_IMBALANCE`` (Kafka's 1,000) PartitionChangeRecords per
run and then ask to run again at once; candidates are taken in the order of their index, a
set whose order is a function of the records replayed (so the simulator replays a run).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import Final

from pykraft.controller.partition_change import PartitionChangeBuilder
from pykraft.controller.partitions import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    effective_min_isr,
    elr_enabled,
    partition_version,
)
from pykraft.controller.result import RecordList
from pykraft.metadata.image import Image

__all__ = [
    "MAX_ELECTIONS_PER_IMBALANCE",
    "PeriodicTasks",
    "balance_partition_leaders",
    "elect_unclean_leaders",
]

MAX_ELECTIONS_PER_IMBALANCE: Final = 1000  # Kafka's QuorumController constant

TaskRun = Callable[[int], tuple[RecordList, bool]]  # now_ms -> (records, run again at once)


@dataclass(slots=True)
class _Task:
    name: str
    period_ms: int
    run: TaskRun
    next_ms: int = 0


class PeriodicTasks:
    """Invariant: every task's ``next_ms`` is set by ``activate`` before ``run_due`` runs it."""

    def __init__(self) -> None:
        self._tasks: list[_Task] = []

    def register(self, name: str, period_ms: int, run: TaskRun) -> None:
        self._tasks.append(_Task(name, period_ms, run))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(task.name for task in self._tasks)

    def activate(self, now_ms: int) -> None:
        for task in self._tasks:
            task.next_ms = now_ms + task.period_ms

    def run_due(self, now_ms: int) -> RecordList:
        for task in self._tasks:
            if now_ms < task.next_ms:
                continue
            records, again = task.run(now_ms)
            task.next_ms = now_ms if again else now_ms + task.period_ms
            if records:
                return records
        return []

    def next_deadline_ms(self) -> int | None:
        return min((task.next_ms for task in self._tasks), default=None)


def balance_partition_leaders(
    image: Image, limit: int = MAX_ELECTIONS_PER_IMBALANCE
) -> tuple[RecordList, bool]:
    """Preferred-replica elections of the partitions led by another replica than their
    first (Kafka's ``maybeBalancePartitionLeaders``)."""
    return _elect(image, image.topics_image.imbalanced, ELECTION_PREFERRED, limit)


def elect_unclean_leaders(
    image: Image, unclean: Container[uuid.UUID], limit: int = MAX_ELECTIONS_PER_IMBALANCE
) -> tuple[RecordList, bool]:
    """Unclean elections of the leaderless partitions of the topics in ``unclean`` (Kafka's
    ``maybeElectUncleanLeaders``)."""
    keys = (key for key in image.topics_image.leaderless if key[0] in unclean)
    return _elect(image, keys, ELECTION_UNCLEAN, limit)


def _elect(
    image: Image, keys: Iterable[tuple[uuid.UUID, int]], election: str, limit: int
) -> tuple[RecordList, bool]:
    version = partition_version(image.metadata_version or 0)
    elr_on = version >= 2 and elr_enabled(image)
    min_isr_of: dict[uuid.UUID, int] = {}  # one min.insync.replicas lookup per topic
    records: RecordList = []
    for topic_id, partition_id in list(keys):
        if len(records) >= limit:
            return records, True
        p = image.partition(topic_id, partition_id)
        if p is None:
            continue
        builder = PartitionChangeBuilder(image, p, version).set_election(election)
        if elr_on:
            min_isr = min_isr_of.get(topic_id)
            if min_isr is None:
                min_isr = min_isr_of[topic_id] = effective_min_isr(image, p)
            builder.set_min_isr(min_isr)
        record = builder.build()
        if record is not None:  # as Kafka, any change the election makes
            records.append((record, version))
    return records, False
