"""What TLS and SASL cost a controller quorum, pykraft's beside Kafka 4.3.1's, same run:

    .venv/bin/python bench/bench_security.py [--writes 400] [--in-flight 16]
        [--handshakes 200] [--kinds pykraft,kafka]

For each controller implementation and each listener protocol (PLAINTEXT, and SASL_SSL with
PLAIN over TLS 1.3 as ``interop/secure.py`` sets it up, authorizer off so only the transport
differs), a three-controller quorum on 127.0.0.1 (real processes, fsync), then:

1. **Commit latency**: IncrementalAlterConfigs of a cluster-default broker config sent to the
   active controller one at a time; each is answered after its ConfigRecord committed on a
   majority. p50/p99 in ms.
2. **Commit throughput**: the same from ``--in-flight`` connections at once, one request
   outstanding on each (as Kafka's socket server serves a connection): writes/s.
3. **Handshakes/s**: connections opened one after another to the active controller, each
   complete (TCP, TLS, SaslHandshake + SaslAuthenticate, ApiVersions) and closed.

The report gives each figure, the SASL_SSL/PLAINTEXT ratio per implementation, and the
pykraft/Kafka ratio per protocol. Both run with their defaults: Kafka's
``controller.quorum.append.linger.ms`` is 25 ms, which sets its commit latency floor here.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from pykraft.admin import AdminClient  # noqa: E402
from pykraft.interop.cluster import LocalCluster  # noqa: E402
from pykraft.interop.kafka import KafkaDist  # noqa: E402
from pykraft.interop.secure import SecureSetup  # noqa: E402
from pykraft.net.client import Connection  # noqa: E402
from pykraft.net.security import (  # noqa: E402
    ClientSecurity,
    SaslClientConfig,
    SecurityProtocol,
)
from pykraft.net.tls import TlsSettings, client_context  # noqa: E402
from pykraft.protocol import ApiKey, ErrorCode  # noqa: E402
from pykraft.protocol.apis import request_schema  # noqa: E402
from pykraft.protocol.build import make  # noqa: E402

BROKER_RESOURCE = 4


def _alter(value: int) -> Any:
    return make(
        request_schema(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1),
        {
            "resources": [
                {
                    "resource_type": BROKER_RESOURCE,
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "log.retention.ms",
                            "config_operation": 0,
                            "value": str(86_400_000 + value),
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
    )


async def _active(cluster: LocalCluster, security: ClientSecurity | None) -> tuple[str, int]:
    deadline = time.monotonic() + 60
    while True:
        try:
            async with AdminClient(
                cluster.bootstrap_controllers,
                timeout_ms=10_000,
                request_timeout_ms=3_000,
                security=security,
            ) as admin:
                quorum = await admin.describe_quorum()
            if quorum.leader_id > 0:
                leader = next(c for c in cluster.controllers if c.node_id == quorum.leader_id)
                return "127.0.0.1", leader.port
        except Exception:
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.5)


async def _settled(cluster: LocalCluster, security: ClientSecurity | None) -> tuple[str, int]:
    """The active controller once a write there succeeds (a young quorum may still move
    its leadership: NOT_CONTROLLER, try again)."""
    for _ in range(30):
        address = await _active(cluster, security)
        conn = await Connection.open(*address, timeout_ms=10_000, security=security)
        try:
            answer: Any = await conn.request(_alter(0), timeout_ms=30_000)
        finally:
            conn.close()
            await conn.wait_closed()
        if answer.responses[0].error_code == ErrorCode.none:
            return address
        await asyncio.sleep(1)
    raise RuntimeError("no active controller took a write")


async def _measure(
    address: tuple[str, int],
    security: ClientSecurity | None,
    writes: int,
    in_flight: int,
    handshakes: int,
) -> dict[str, float]:
    conn = await Connection.open(*address, timeout_ms=10_000, security=security)
    try:
        for i in range(20):  # warm-up: the first writes pay for imports and JIT
            answer: Any = await conn.request(_alter(i), timeout_ms=30_000)
            assert answer.responses[0].error_code == ErrorCode.none, answer
        latencies = []
        for i in range(writes):
            started = time.perf_counter()
            answer = await conn.request(_alter(1000 + i), timeout_ms=30_000)
            latencies.append((time.perf_counter() - started) * 1000)
            assert answer.responses[0].error_code == ErrorCode.none, answer
    finally:
        conn.close()
        await conn.wait_closed()
    counter = iter(range(writes * 4))
    # One connection per writer, one request at a time on each (Kafka's socket server reads
    # a connection's next request only after answering the last, as its clients expect).
    writers = [
        await Connection.open(*address, timeout_ms=10_000, security=security)
        for _ in range(in_flight)
    ]

    async def worker(c: Connection) -> int:
        done = 0
        for i in counter:
            reply: Any = await c.request(_alter(100_000 + i), timeout_ms=30_000)
            assert reply.responses[0].error_code == ErrorCode.none, reply
            done += 1
        return done

    try:
        started = time.perf_counter()
        total = sum(await asyncio.gather(*(worker(c) for c in writers)))
        throughput = total / (time.perf_counter() - started)
    finally:
        for c in writers:
            c.close()
            await c.wait_closed()
    started = time.perf_counter()
    for _ in range(handshakes):
        c = await Connection.open(*address, timeout_ms=10_000, security=security)
        c.close()
        await c.wait_closed()
    rate = handshakes / (time.perf_counter() - started)
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "commit_p50_ms": statistics.median(latencies),
        "commit_p99_ms": quantiles[98],
        "writes_per_s": throughput,
        "handshakes_per_s": rate,
    }


def _client(setup: SecureSetup) -> ClientSecurity:
    context = client_context(
        TlsSettings(truststore_type="PEM", truststore_location=str(setup.ca.ca_pem))
    )
    sasl = SaslClientConfig("PLAIN", "admin", setup.passwords["admin"])
    return ClientSecurity(SecurityProtocol.SASL_SSL, context, sasl)


def run_case(kind: str, secure: bool, args: argparse.Namespace, base: Path) -> dict[str, float]:
    dist = KafkaDist.get("4")
    setup = SecureSetup(base / "certs-setup", authorizer=False) if secure else None
    cluster = LocalCluster(
        dist,
        base / f"{kind}-{'secure' if secure else 'plain'}",
        controllers=3,
        brokers=0,
        controller_kind=kind,
        controller_config=setup.controller_config() if setup is not None else {},
        metrics=False,
    )
    security = _client(setup) if setup is not None else None
    try:
        cluster.start()
        address = asyncio.run(_settled(cluster, security))
        return asyncio.run(
            _measure(address, security, args.writes, args.in_flight, args.handshakes)
        )
    finally:
        cluster.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--handshakes", type=int, default=200)
    parser.add_argument("--kinds", default="pykraft,kafka")
    args = parser.parse_args()
    results: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-security-") as tmp:
        for kind in args.kinds.split(","):
            for secure in (False, True):
                protocol = "SASL_SSL" if secure else "PLAINTEXT"
                results[(kind, protocol)] = run_case(kind, secure, args, Path(tmp))
                print(kind, protocol, _fmt(results[(kind, protocol)]), flush=True)
    print()
    print("| controllers | listener | commit p50 ms | commit p99 ms | writes/s | handshakes/s |")
    print("|---|---|---|---|---|---|")
    for (kind, protocol), r in results.items():
        print(
            f"| {kind} | {protocol} | {r['commit_p50_ms']:.2f} | {r['commit_p99_ms']:.2f} | "
            f"{r['writes_per_s']:,.0f} | {r['handshakes_per_s']:,.0f} |"
        )
    print()
    kinds = args.kinds.split(",")
    for kind in kinds:
        plain, tls = results[(kind, "PLAINTEXT")], results[(kind, "SASL_SSL")]
        print(
            f"{kind}: SASL_SSL/PLAINTEXT commit p50 {tls['commit_p50_ms'] / plain['commit_p50_ms']:.2f}x, "
            f"writes/s {tls['writes_per_s'] / plain['writes_per_s']:.2f}x, "
            f"handshakes/s {tls['handshakes_per_s'] / plain['handshakes_per_s']:.2f}x"
        )
    if "pykraft" in kinds and "kafka" in kinds:
        for protocol in ("PLAINTEXT", "SASL_SSL"):
            p, k = results[("pykraft", protocol)], results[("kafka", protocol)]
            print(
                f"pykraft/kafka {protocol}: commit p50 {p['commit_p50_ms'] / k['commit_p50_ms']:.2f}x, "
                f"writes/s {p['writes_per_s'] / k['writes_per_s']:.2f}x, "
                f"handshakes/s {p['handshakes_per_s'] / k['handshakes_per_s']:.2f}x"
            )
    return 0


def _fmt(r: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:,.2f}" for k, v in r.items())


if __name__ == "__main__":
    sys.exit(main())
