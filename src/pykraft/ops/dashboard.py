"""The Grafana dashboard of a pykraft cluster, as data: rows of panels, each panel one or more
PromQL queries over the series the controllers serve (Kafka's names as the Prometheus JMX
exporter gives them, ``docs/kafka/CONTROLLER-METRICS.md``, and pykraft's own ``pykraft_``
extras), rendered to the JSON Grafana imports.

Theory of operation. Every query selects the dashboard's ``$job`` (the Prometheus job that
scrapes the controllers' ``metrics.port``); a per-node series is told apart by Prometheus'
``instance`` label. Counts every controller keeps from the replayed image (topics,
partitions, brokers) are shown as the largest over the nodes; the active controller's own
(ActiveControllerCount) as their sum. ``tests/node/test_dashboard.py`` parses every query
and ``tests/interop/test_kafka_broker.py`` checks that each series it names is served by a
running cluster with a Kafka broker, so a renamed metric breaks a test, not a dashboard.
Because the names are Kafka's, the same dashboard reads Kafka's own controllers scraped
with the exporter (but for the ``pykraft_`` panels).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

__all__ = ["ROWS", "Panel", "dashboard_json", "queries"]

UID: Final = "pykraft-controllers"
JOB: Final = '{job=~"$job"}'
JOB_AND: Final = 'job=~"$job",'
KC: Final = "kafka_controller_kafkacontroller_"
RAFT: Final = "kafka_server_raftmetrics_"
EVENTS: Final = "kafka_controller_controllereventmanager_"
LOADER: Final = "kafka_server_metadataloader_"
SOCKET: Final = "kafka_server_socket_server_metrics_"


def s(name: str, labels: str = "") -> str:
    """The series ``name`` of the dashboard's job (with more ``labels`` matchers)."""
    return f"{name}{{{JOB_AND}{labels}}}" if labels else name + JOB


@dataclass(frozen=True)
class Panel:
    title: str
    targets: tuple[tuple[str, str], ...]  # (PromQL, legend)
    unit: str = "short"
    stat: bool = False  # a single number rather than a graph
    description: str = ""


def _one(title: str, expr: str, description: str, unit: str = "short") -> Panel:
    return Panel(title, ((expr, ""),), unit, True, description)


def _per_node(title: str, name: str, unit: str = "short", description: str = "") -> Panel:
    return Panel(title, ((s(name), "{{instance}}"),), unit, False, description)


def _avg_max(title: str, name: str) -> Panel:
    """A raft-metrics latency: its ``-avg`` and ``-max`` (a counter to the exporter)."""
    targets = ((s(name + "_avg"), "{{instance}} avg"), (s(name + "_max_total"), "{{instance}} max"))
    return Panel(title, targets, "ms")


QUORUM: Final = (
    _one(
        "Active controllers",
        f"sum({s(KC + 'activecontrollercount')})",
        "Controllers that say they are active: 1 in a working cluster.",
    ),
    _one("Leader", f"max({s(RAFT + 'current_leader')})", "The quorum's leader (-1: none)."),
    _one("Epoch", f"max({s(RAFT + 'current_epoch')})", "The quorum's epoch."),
    _one("Voters", f"max({s(RAFT + 'number_of_voters')})", "Voters in the quorum."),
    _one(
        "Offline voters",
        f"max({s('pykraft_raft_number_of_offline_voters')})",
        "Voters that did not fetch from the leader within the fetch timeout.",
    ),
    _one(
        "Observers",
        f"max({s(RAFT + 'number_of_observers')})",
        "Observers (brokers) fetching from the leader.",
    ),
    Panel(
        "Raft state",
        ((f"{s(RAFT + 'current_state')} == 1", "{{instance}} {{current_state}}"),),
        description="Each node's state: leader, follower, candidate, prospective, ...",
    ),
    Panel(
        "High watermark behind the highest",
        (
            (
                f"scalar(max({s(RAFT + 'high_watermark')})) - {s(RAFT + 'high_watermark')}",
                "{{instance}}",
            ),
        ),
        description="Records each node's high watermark is behind the cluster's highest.",
    ),
    _avg_max("Commit latency", RAFT + "commit_latency"),
    _avg_max("Election latency", RAFT + "election_latency"),
    Panel(
        "Records appended and fetched",
        (
            (s(RAFT + "append_records_rate"), "{{instance}} append"),
            (s(RAFT + "fetch_records_rate"), "{{instance}} fetch"),
        ),
        "rps",
    ),
    Panel(
        "Voter changes",
        (
            (s(RAFT + "uncommitted_voter_change"), "{{instance}} uncommitted"),
            (s(RAFT + "number_unknown_voter_connections"), "{{instance}} unknown endpoints"),
        ),
    ),
    Panel(
        "New active controllers",
        ((f"delta({s(KC + 'newactivecontrollerscount')}[5m])", "{{instance}}"),),
        description="Leaders of the quorum each node saw elected in five minutes.",
    ),
)

CONTROLLER: Final = (
    _one("Topics", f"max({s(KC + 'globaltopiccount')})", "Topics in the metadata."),
    _one("Partitions", f"max({s(KC + 'globalpartitioncount')})", "Partitions."),
    _one(
        "Offline partitions",
        f"max({s(KC + 'offlinepartitionscount')})",
        "Partitions without a leader.",
    ),
    _one(
        "Preferred replica imbalance",
        f"max({s(KC + 'preferredreplicaimbalancecount')})",
        "Partitions not led by their first replica.",
    ),
    _one(
        "Metadata errors",
        f"sum({s(KC + 'metadataerrorcount')})",
        "Records a controller could not apply.",
    ),
    _one(
        "metadata.version",
        f"max({s(LOADER + 'currentmetadataversion')})",
        "The finalized metadata.version level.",
    ),
    Panel(
        "Applied and committed offsets",
        (
            (s(KC + "lastappliedrecordoffset"), "{{instance}} applied"),
            (s(KC + "lastcommittedrecordoffset"), "{{instance}} committed"),
        ),
    ),
    _per_node(
        "Last applied record lag",
        KC + "lastappliedrecordlagms",
        "ms",
        "Since the append time of the last batch each controller applied.",
    ),
    Panel(
        "Event queue time (p99)",
        (
            (s(EVENTS + "eventqueuetimems", 'quantile="0.99"'), "{{instance}} queued"),
            (s(EVENTS + "eventqueueprocessingtimems", 'quantile="0.99"'), "{{instance}} processed"),
        ),
        "ms",
    ),
    Panel(
        "Controller events",
        (
            (f"rate({s(EVENTS + 'eventqueueprocessingtimems_count_total')}[5m])", "{{instance}}"),
            (f"delta({s(KC + 'eventqueueoperationstimedoutcount')}[5m])", "{{instance}} timed out"),
        ),
        "ops",
    ),
    Panel(
        "Idle ratio",
        (
            (s(EVENTS + "avgidleratio"), "{{instance}} controller"),
            (s(RAFT + "poll_idle_ratio_avg"), "{{instance}} raft"),
        ),
        "percentunit",
    ),
    Panel(
        "Elections",
        (
            (
                f"sum(rate({s('kafka_controller_controllerstats_uncleanleaderelections_total')}[5m]))",
                "unclean",
            ),
            (
                f"sum(rate({s('kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total')}[5m]))",
                "from ELR",
            ),
        ),
        "ops",
    ),
    Panel(
        "ZooKeeper migration",
        (
            (s(KC + "zkmigrationstate"), "{{instance}} state"),
            (s(KC + "zkwritebehindlag"), "{{instance}} write-behind lag"),
        ),
    ),
)

BROKERS: Final = (
    _one("Active brokers", f"max({s(KC + 'activebrokercount')})", "Unfenced brokers."),
    _one("Fenced brokers", f"max({s(KC + 'fencedbrokercount')})", "Fenced brokers."),
    _one(
        "In controlled shutdown",
        f"max({s(KC + 'controlledshutdownbrokercount')})",
        "Brokers in controlled shutdown.",
    ),
    Panel(
        "Broker registration state",
        ((f"max by (broker) ({s(KC + 'brokerregistrationstate')})", "broker {{broker}}"),),
        description="10 fenced, 20 in controlled shutdown, 30 active.",
    ),
    Panel(
        "Time since last heartbeat",
        ((f"max by (broker) ({s(KC + 'timesincelastheartbeatreceivedms')})", "broker {{broker}}"),),
        "ms",
        description="As the active controller saw each broker's heartbeats.",
    ),
    _per_node("Timed-out heartbeats", KC + "timedoutbrokerheartbeatcount"),
)

NODE: Final = (
    Panel(
        "Event loop held",
        (
            (s("pykraft_event_loop_held_max_ms"), "{{instance}} held"),
            (s("pykraft_event_loop_lag_max_ms"), "{{instance}} lag"),
        ),
        "ms",
        description="The longest each node's loop was held in the last minute.",
    ),
    Panel("CPU", ((f"rate({s('process_cpu_seconds_total')}[5m])", "{{instance}}"),), "percentunit"),
    _per_node("Memory", "process_resident_memory_bytes", "bytes"),
    _per_node("Open files", "process_open_fds"),
    _per_node("Log end offset", RAFT + "log_end_offset"),
    _per_node("Snapshot age", "kafka_server_snapshotemitter_latestsnapshotgeneratedagems", "ms"),
    _per_node(
        "Snapshot size", "kafka_server_snapshotemitter_latestsnapshotgeneratedbytes", "bytes"
    ),
    _per_node("Snapshots loaded", LOADER + "handleloadsnapshotcount"),
)

SECURITY: Final = (
    Panel(
        "Authentications",
        (
            (
                f"sum by (instance) (rate({s(SOCKET + 'successful_authentication_total')}[5m]))",
                "{{instance}} ok",
            ),
            (
                f"sum by (instance) (rate({s(SOCKET + 'failed_authentication_total')}[5m]))",
                "{{instance}} failed",
            ),
        ),
        "ops",
    ),
    Panel(
        "Re-authentications",
        (
            (
                f"sum by (instance) (rate({s(SOCKET + 'successful_reauthentication_total')}[5m]))",
                "{{instance}} ok",
            ),
            (
                f"sum by (instance) (rate({s(SOCKET + 'failed_reauthentication_total')}[5m]))",
                "{{instance}} failed",
            ),
        ),
        "ops",
    ),
)

ROWS: Final = (
    ("Quorum", QUORUM),
    ("Controller", CONTROLLER),
    ("Brokers as the controller sees them", BROKERS),
    ("Nodes, event loop and snapshots", NODE),
    ("Security", SECURITY),
)


def queries() -> list[str]:
    """Every PromQL query of the dashboard."""
    return [expr for _, panels in ROWS for panel in panels for expr, _ in panel.targets]


def _panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, object]:
    width = 4 if panel.stat else 8
    return {
        "id": panel_id,
        "type": "stat" if panel.stat else "timeseries",
        "title": panel.title,
        "description": panel.description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 4 if panel.stat else 8, "w": width, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "targets": [
            {
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": expr,
                "legendFormat": legend,
                "refId": chr(ord("A") + i),
            }
            for i, (expr, legend) in enumerate(panel.targets)
        ],
    }


def _layout() -> list[dict[str, object]]:
    """Rows, then their panels left to right, wrapping at Grafana's 24 columns."""
    out: list[dict[str, object]] = []
    y, panel_id = 0, 1
    for title, panels in ROWS:
        out.append(
            {
                "id": panel_id,
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                "panels": [],
            }
        )
        panel_id, y, x, height = panel_id + 1, y + 1, 0, 0
        for panel in panels:
            item = _panel_json(panel, panel_id, x, y)
            grid = item["gridPos"]
            assert isinstance(grid, dict)
            if x + grid["w"] > 24:
                x, y, height = 0, y + height, 0
                grid["x"], grid["y"] = x, y
            out.append(item)
            x, height, panel_id = x + grid["w"], max(height, grid["h"]), panel_id + 1
        y += height
    return out


def dashboard_json() -> str:
    """The dashboard as Grafana imports it (stable: sorted keys, two-space indent)."""
    variables = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
        {
            "name": "job",
            "type": "query",
            "label": "Job",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": "label_values(kafka_server_raftmetrics_current_leader, job)",
            "refresh": 2,
            "includeAll": True,
            "multi": True,
        },
    ]
    board = {
        "uid": UID,
        "title": "pykraft controllers",
        "description": "A KRaft controller quorum (pykraft's or Kafka's) and its brokers as the controllers see them.",
        "tags": ["kafka", "kraft", "pykraft"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": variables},
        "panels": _layout(),
    }
    return json.dumps(board, indent=2, sort_keys=True) + "\n"
