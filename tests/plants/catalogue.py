"""The catalogue of planted bugs (``tests/plants/README.md``): each bug, the check that
catches it and how soon, measured.

    .venv/bin/python -m tests.plants.catalogue           # print the table
    .venv/bin/python -m tests.plants.catalogue --write   # rewrite docs/PLANTED-BUGS.md

A simulator plant runs ``pykraft dev sim run`` in a process whose ``PYTHONPATH`` starts with
the plant's directory, on the interpreted core (``PYKRAFT_NATIVE=0``: the compiled core's
functions call each other directly, so a replaced function would never be reached). The
simulator is deterministic, so the event at which the violation is raised is the same on
every machine and the table can be checked (``tests/sim/test_planted_bugs.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

PLANTS_DIR: Final = Path(__file__).resolve().parent
DOC: Final = PLANTS_DIR.parents[1] / "docs" / "PLANTED-BUGS.md"


@dataclass(frozen=True)
class SimPlant:
    name: str  # its directory under tests/plants
    bug: str
    invariant: str  # the simulator invariant that must catch it
    seed: int
    profile: str
    voters: int
    events: int  # the run's budget of fault-phase events
    observers: int = 1  # (the simulator's default)
    # The simulator invariant that caught it (at the same or a later event) before the trace
    # checker's log rules stopped the run first: the state check still guards the rule.
    state_check: str = ""

    def run(self, planted: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYKRAFT_NATIVE": "0"}
        if planted:
            env["PYTHONPATH"] = str(PLANTS_DIR / self.name)
        argv = [sys.executable, "-m", "pykraft.cli.main", "dev", "sim", "run"]
        argv += ["--seed", str(self.seed), "--profile", self.profile]
        argv += ["--voters", str(self.voters), "--observers", str(self.observers)]
        argv += ["--events", str(self.events)]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)

    def caught_at(self) -> int | None:
        """The event the invariant was raised at, None if the run passed or failed otherwise."""
        found = re.search(
            rf"^VIOLATION {re.escape(self.invariant)} at t=\d+ ms, event (\d+)",
            self.run().stdout,
            re.M,
        )
        return None if found is None else int(found[1])


SIM_PLANTS: tuple[SimPlant, ...] = (
    SimPlant(
        "hwm_without_majority",
        "the leader moves the high watermark to its own flushed log end, counting no follower",
        "spec:hwm-majority",
        seed=1,
        profile="partitions",
        voters=3,
        events=20_000,
        state_check="hwm-majority",
    ),
    SimPlant(
        "hwm_before_epoch_start",
        "a new leader commits through a majority before any record of its own epoch is replicated",
        "spec:hwm-in-leader-epoch",
        seed=4,
        profile="lossy",
        voters=3,
        events=20_000,
        state_check="leader-hwm-current-epoch",
    ),
    SimPlant(
        "majority_off_by_one",
        "an election or a commit needs half of the voters, not a majority",
        "spec:hwm-majority",
        seed=1,
        profile="chaos",
        voters=4,
        events=20_000,
        state_check="hwm-majority",
    ),
    SimPlant(
        "auto_join_after_removal",
        "an auto-joining controller forgets it was a voter: removed, it adds itself back "
        "(KAFKA-19850)",
        "no-auto-join-after-removal",
        seed=5,
        profile="upgrade",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "voter_change_before_epoch_commit",
        "a new leader changes the voter set before a record of its own epoch is committed",
        "spec:voter-change-after-commit",
        seed=2,
        profile="membership",
        voters=3,
        events=20_000,
        state_check="voter-change-after-epoch-commit",
    ),
    SimPlant(
        "vote_twice",
        "an unattached voter that voted in this epoch grants another candidate its vote too",
        "spec:one-leader-named-per-epoch",  # (one-leader-per-epoch: the same event)
        seed=3,
        profile="chaos",
        voters=5,
        events=20_000,
    ),
)
SIM_PLANTS += (
    SimPlant(
        "fence_keeps_leaders",
        "fencing a broker moves none of its leaderships and leaves it in every ISR",
        "fenced-leads-nothing",
        seed=1,
        profile="controller",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "topic_without_partition_0",
        "CreateTopics and CreatePartitions leave out the lowest new partition's record",
        "topic-all-or-nothing",
        seed=1,
        profile="controller",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "elect_outside_isr",
        "AlterPartition's ISR shrink makes a replica it removed the leader",
        "image-structure",  # the replayed image's rule: a leader is in its ISR
        seed=1,
        profile="controller",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "vote_for_stale_log",
        "a voter grants its vote without comparing logs: a candidate behind the committed log "
        "can win",
        "spec:leader-has-committed",
        seed=3,
        profile="partitions",
        voters=3,
        events=20_000,
        state_check="leader-completeness",
    ),
    SimPlant(
        "removed_leader_counts_itself",
        "a leader that removed itself from the voter set still counts its own log toward the "
        "high watermark",
        "spec:hwm-majority",
        seed=3,
        profile="membership",
        voters=3,
        events=20_000,
        state_check="removed-leader-not-counted",
    ),
    SimPlant(
        "steps_ignore_partition_limit",
        "KIP-435's batches ignore reassignment.parallel.partition.count: every moving "
        "partition steps at once",
        "reassignment-limits",
        seed=2,
        profile="controller",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "silent_unclean_election",
        "with no ISR or ELR member able to lead, any live replica is elected, called clean",
        "leader-from-isr-or-elr",
        seed=4,
        profile="controller",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "prospective_bumps_epoch",
        "pre-votes are asked at a bumped epoch, and the core's own transition table widened to "
        "allow it (no safety invariant breaks)",
        "spec:prospective-keeps-epoch",
        seed=1,
        profile="crashes",
        voters=3,
        events=20_000,
    ),
    SimPlant(
        "seed_by_log_end_offset",
        "the recovery of a lost majority seeds from the longest log, not the highest last epoch",
        "recovery-seed-holds-committed",
        seed=34,
        profile="majority-loss",
        voters=5,
        events=20_000,
        observers=2,
    ),
    SimPlant(
        "standalone_epoch_from_seed_alone",
        "force-standalone's new epoch is one above the seed's, not above every survivor's",
        "recovery-epoch-above-survivors",
        seed=4,
        profile="majority-loss",
        voters=3,
        events=20_000,
        observers=2,
    ),
)
# Planted in real processes: (directory, bug, the check, the test that runs it and its budget).
FAULT_RUN_PLANTS: Final = (
    (
        "elect_outside_isr",
        "AlterPartition's ISR shrink makes a replica it removed the leader",
        "fault run with 3 Kafka brokers: the broker-side checker's elections outside the ISR",
        "tests/faults/test_broker_fault_run.py::"
        "test_the_checker_catches_a_controller_that_elects_outside_the_isr",
        "one 15 s run",
    ),
    (
        "config_of_absent_topic",
        "IncrementalAlterConfigs accepted for a topic that does not exist (a deleted topic's "
        "config set, inherited by the next topic of its name)",
        "fault run with 3 Kafka brokers: the metadata clients' history checked for "
        "linearizability (Porcupine)",
        "tests/faults/test_broker_fault_run.py::"
        "test_the_history_check_catches_a_controller_that_configures_absent_topics",
        "one 15 s run",
    ),
)

# Planted in-process and caught by a test (same fields).
TEST_PLANTS: Final = (
    (
        "dual_write_skips_configs",
        "the ZooKeeper migration's dual write leaves out a config change made without a change "
        "to its topic",
        "the dual write's delta path compared with a full reconciliation of ZooKeeper",
        "tests/migration/test_planted_dual_write.py::"
        "test_the_comparison_catches_a_skipped_config_dual_write",
        "seed 2 (3 of the first 10 seeds)",
    ),
)


def _check_kind(invariant: str) -> str:
    if invariant.startswith("spec:"):
        return "the trace checker's rule (pykraft.spec)"
    return "simulator invariant"


def row(plant: SimPlant, at: int | None) -> str:
    """The plant's line of the table, caught at event ``at`` (None: not caught)."""
    soon = "NOT CAUGHT" if at is None else f"event {at:,} of {plant.events:,}"
    return (
        f"| `{plant.name}`: {plant.bug} | {_check_kind(plant.invariant)} "
        f"`{plant.invariant}` (seed "
        f"{plant.seed}, profile {plant.profile}, {plant.voters} voters, "
        f"{plant.observers} observer{'s' if plant.observers != 1 else ''})"
        + (
            f"; before it, the simulator invariant `{plant.state_check}`"
            if plant.state_check
            else ""
        )
        + f" | {soon} |"
    )


def recorded_event(plant: SimPlant) -> int | None:
    """The event docs/PLANTED-BUGS.md records for the plant (None: absent or not caught)."""
    found = re.search(
        rf"^\| `{re.escape(plant.name)}`: .*\| event ([\d,]+) of [\d,]+ \|$",
        DOC.read_text(),
        re.M,
    )
    return None if found is None else int(found[1].replace(",", ""))


def table(caught: Callable[[SimPlant], int | None] = SimPlant.caught_at) -> str:
    """The whole document; ``caught`` measures each simulator plant (by default, runs it)."""
    lines = [
        "# Planted bugs and what catches them",
        "",
        "Written by `.venv/bin/python -m tests.plants.catalogue --write` (the simulator runs are",
        "measured then; they are deterministic). How a bug is planted: `tests/plants/README.md`.",
        "",
        "| bug (tests/plants/…) | caught by | how soon |",
        "|---|---|---|",
    ]
    lines += [row(plant, caught(plant)) for plant in SIM_PLANTS]
    for name, bug, check, test, soon in (*TEST_PLANTS, *FAULT_RUN_PLANTS):
        lines.append(f"| `{name}`: {bug} | {check} (`{test}`) | {soon} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.plants.catalogue")
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC.name}")
    args = parser.parse_args(argv)
    text = table()
    if args.write:
        DOC.write_text(text)
    print(text, end="")
    return 0 if "NOT CAUGHT" not in text else 1


if __name__ == "__main__":
    sys.exit(main())
