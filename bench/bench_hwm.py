"""How soon observers learn a commit, with and without KIP-1166's HighWatermark in Fetch v18
(issue 46 item 6):

    .venv/bin/python bench/bench_hwm.py [--seeds 5] [--events 20000]
        [--out bench/results/hwm.json]

The real raft core in the deterministic simulator (profile ``none``: no faults; three voters,
two observers; ``fetch.max.wait.ms`` 500, the network's own latency; appends every 50 ms, then
every 500 ms as a quiet controller's NoOpRecords), simulated time. For
every committed offset: from the first moment any node knew it committed (the leader) until
each observer's high watermark covered it. Twice over the same seeds:

* ``v18`` (after): the observers send the high watermark they know, as Kafka 4.4's replicas
  and pykraft's do; a leader that committed more answers their Fetch at once;
* ``v17`` (before): the observers' Fetches carry no high watermark, as from a peer that speaks
  Fetch v17 or older (Kafka 3.x, 4.0-4.3 brokers); a Fetch with nothing new to read waits in
  the leader's purgatory for new records or ``fetch.max.wait.ms``.

Printed and written: p50, p99 and the maximum of that latency, in simulated milliseconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Callable
from pathlib import Path

from _common import publish
from pykraft.raft.messages import HIGH_WATERMARK_UNSUPPORTED, FetchRequest, Outbound
from pykraft.sim import SimConfig, Simulation
from pykraft.sim.node import SimNode

VOTERS = 3
OBSERVERS = 2
# The leader's appends: a busy log (the simulator's 50 ms), and a quiet controller's (its
# NoOpRecord every metadata.max.idle.interval.ms, 500 ms).
WORKLOADS_MS = (50, 500)


class Watch:
    """Each node's high watermark over time: ``first[node][k]`` = (hwm, time) when it rose."""

    def __init__(self) -> None:
        self.rises: dict[int, list[tuple[int, int]]] = {}

    def __call__(self, sim: Simulation, _event: int) -> None:
        for node in sim.nodes:
            if node.core is None:
                continue
            rises = self.rises.setdefault(node.id, [(0, 0)])
            if node.core.high_watermark > rises[-1][0]:
                rises.append((node.core.high_watermark, sim.now_ms))

    def latencies(self, observers: list[int]) -> list[int]:
        """Per committed offset and observer: the delay after the first node knew it."""
        committed: dict[int, int] = {}
        for rises in self.rises.values():
            previous = 0
            for hwm, at in rises:
                for offset in range(previous, hwm):
                    committed[offset] = min(committed.get(offset, at), at)
                previous = max(previous, hwm)
        out: list[int] = []
        for node in observers:
            previous = 0
            for hwm, at in self.rises.get(node, []):
                out.extend(at - committed[o] for o in range(previous, hwm) if o in committed)
                previous = max(previous, hwm)
        return out


def strip_observer_hwm(sim: Simulation, observers: set[int]) -> None:
    """The observers speak Fetch v17: no HighWatermark in their Fetches."""
    send: Callable[[SimNode, Outbound, int], None] = sim._send

    def send_v17(node: SimNode, out: Outbound, now_ms: int) -> None:
        if node.id in observers and type(out.body) is FetchRequest:
            body = dataclasses.replace(out.body, high_watermark=HIGH_WATERMARK_UNSUPPORTED)
            out = dataclasses.replace(out, body=body)
        send(node, out, now_ms)

    sim._send = send_v17  # type: ignore[method-assign]


def measure(seeds: int, events: int, v17: bool, interval_ms: int) -> list[int]:
    latencies: list[int] = []
    for seed in range(1, seeds + 1):
        watch = Watch()
        config = SimConfig.make(
            seed,
            "none",
            voters=VOTERS,
            observers=OBSERVERS,
            events=events,
            append_interval_ms=interval_ms,
            hook=watch,
        )
        sim = Simulation(config)
        observers = [n.id for n in sim.nodes if n.id > VOTERS]
        assert len(observers) == OBSERVERS
        if v17:
            strip_observer_hwm(sim, set(observers))
        result = sim.run()
        assert result.violation is None, result.summary()
        latencies.extend(watch.latencies(observers))
    return latencies


def summary(latencies: list[int]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "commits": len(ordered),
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[int(len(ordered) * 0.99)],
        "max_ms": ordered[-1],
        "mean_ms": round(statistics.fmean(ordered), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "hwm.json")
    args = parser.parse_args()
    result: dict[str, object] = {"bench": "hwm", "seeds": args.seeds, "events": args.events}
    for interval in WORKLOADS_MS:
        for name, v17 in (("v18", False), ("v17", True)):
            latencies = measure(args.seeds, args.events, v17, interval)
            result[f"appends every {interval} ms, {name} observers"] = summary(latencies)
    publish(result, args.out)


if __name__ == "__main__":
    main()
