"""Prometheus alert rules for a pykraft cluster: the conditions that need an operator, over
the series the controllers serve (Kafka's names, so they hold for Kafka's controllers scraped
with the JMX exporter too, but for the ``pykraft_`` ones), rendered as a Prometheus rule file.

Theory of operation. Each rule names one condition, how long it must hold before it fires
(``for``), a severity (``critical``: the cluster cannot change its metadata or lost
partitions; ``warning``: it works but something is degrading) and a text that says what to
look at. ``tests/node/test_dashboard.py`` parses every expression as Prometheus would and
``tests/interop/test_kafka_broker.py`` checks that each series named is served.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

__all__ = ["RULES", "Rule", "rules_yaml"]

# The Prometheus job(s) scraping the controllers' metrics.port: edit to the deployment's.
JOB: Final = '{job=~"pykraft.*"}'


@dataclass(frozen=True)
class Rule:
    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str


def _s(name: str) -> str:
    return name + JOB


KC: Final = "kafka_controller_kafkacontroller_"
RAFT: Final = "kafka_server_raftmetrics_"

RULES: Final = (
    Rule(
        "KRaftNoActiveController",
        f"(sum({_s(KC + 'activecontrollercount')}) or vector(0)) != 1",
        "1m",
        "critical",
        "{{ $value }} active controllers",
        "No controller (or more than one) says it is active: metadata cannot change. "
        "Look at the raft state of each controller and at `pykraft cluster health`.",
    ),
    Rule(
        "KRaftNoLeaderKnown",
        f"{_s(RAFT + 'current_leader')} < 0",
        "1m",
        "critical",
        "{{ $labels.instance }} knows no quorum leader",
        "The node has not heard from a leader: it may be cut off, or the quorum has no "
        "majority (see /health/ready on each node).",
    ),
    Rule(
        "KRaftOfflinePartitions",
        f"max({_s(KC + 'offlinepartitionscount')}) > 0",
        "1m",
        "critical",
        "{{ $value }} partitions have no leader",
        "Partitions without a leader cannot be written or read. Check the brokers holding "
        "their replicas.",
    ),
    Rule(
        "KRaftVoterOffline",
        f"max({_s('pykraft_raft_number_of_offline_voters')}) > 0",
        "2m",
        "warning",
        "{{ $value }} voters are not fetching from the leader",
        "A voter has not fetched within controller.quorum.fetch.timeout.ms: one more failure "
        "may cost the quorum its majority. Do not restart another controller now.",
    ),
    Rule(
        "KRaftVoterLagging",
        f"scalar(max({_s(RAFT + 'high_watermark')})) - {_s(RAFT + 'high_watermark')} > 10000",
        "5m",
        "warning",
        "{{ $labels.instance }} is {{ $value }} records behind",
        "The node's high watermark stays far behind the cluster's: it cannot keep up.",
    ),
    Rule(
        "KRaftMetadataErrors",
        f"{_s(KC + 'metadataerrorcount')} > 0",
        "0m",
        "critical",
        "{{ $labels.instance }} could not apply {{ $value }} metadata records",
        "A record failed to replay: the node's image is incomplete and it will not lead. "
        "Its log names the record.",
    ),
    Rule(
        "KRaftFencedBrokers",
        f"max({_s(KC + 'fencedbrokercount')}) > 0",
        "5m",
        "warning",
        "{{ $value }} brokers are fenced",
        "Registered brokers that stopped heartbeating (or cannot catch up) lead nothing.",
    ),
    Rule(
        "KRaftEventQueueTimeHigh",
        'kafka_controller_controllereventmanager_eventqueuetimems{job=~"pykraft.*",'
        'quantile="0.99"} > 1000',
        "5m",
        "warning",
        "{{ $labels.instance }}: requests wait {{ $value }} ms (p99) to be processed",
        "The controller is saturated or its disk is slow (flushes hold writes back).",
    ),
    Rule(
        "KRaftHeartbeatsTimedOut",
        f"delta({_s(KC + 'timedoutbrokerheartbeatcount')}[5m]) > 0",
        "0m",
        "warning",
        "{{ $labels.instance }} let broker heartbeats time out",
        "Heartbeats waited past two heartbeat intervals: brokers may be fenced for it.",
    ),
    Rule(
        "PykraftEventLoopHeld",
        f"{_s('pykraft_event_loop_held_max_ms')} > 1000",
        "2m",
        "warning",
        "{{ $labels.instance }}'s event loop was held {{ $value }} ms",
        "Everything on the node waits while its loop is held; a voter held past the fetch "
        "timeout is taken for dead. Its log names the stack when "
        "pykraft.event.loop.stall.stack.ms is set.",
    ),
    Rule(
        "KRaftUncleanLeaderElection",
        f"increase({_s('kafka_controller_controllerstats_uncleanleaderelections_total')}[10m]) > 0",
        "0m",
        "warning",
        "{{ $labels.instance }} replayed an unclean leader election",
        "A partition was given a leader outside its ISR: acknowledged records may be lost.",
    ),
    Rule(
        "KRaftVoterChangeStuck",
        f"max({_s(RAFT + 'uncommitted_voter_change')}) == 1",
        "10m",
        "warning",
        "A voter change has not committed for 10 minutes",
        "An AddRaftVoter waits for the new voter to catch up, or the change cannot commit.",
    ),
    Rule(
        "KRaftSnapshotStale",
        f"min({_s('kafka_server_snapshotemitter_latestsnapshotgeneratedagems')}) > 7200000",
        "10m",
        "warning",
        "No metadata snapshot in two hours",
        "Snapshots bound the log and the time a node takes to start; see "
        "metadata.log.max.snapshot.interval.ms and the node's log.",
    ),
)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(text)


def rules_yaml() -> str:
    """The rule file Prometheus loads (``rule_files``)."""
    lines = ["# pykraft's alert rules (python -m pykraft.ops --write)", "groups:"]
    lines += ["  - name: pykraft", "    rules:"]
    for rule in RULES:
        lines += [
            f"      - alert: {rule.alert}",
            f"        expr: {_q(rule.expr)}",
            f"        for: {rule.for_}",
            "        labels:",
            f"          severity: {rule.severity}",
            "        annotations:",
            f"          summary: {_q(rule.summary)}",
            f"          description: {_q(rule.description)}",
        ]
    return "\n".join(lines) + "\n"
