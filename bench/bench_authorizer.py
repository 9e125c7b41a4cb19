"""The authorizer at scale, pykraft's controller beside Apache Kafka 4.4.0's, same run (issue 45):

    .venv/bin/python bench/bench_authorizer.py [--sizes 10000,100000] [--topics 200]
        [--batch 500] [--kinds pykraft,kafka] [--out bench/results/authorizer.json]

For each implementation, one controller (a single-voter quorum: a real process, fsync) with
SASL_SSL + PLAIN and StandardAuthorizer (``interop/secure.py``; ``admin`` is a super user),
three brokers registered and kept unfenced by this script (``wl_cluster.SimBrokers``), and a
non-super user ``alice`` allowed to CREATE topics prefixed ``bench-``. Then, for each size in
``--sizes``, ascending (0: the baseline, no ACL but alice's):

1. **CreateAcls**: admin grows the stored ACLs to that size in CreateAcls requests of
   ``--batch`` ACLs each (for other users, on literal and prefixed topic and group names, the
   kind of set a multi-tenant cluster holds): seconds for the first 10,000 and ACLs/s.
2. **CreateTopics**: alice creates ``--topics`` topics (one partition each, RF 3) in one
   request: the time until it is answered (after its records committed), the median of
   ``--repeat`` such requests (each of new topics). Each topic is
   authorized on its own (Kafka's CREATE on TOPIC, then on CLUSTER), so before the index a
   check walked every ACL: 19.6 ms per check at 10,000 ACLs (issue 45).
3. **Memory**: pykraft's controller RSS, Kafka's heap in use after a full collection
   (``jcmd``), each less its value before the ACLs, per ACL stored.
4. **Loop**: for pykraft, the longest its event loop was held
   (``pykraft_event_loop_held_max_ever_ms``), and the stack of each stall over 100 ms (the
   watchdog, ``pykraft.event.loop.stall.stack.ms``) in the last row.

Prints one JSON line per (implementation, size), a Markdown table and the pykraft/Kafka ratios;
writes every row to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from bench_scale import (  # noqa: E402
    PYKRAFT_CONFIG,
    STALL_STACK,
    create_topics,
    kafka_heap_used_mb,
    rss_mb,
)
from pykraft.interop.cluster import LocalCluster  # noqa: E402
from pykraft.interop.kafka import KafkaDist  # noqa: E402
from pykraft.interop.secure import SecureSetup  # noqa: E402
from pykraft.net.client import Connection  # noqa: E402
from pykraft.net.security import ClientSecurity, SaslClientConfig, SecurityProtocol  # noqa: E402
from pykraft.net.tls import TlsSettings, client_context  # noqa: E402
from pykraft.protocol import ApiKey  # noqa: E402
from pykraft.protocol.apis import request_schema  # noqa: E402
from pykraft.protocol.build import make  # noqa: E402
from wl_cluster import SimBrokers  # noqa: E402

TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED = 3, 4
READ, WRITE, CREATE, DESCRIBE = 3, 4, 5, 8
ALLOW, DENY = 3, 2
PASSWORDS = {
    "controller": "controller-secret",
    "broker": "broker-secret",
    "admin": "admin-secret",
    "alice": "alice-secret",
}


def _security(setup: SecureSetup, user: str) -> ClientSecurity:
    context = client_context(
        TlsSettings(truststore_type="PEM", truststore_location=str(setup.ca.ca_pem))
    )
    return ClientSecurity(
        SecurityProtocol.SASL_SSL, context, SaslClientConfig("PLAIN", user, PASSWORDS[user])
    )


def _acl(i: int) -> dict[str, Any]:
    """The i-th filler ACL: for one of 1,000 users, on a literal topic, a prefixed topic or a
    literal group name of its own."""
    kind = i % 3
    return {
        "resource_type": GROUP if kind == 2 else TOPIC,
        "resource_name": f"tenant-{i}-" if kind == 1 else f"name-{i}",
        "resource_pattern_type": PREFIXED if kind == 1 else LITERAL,
        "principal": f"User:user-{i % 1000}",
        "host": "*",
        "operation": (READ, WRITE, DESCRIBE)[i % 3],
        "permission_type": DENY if i % 17 == 0 else ALLOW,
    }


async def _create_acls(conn: Connection, creations: list[dict[str, Any]]) -> None:
    m: Any = await conn.request(
        make(request_schema(ApiKey.CREATE_ACLS, 3), {"creations": creations}), timeout_ms=120_000
    )
    bad = [int(x.error_code) for x in m.results if int(x.error_code)]
    assert not bad, (bad[:3], m.results[0])


async def _create_topics(conn: Connection, names: list[str]) -> float:
    """Seconds until the CreateTopics of ``names`` (one partition each, RF 3) is answered;
    every topic must be created."""
    started = time.perf_counter()
    error = await create_topics(conn, names, 1)
    assert error == 0, error
    return time.perf_counter() - started


def _memory_mb(kind: str, pid: int) -> float:
    if kind == "kafka":
        used = kafka_heap_used_mb(pid)
        return -1.0 if used is None else used
    return rss_mb(pid)


async def _measure(
    kind: str, cluster: LocalCluster, setup: SecureSetup, args: argparse.Namespace
) -> list[dict[str, Any]]:
    server = cluster.controllers[0]
    assert server.process is not None
    pid = server.process.pid
    host, port = server.address.split(":")
    admin = await _open(host, int(port), _security(setup, "admin"))
    alice = await Connection.open(
        host, int(port), timeout_ms=10_000, security=_security(setup, "alice")
    )
    brokers = SimBrokers(cluster.cluster_id, 3)
    await brokers.register(admin)
    await brokers.beat_all(admin, measure=False)
    beating = asyncio.create_task(brokers.keep_alive(admin, 10_000, measure=False))
    rows: list[dict[str, Any]] = []
    try:
        await _create_acls(  # alice may create the bench's topics, nothing else
            admin,
            [
                {
                    "resource_type": TOPIC,
                    "resource_name": "bench-",
                    "resource_pattern_type": PREFIXED,
                    "principal": "User:alice",
                    "host": "*",
                    "operation": CREATE,
                    "permission_type": ALLOW,
                }
            ],
        )
        await _create_topics(alice, [f"bench-warm-{j}" for j in range(args.topics)])
        base_mb = _memory_mb(kind, pid)
        stored, first_10k_s = 0, None
        for size in sorted(args.sizes):
            started = time.perf_counter()
            grown = size - stored
            for i in range(stored, size, args.batch):
                await _create_acls(admin, [_acl(n) for n in range(i, min(size, i + args.batch))])
                if first_10k_s is None and i + args.batch >= 10_000:
                    first_10k_s = time.perf_counter() - started
            acls_s = time.perf_counter() - started
            stored = size
            times = [
                await _create_topics(alice, [f"bench-{size}-{k}-{j}" for j in range(args.topics)])
                for k in range(args.repeat)
            ]
            topics_s = statistics.median(times)
            mb = _memory_mb(kind, pid)
            row: dict[str, Any] = {
                "kind": kind,
                "acls": size,
                "create_acls_per_s": grown / acls_s if grown else None,
                "create_10k_acls_s": first_10k_s,
                "create_topics_s": topics_s,
                "create_topics_all_s": times,
                "memory_mb": mb,
                "bytes_per_acl": (mb - base_mb) * 1024 * 1024 / size if mb > 0 and size else None,
            }
            if kind == "pykraft":
                metrics = server.scrape()
                row["loop_held_max_ms"] = metrics.get("pykraft_event_loop_held_max_ever_ms")
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        beating.cancel()
        for conn in (admin, alice):
            conn.close()
            await conn.wait_closed()
    return rows


async def _open(host: str, port: int, security: ClientSecurity) -> Connection:
    """A connection once the single controller is active (it takes writes)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return await Connection.open(host, port, timeout_ms=10_000, security=security)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def run_kind(kind: str, args: argparse.Namespace, base: Path) -> list[dict[str, Any]]:
    setup = SecureSetup(base / f"certs-{kind}", passwords=dict(PASSWORDS))
    cluster = LocalCluster(
        KafkaDist.get("4.4"),
        base / kind,
        controllers=1,
        brokers=0,
        controller_kind=kind,
        controller_config=setup.controller_config() | (PYKRAFT_CONFIG if kind == "pykraft" else {}),
        metrics=True,
    )
    try:
        cluster.start()
        rows = asyncio.run(_measure(kind, cluster, setup, args))
    finally:
        cluster.kill()
    if kind == "pykraft" and rows:  # where the loop was held past 100 ms, if it was
        rows[-1]["loop_stalls"] = [
            {"late_ms": int(m[1]), "core_wait_ms": m[2], "at": m[3].rstrip().splitlines()[-8:]}
            for m in re.finditer(STALL_STACK, cluster.controllers[0].text())
        ]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| controller | ACLs | CreateAcls/s | 10k ACLs s | CreateTopics s | bytes/ACL | loop held ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        per_acl, ten_k, rate = (
            row["bytes_per_acl"],
            row["create_10k_acls_s"],
            row["create_acls_per_s"],
        )
        held = row.get("loop_held_max_ms")
        lines.append(
            f"| {row['kind']} | {row['acls']:,} | {'-' if rate is None else f'{rate:,.0f}'} | "
            f"{'-' if ten_k is None else f'{ten_k:.2f}'} | {row['create_topics_s']:.3f} | "
            f"{'-' if per_acl is None else f'{per_acl:,.0f}'} | "
            f"{'-' if held is None else f'{held:.0f}'} |"
        )
    by = {(r["kind"], r["acls"]): r for r in rows}
    for size in sorted({r["acls"] for r in rows}):
        p, k = by.get(("pykraft", size)), by.get(("kafka", size))
        if p and k:
            line = f"\npykraft/Kafka at {size:,} ACLs: CreateTopics {p['create_topics_s'] / k['create_topics_s']:.2f}x"
            if size:
                line += f", CreateAcls/s {p['create_acls_per_s'] / k['create_acls_per_s']:.2f}x"
            lines.append(line)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[0, 10_000, 100_000]
    )
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kinds", default="pykraft,kafka")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "authorizer.json")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-authorizer-") as tmp:
        for kind in args.kinds.split(","):
            rows += run_kind(kind, args, Path(tmp))
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
