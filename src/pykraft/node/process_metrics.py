"""The node-wide series Kafka's controller serves beside its controller metrics, under the
exporter names of ``node/metrics.py``'s docstring: the metadata log (``kafka.log:type=Log``
of ``__cluster_metadata``-0 and ``LogFlushStats``), the listener (``kafka.network``'s
SocketServer, RequestChannel, Processor and Acceptor, socket-server-metrics' connection count),
the request handler pool's idleness and the raft client's channel (raft-channel-metrics).

Theory of operation. Where pykraft is built otherwise than Kafka, each figure keeps Kafka's
meaning on pykraft's structure: one event loop reads the sockets, handles the requests and
runs the quorum, so the network processor's and the request handlers' idle shares are the
loop thread's (``node/loop_lag.py``'s IdleRatio: the figure for processor "0", the only one);
there is no queue between network and handler threads (a request is handled as it is read),
so the request and response queues are 0, as Kafka's are when idle; there is no memory pool
(Kafka's default ``queued.max.request.bytes`` -1: available Long.MAX_VALUE, used 0); the
acceptor is blocked while connections wait for a slot (``net/connection_quotas.py``). The
metadata log's RetentionSizeInPercent is 0 as Kafka's: its retention is by snapshots
(``metadata.max.retention.*``), not ``retention.bytes``.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pykraft.net.client import ChannelStats
from pykraft.net.server import KafkaServer
from pykraft.node.flush import Flusher
from pykraft.node.loop_lag import LoopLag
from pykraft.node.metrics import authentication_metrics
from pykraft.storage.log import FileLog

__all__ = ["process_families"]

LONG_MAX = 2**63 - 1
METADATA = ("0", "__cluster_metadata")  # (partition, topic) of the metadata log


def _one(name: str, doc: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _log(log: FileLog, flusher: Flusher) -> list[Metric]:
    where = {"partition": METADATA[0], "topic": METADATA[1]}
    segments = log.segments()
    out: list[Metric] = [
        _one("kafka_log_log_logendoffset", "LogEndOffset", log.end_offset, **where),
        _one("kafka_log_log_logstartoffset", "LogStartOffset", log.start_offset, **where),
        _one("kafka_log_log_numlogsegments", "NumLogSegments", len(segments), **where),
        _one("kafka_log_log_size", "Size (bytes)", sum(s[2] for s in segments), **where),
        _one("kafka_log_log_retentionsizeinpercent", "RetentionSizeInPercent", 0.0, **where),
    ]
    flushes = GaugeMetricFamily(
        "kafka_log_logflushstats_logflushrateandtimems",
        "LogFlushRateAndTimeMs: the last 1028 flushes (ms)",
        labels=["quantile"],
    )
    for label, value in flusher.times_ms.quantiles():
        flushes.add_metric([label], value)
    count = CounterMetricFamily(
        "kafka_log_logflushstats_logflushrateandtimems_count",
        "flushes",
        value=flusher.times_ms.count,
    )
    return [*out, flushes, count]


def _idle(lag: LoopLag) -> list[Metric]:
    """The network processor's and the request handlers' idleness: the loop's."""
    idle, idle_ns = lag.idle.ratio(), float(lag.idle.idle_ns())
    out: list[Metric] = [
        _one("kafka_network_processor_idle_percent", "IdlePercent", idle, networkProcessor="0"),
        GaugeMetricFamily(
            "kafka_network_socketserver_networkprocessoravgidle_percent",
            "NetworkProcessorAvgIdlePercent",
            value=idle,
        ),
    ]
    pool = "kafka_server_kafkarequesthandlerpool_"
    for which in ("requesthandleravgidle", "controllerrequesthandleravgidle"):
        out.append(GaugeMetricFamily(pool + which + "_percent", which + " (share)", value=idle))
        out.append(
            CounterMetricFamily(
                pool + which + "percent_count", which + " meter: idle ns", value=idle_ns
            )
        )
    return out


def _listener(server: KafkaServer, lag: LoopLag) -> list[Metric]:
    return [
        _one(
            "kafka_server_socket_server_metrics_connection_count",
            "connection-count",
            len(server.connections),
            listener=server.listener_name,
            networkProcessor="0",
        ),
        *_idle(lag),
        GaugeMetricFamily(
            "kafka_network_requestchannel_requestqueuesize", "RequestQueueSize", value=0.0
        ),
        GaugeMetricFamily(
            "kafka_network_requestchannel_responsequeuesize", "ResponseQueueSize", value=0.0
        ),
        _one(
            "kafka_network_requestchannel_responsequeuesize",
            "ResponseQueueSize",
            0.0,
            processor="0",
        ),
        GaugeMetricFamily(
            "kafka_network_socketserver_expiredconnectionskilledcount",
            "ExpiredConnectionsKilledCount",
            value=server.stats.expired_connections_killed_count,
        ),
        GaugeMetricFamily(
            "kafka_network_socketserver_memorypoolavailable",
            "MemoryPoolAvailable",
            value=float(LONG_MAX),
        ),
        GaugeMetricFamily("kafka_network_socketserver_memorypoolused", "MemoryPoolUsed", value=0.0),
        _blocked(server),
    ]


def _blocked(server: KafkaServer) -> Metric:
    blocked = CounterMetricFamily(
        "kafka_network_acceptor_acceptorblockedpercent_count",
        "AcceptorBlockedPercent meter: ns connections waited for a slot",
        labels=["listener"],
    )
    blocked.add_metric([server.listener_name], server.gate.blocked_ns)
    return blocked


def process_families(
    server: KafkaServer | None,
    log: FileLog | None,
    flusher: Flusher,
    lag: LoopLag,
    channels: ChannelStats,
) -> list[Metric | tuple[str, str, float]]:
    """Everything of this module's docstring, with the authentication counts and the loop's
    own figures."""
    out: list[Metric | tuple[str, str, float]] = [*lag.metrics()]
    if server is not None:
        out += authentication_metrics(server.stats)
        out += _listener(server, lag)
    if log is not None:
        out += _log(log, flusher)
    raft = "kafka_server_raftchannelmetrics_"
    out += [
        CounterMetricFamily(raft + "request", "request-total", value=channels.requests),
        CounterMetricFamily(raft + "response", "response-total", value=channels.responses),
        CounterMetricFamily(
            raft + "outgoing_byte", "outgoing-byte-total", value=channels.bytes_out
        ),
        CounterMetricFamily(raft + "incoming_byte", "incoming-byte-total", value=channels.bytes_in),
    ]
    return out
