"""Kafka 4.4's periodic elections timed on real brokers, pykraft's controller beside Kafka
4.4.0's in the same run (issue 46):

    .venv/bin/python bench/bench_duties.py [--repeat 3] [--out bench/results/duties.json]

The scenarios of ``pykraft.interop.duties`` (one controller, three Kafka 4.4.0 brokers, both
controllers checking every 5 s): ``balance_s``, from a cleanly stopped broker's start until
every partition is led by its first replica again (electPreferred); ``unclean_s``, from
``unclean.leader.election.enable=true`` on a leaderless partition's topic until its only live
replica leads (electUnclean). Both include the brokers' own time (restart, ISR catch-up,
metadata propagation), which is the same on both sides; the ratio is pykraft's mean over Kafka's (each time falls anywhere in one 5 s period of the
controller's timer, so single runs vary by that much).
pykraft runs Kafka's default quorum timeouts here, as Kafka does.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _common import publish
from pykraft.interop import duties
from pykraft.interop.kafka import KafkaDist


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "duties.json"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, dict[str, list[float]]] = {
        kind: {"balance_s": [], "unclean_s": []} for kind in ("kafka", "pykraft")
    }
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-duties-") as tmp:
            kafka, ours = duties.run_both(KafkaDist.get("4.4"), Path(tmp), {})
        assert ours.states == kafka.states, (ours.states, kafka.states)
        for run in (kafka, ours):
            times[run.kind]["balance_s"].append(round(run.balance_s, 2))
            times[run.kind]["unclean_s"].append(round(run.unclean_s, 2))
    means = {
        kind: {name: round(statistics.fmean(values), 2) for name, values in by.items()}
        for kind, by in times.items()
    }
    result: dict[str, object] = {
        "bench": "duties",
        "check_interval_s": duties.CHECK_S,
        "runs": times,
        "mean": means,
        "ratio": {
            name.removesuffix("_s"): round(means["pykraft"][name] / means["kafka"][name], 2)
            for name in ("balance_s", "unclean_s")
        },
    }
    publish(result, args.out)


if __name__ == "__main__":
    main()
