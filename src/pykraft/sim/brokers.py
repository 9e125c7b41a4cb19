"""Simulated Kafka brokers for the ``controller`` profile: they drive the real metadata
controller as Kafka's brokers do, with the simulator's clock and randomness.

Each broker has one channel to the active controller (one request outstanding, as a Kafka
broker's heartbeat channel; a request unanswered after ``REQUEST_TIMEOUT_MS`` is given up and
retried). It registers (a new incarnation each time it starts), heartbeats every
``HEARTBEAT_MS`` stating how far it replayed the metadata log (the highest committed offset
any live controller holds: it follows the log as an observer), asks to be unfenced once it
caught up, reports ISR changes for the partitions it leads with AlterPartition (a follower
catching up joins the ISR, now and then one falls out), sometimes crashes (it just stops:
its session expires and the controller fences it) or shuts down cleanly (controlled
shutdown), and returns later. An admin sets KIP-435's reassignment limits once (values from
the seed), then creates and deletes topics, adds partitions, reassigns partitions to random
brokers and cancels reassignments in progress.

Requests travel to whichever node the broker believes leads (the live leader of the highest
epoch), arrive after the network's latency, and are answered when the controller's records
commit; a node that is not the active controller answers NOT_CONTROLLER (here: no answer,
the broker retries), as does one that loses leadership first.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.result import Response
from pykraft.controller.steps import LIMIT_CONFIGS as LIMITS
from pykraft.metadata.image import BROKER_RESOURCE
from pykraft.metadata.versions import broker_registration_features
from pykraft.protocol import ApiKey, views
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make
from pykraft.sim.controller import CLUSTER_ID

if TYPE_CHECKING:
    from pykraft.sim.network import Network
    from pykraft.sim.node import SimNode
    from pykraft.sim.recovery import Recovery

__all__ = ["BrokerSite", "SimBrokers"]


class BrokerSite(Protocol):
    """What the simulated brokers use of the simulation (``Simulation``): the clock, the
    nodes and network, the leader, the heal phase, and how to schedule their events."""

    nodes: list[SimNode]
    by_id: list[SimNode | None]
    network: Network
    now_ms: int
    recovery: Recovery

    def leader(self) -> SimNode | None: ...

    def push_broker_event(self, delay_ms: int, payload: tuple[Any, ...]) -> None: ...

    def after(self, node: SimNode) -> None: ...


HEARTBEAT_MS: Final = 2_000
TICK_MS: Final = 250
REQUEST_TIMEOUT_MS: Final = 3_000
ADMIN_INTERVAL_MS: Final = 1_500
CRASH_PER_TICK: Final = 0.004
SHUTDOWN_PER_TICK: Final = 0.003
ISR_CHANGE_PER_TICK: Final = 0.05
DOWN_MS: Final = (1_000, 12_000)
# A Kafka 4.4.0 broker's features (4.4-IV2 is its newest level).
FEATURES: Final = tuple(broker_registration_features(33))


@dataclass
class SimBroker:
    broker_id: int
    state: str = "unregistered"  # unregistered | registered | down
    incarnation: uuid.UUID = field(default_factory=lambda: uuid.UUID(int=0))
    epoch: int = -1
    shutting_down: bool = False
    return_at_ms: int = 0
    next_heartbeat_ms: int = 0
    outstanding: int = 0  # token of the request in flight (0: none)
    sent_at_ms: int = 0
    starts: int = 0
    # The epoch a controlled shutdown left in its clean-shutdown file (-1 after a crash):
    # sent as PreviousBrokerEpoch, so a clean restart keeps the broker in its ELRs.
    clean_epoch: int = -1


class SimBrokers:
    """The brokers and the admin. Events come through the simulator's ``EV_BROKER``."""

    def __init__(self, sim: BrokerSite, rng: random.Random, count: int) -> None:
        self.sim = sim
        self.rng = rng
        self.brokers = [SimBroker(100 + i) for i in range(count)]
        self._tokens = 0
        self.topics_created = 0
        self.counts: dict[str, int] = {}
        for b in self.brokers:
            self._start(b)

    # -- events --------------------------------------------------------------------------

    @property
    def _healing(self) -> bool:
        return self.sim.recovery.healing

    def start(self) -> None:
        self.sim.push_broker_event(TICK_MS, ("tick",))
        self.sim.push_broker_event(ADMIN_INTERVAL_MS, ("admin",))

    def on_event(self, payload: tuple[Any, ...]) -> None:
        kind = payload[0]
        if kind == "tick":
            for b in self.brokers:
                self._tick(b)
            self.sim.push_broker_event(TICK_MS, ("tick",))
        elif kind == "admin":
            if not self._healing:
                self._admin()
            self.sim.push_broker_event(ADMIN_INTERVAL_MS, ("admin",))
        elif kind == "deliver":
            self._deliver(*payload[1:])
        elif kind == "reply":
            self._reply(*payload[1:])

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    # -- the brokers ---------------------------------------------------------------------

    def _start(self, b: SimBroker) -> None:
        b.starts += 1
        b.state = "unregistered"
        b.incarnation = uuid.UUID(int=(b.broker_id << 96) + b.starts)
        b.epoch = -1
        b.shutting_down = False
        b.outstanding = 0
        b.next_heartbeat_ms = 0

    def metadata_offset(self) -> int:
        """How far a broker following the log has replayed: the highest committed offset
        a live controller holds."""
        hwms = [n.core.high_watermark for n in self.sim.nodes if n.core is not None]
        return max(hwms, default=0) - 1

    def _tick(self, b: SimBroker) -> None:
        now = self.sim.now_ms
        rng = self.rng
        if b.state == "down":
            if now >= b.return_at_ms:
                self._start(b)
            return
        if b.outstanding and now - b.sent_at_ms > REQUEST_TIMEOUT_MS:
            b.outstanding = 0  # given up; retried below
        if not self._healing:
            if rng.random() < CRASH_PER_TICK:
                self._count("broker_crash")
                self._down(b)
                return
            if b.state == "registered" and rng.random() < SHUTDOWN_PER_TICK:
                self._count("broker_shutdown")
                b.shutting_down = True
        if b.outstanding:
            return
        if b.state == "unregistered":
            self._send(
                b,
                ApiKey.BROKER_REGISTRATION,
                4,
                {
                    "broker_id": b.broker_id,
                    "cluster_id": CLUSTER_ID,
                    "incarnation_id": b.incarnation,
                    "listeners": [
                        {
                            "name": "PLAINTEXT",
                            "host": "sim",
                            "port": 9000 + b.broker_id,
                            "security_protocol": 0,
                        }
                    ],
                    "features": list(FEATURES),
                    "rack": f"rack{b.broker_id % 2}",
                    "log_dirs": [uuid.UUID(int=(b.broker_id << 64) + 7)],
                    "previous_broker_epoch": b.clean_epoch,
                },
            )
            return
        if now >= b.next_heartbeat_ms:
            b.next_heartbeat_ms = now + HEARTBEAT_MS
            self._send(
                b,
                ApiKey.BROKER_HEARTBEAT,
                1,
                {
                    "broker_id": b.broker_id,
                    "broker_epoch": b.epoch,
                    "current_metadata_offset": self.metadata_offset(),
                    "want_fence": False,
                    "want_shut_down": b.shutting_down,
                },
            )
            return
        if not b.shutting_down and (self._healing or rng.random() < ISR_CHANGE_PER_TICK):
            self._isr_change(b)

    def pending_moves(self) -> list[str]:
        """Partitions of the active controller's committed-or-not image still being
        reassigned (adding/removing replicas, or a KIP-435 final target not reached)."""
        node = self.sim.leader()
        if node is None or node.controller is None:
            return ["(no active controller)"]
        image = node.controller.image
        return [
            f"{image.topics[p.topic_id].name}-{p.partition_id}"
            for p in image.all_partitions()
            if p.adding or p.removing or p.final_target is not None
        ]

    def _down(self, b: SimBroker, *, clean: bool = False) -> None:
        b.clean_epoch = b.epoch if clean else -1
        b.state = "down"
        b.outstanding = 0
        b.return_at_ms = self.sim.now_ms + self.rng.randint(*DOWN_MS)

    def _isr_change(self, b: SimBroker) -> None:
        """As the leader of a partition: add a live replica missing from the ISR, or now
        and then drop a follower from it."""
        node = self.sim.leader()
        if node is None or node.controller is None:
            return
        image = node.controller.image
        led = [p for p in image.all_partitions() if p.leader == b.broker_id and len(p.replicas) > 1]
        live = {
            x.broker_id for x in self.brokers if x.state == "registered" and not x.shutting_down
        }
        if self._healing:
            # Healing: followers catch up at once (only joins, no falls), so that moves end.
            led = [p for p in led if any(r not in p.isr and r in live for r in p.replicas)]
        if not led:
            return
        p = led[int(self.rng.random() * len(led))]
        missing = [r for r in p.replicas if r not in p.isr and r in live]
        isr = list(p.isr)
        if missing:
            isr.append(missing[0])
        elif len(isr) > 1:
            isr.remove(next(r for r in isr if r != b.broker_id))
        else:
            return
        members = []
        for r in isr:
            registered = image.brokers.get(r)
            members.append({"broker_id": r, "broker_epoch": registered.epoch if registered else -1})
        self._count("alter_partition")
        self._send(
            b,
            ApiKey.ALTER_PARTITION,
            3,
            {
                "broker_id": b.broker_id,
                "broker_epoch": b.epoch,
                "topics": [
                    {
                        "topic_id": p.topic_id,
                        "partitions": [
                            {
                                "partition_index": p.partition_id,
                                "leader_epoch": p.leader_epoch,
                                "new_isr_with_epochs": members,
                                "leader_recovery_state": 0,
                                "partition_epoch": p.partition_epoch,
                            }
                        ],
                    }
                ],
            },
        )

    def _on_response(self, b: SimBroker, api_key: int, response: Response) -> None:
        if api_key == ApiKey.BROKER_REGISTRATION:
            registered = cast(views.BrokerRegistrationResponse, response)
            if registered.get("error_code", 0) == 0:
                b.state = "registered"
                b.epoch = registered["broker_epoch"]
                b.next_heartbeat_ms = self.sim.now_ms
                self._count("registered")
            return
        if api_key == ApiKey.BROKER_HEARTBEAT:
            beat = cast(views.BrokerHeartbeatResponse, response)
            code = beat.get("error_code", 0)
            if code == ErrorCode.stale_broker_epoch:
                self._start(b)  # its registration is gone: register again
                return
            if code == 0 and beat.get("should_shut_down"):
                self._count("controlled_shutdown_done")
                self._down(b, clean=True)
            return

    # -- the admin -----------------------------------------------------------------------

    def _admin(self) -> None:
        node = self.sim.leader()
        if node is None or node.controller is None:
            return
        rng = self.rng
        image = node.controller.image
        if LIMITS[0] not in image.configs.get((BROKER_RESOURCE, ""), {}):
            self._set_limits()
            return
        choice = rng.random()
        if choice < 0.45 or not image.topics:
            self.topics_created += 1
            name = f"t{self.topics_created}"
            fields: dict[str, Any] = {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": 1 + int(rng.random() * 3),
                        "replication_factor": 1 + int(rng.random() * 3),
                    }
                ],
                "timeout": 10_000,
            }
            self._admin_send(ApiKey.CREATE_TOPICS, 7, fields)
        elif choice < 0.58:
            names = sorted(image.topics_by_name)
            name = names[int(rng.random() * len(names))]
            self._admin_send(ApiKey.DELETE_TOPICS, 5, {"topic_names": [name], "timeout": 10_000})
        elif choice < 0.9:
            self._reassign(image, cancel=choice >= 0.84)
        else:
            names = sorted(image.topics_by_name)
            name = names[int(rng.random() * len(names))]
            count = len(image.topics[image.topics_by_name[name]].partitions) + 1
            self._admin_send(
                ApiKey.CREATE_PARTITIONS,
                3,
                {
                    "topics": [{"name": name, "count": count, "assignments": None}],
                    "timeout": 10_000,
                },
            )

    def _set_limits(self) -> None:
        """KIP-435's limits for the run, from the seed: reassignment.parallel.replica.count
        1-2, .partition.count 1-3, .leader.movements 1-2, max.concurrent.replica.movements
        2-5 (set once, never changed, so that the checker can hold every committed step to
        them)."""
        rng = self.rng
        values = (
            1 + int(rng.random() * 2),
            1 + int(rng.random() * 3),
            1 + int(rng.random() * 2),
            2 + int(rng.random() * 4),
        )
        self._admin_send(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": BROKER_RESOURCE,
                        "resource_name": "",
                        "configs": [
                            {"name": name, "config_operation": 0, "value": str(value)}
                            for name, value in zip(LIMITS, values, strict=True)
                        ],
                    }
                ],
                "validate_only": False,
            },
        )

    def _reassign(self, image: Any, *, cancel: bool) -> None:
        """Move a random partition to random brokers (a replication factor of 1 to 3), or
        cancel a move in progress."""
        rng = self.rng
        partitions = sorted(
            (topic.name, p.partition_id, p)
            for topic in image.topics.values()
            for p in topic.partitions.values()
            if not cancel or p.adding or p.removing or p.final_target is not None
        )
        if not partitions:
            return
        name, index, _ = partitions[int(rng.random() * len(partitions))]
        ids = [b.broker_id for b in self.brokers]
        target = None
        if not cancel:
            rf = 1 + int(rng.random() * min(3, len(ids)))
            target = rng.sample(ids, rf)
        self._admin_send(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            {
                "timeout": 10_000,
                "topics": [
                    {"name": name, "partitions": [{"partition_index": index, "replicas": target}]}
                ],
            },
        )

    def _admin_send(self, api_key: int, version: int, fields: dict[str, Any]) -> None:
        self._count(f"admin_{ApiKey(api_key).name.lower()}")
        node = self.sim.leader()
        if node is None:
            return
        request = make(request_schema(api_key, version), fields)
        self.sim.push_broker_event(
            self.sim.network.latency_ms(),
            ("deliver", node.id, node.incarnation, 0, api_key, version, request),
        )

    # -- transport -----------------------------------------------------------------------

    def _send(self, b: SimBroker, api_key: int, version: int, fields: dict[str, Any]) -> None:
        node = self.sim.leader()
        if node is None:
            return
        self._tokens += 1
        b.outstanding = self._tokens
        b.sent_at_ms = self.sim.now_ms
        request = make(request_schema(api_key, version), fields)
        self.sim.push_broker_event(
            self.sim.network.latency_ms(),
            ("deliver", node.id, node.incarnation, b.broker_id, api_key, version, request),
        )

    def _deliver(
        self,
        node_id: int,
        incarnation: int,
        broker_id: int,
        api_key: int,
        version: int,
        request: Any,
    ) -> None:
        node = self.sim.by_id[node_id]
        if node is None or node.core is None or node.incarnation != incarnation:
            return
        controller = node.controller
        assert controller is not None
        token = self._token_of(broker_id)

        def deliver(response: Response | None) -> None:
            if response is not None and broker_id:
                self.sim.push_broker_event(
                    self.sim.network.latency_ms(),
                    ("reply", broker_id, token, api_key, response),
                )

        try:
            controller.handle(node.core, api_key, version, request, self.sim.now_ms, deliver)
        except ApiError:
            return
        self.sim.after(node)

    def _token_of(self, broker_id: int) -> int:
        for b in self.brokers:
            if b.broker_id == broker_id:
                return b.outstanding
        return 0

    def _reply(self, broker_id: int, token: int, api_key: int, response: dict[str, Any]) -> None:
        b = next(x for x in self.brokers if x.broker_id == broker_id)
        if b.state == "down" or b.outstanding != token or token == 0:
            return
        b.outstanding = 0
        self._on_response(b, api_key, response)
