"""Many seeds, many profiles, across processes: ``sweep`` and its ``SweepReport``.

Every (seed, profile) pair is one independent run (``simulator.run``); runs are spread over
``jobs`` worker processes (``multiprocessing``, spawn context: no state leaks from the parent)
and aggregated as they finish, so memory stays flat for 100,000 seeds: only failures are kept
whole. The report is sorted by profile and seed, so its text does not depend on scheduling.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from pykraft.sim.config import SimConfig, SimResult
from pykraft.sim.profiles import get_profile
from pykraft.sim.simulator import run

# Runs handed to a worker at a time: big enough to amortise IPC, small enough to balance.
_CHUNK_RUNS = 4


def parse_seeds(text: str) -> range:
    """``"A..B"`` is seeds A to B-1 (B excluded, as in ``range``); ``"N"`` is just N."""
    if ".." in text:
        start_text, stop_text = text.split("..", 1)
        start, stop = int(start_text), int(stop_text)
    else:
        start = int(text)
        stop = start + 1
    if not 0 <= start < stop:
        raise ValueError(f"bad seed range {text!r}: need 0 <= A < B in A..B")
    return range(start, stop)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What a worker needs to rebuild a ``SimConfig`` (picklable, no callables)."""

    seed: int
    profile: str
    events: int
    voters: int
    observers: int
    pre_vote: bool

    def config(self) -> SimConfig:
        return SimConfig(
            seed=self.seed,
            profile=get_profile(self.profile),
            events=self.events,
            voters=self.voters,
            observers=self.observers,
            pre_vote=self.pre_vote,
        )


def run_spec(spec: RunSpec) -> SimResult:
    result = run(spec.config())
    return result


@dataclass(slots=True)
class ProfileStats:
    runs: int = 0
    failures: int = 0
    events: int = 0
    elections: int = 0
    max_epoch: int = 0
    committed_records: int = 0
    leaderless_ms: int = 0
    sim_time_ms: int = 0
    max_recovery_ms: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    violations: dict[str, int] = field(default_factory=dict)

    def add(self, r: SimResult) -> None:
        self.runs += 1
        self.events += r.events
        self.elections += r.elections
        self.max_epoch = max(self.max_epoch, r.max_epoch)
        self.committed_records += r.committed_records
        self.leaderless_ms += r.leaderless_ms
        self.sim_time_ms += r.sim_time_ms
        self.max_recovery_ms = max(self.max_recovery_ms, r.recovery_ms or 0)
        for kind, n in r.faults.items():
            self.faults[kind] = self.faults.get(kind, 0) + n
        if r.violation is not None:
            self.failures += 1
            name = r.violation.invariant
            self.violations[name] = self.violations.get(name, 0) + 1


@dataclass(slots=True)
class SweepReport:
    runs: int = 0
    wall_s: float = 0.0
    failures: list[SimResult] = field(default_factory=list)
    by_profile: dict[str, ProfileStats] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def events(self) -> int:
        return sum(s.events for s in self.by_profile.values())

    def add(self, result: SimResult) -> None:
        self.runs += 1
        stats = self.by_profile.setdefault(result.profile, ProfileStats())
        stats.add(result)
        if result.violation is not None:
            self.failures.append(result)

    def format(self) -> str:
        lines = [
            f"{self.runs} runs, {len(self.failures)} failures, {self.events} events in "
            f"{self.wall_s:.1f} s ({self.events / max(self.wall_s, 1e-9):,.0f} events/s overall)",
            "",
            f"{'profile':<11} {'runs':>6} {'fail':>5} {'events':>11} {'elections/run':>13} "
            f"{'max epoch':>9} {'leaderless %':>12} {'max recovery ms':>15}  faults",
        ]
        for name in sorted(self.by_profile):
            s = self.by_profile[name]
            faults = ", ".join(f"{k}={v}" for k, v in sorted(s.faults.items())) or "-"
            lines.append(
                f"{name:<11} {s.runs:>6} {s.failures:>5} {s.events:>11} "
                f"{s.elections / max(s.runs, 1):>13.1f} {s.max_epoch:>9} "
                f"{100.0 * s.leaderless_ms / max(s.sim_time_ms, 1):>12.2f} "
                f"{s.max_recovery_ms:>15}  {faults}"
            )
            for inv, n in sorted(s.violations.items()):
                lines.append(f"{'':<11} violation {inv}: {n}")
        if self.failures:
            lines += ["", "failures (reproduce with the command shown):"]
            for r in sorted(self.failures, key=lambda r: (r.profile, r.seed)):
                v = r.violation
                assert v is not None
                lines.append(f"  seed {r.seed} profile {r.profile}: {v.invariant}: {v.message}")
                lines.append(f"    {r.repro_command()}")
        return "\n".join(lines)


def _specs(
    seeds: Sequence[int],
    profiles: Sequence[str],
    spread: bool,
    events: int,
    voters: int,
    observers: int,
    pre_vote: bool,
) -> Iterator[RunSpec]:
    for seed in seeds:
        if spread:
            profile = profiles[seed % len(profiles)]
            yield RunSpec(seed, profile, events, voters, observers, pre_vote)
            continue
        for profile in profiles:
            yield RunSpec(seed, profile, events, voters, observers, pre_vote)


def sweep(
    seeds: Sequence[int],
    profiles: Sequence[str],
    *,
    events: int = 10_000,
    voters: int = 3,
    observers: int = 1,
    pre_vote: bool = True,
    spread: bool = False,
    jobs: int = 2,
    on_result: Callable[[SimResult], None] | None = None,
) -> SweepReport:
    """Run every (seed, profile) pair, or with ``spread`` each seed once with profile
    ``profiles[seed % len(profiles)]``; ``jobs`` <= 1 runs in this process."""
    for name in profiles:
        get_profile(name)  # fail fast on a typo
    report = SweepReport()
    started = time.perf_counter()
    specs = _specs(seeds, profiles, spread, events, voters, observers, pre_vote)
    if jobs <= 1:
        for spec in specs:
            result = run_spec(spec)
            report.add(result)
            if on_result is not None:
                on_result(result)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(processes=jobs) as pool:
            for result in pool.imap_unordered(run_spec, specs, chunksize=_CHUNK_RUNS):
                report.add(result)
                if on_result is not None:
                    on_result(result)
    report.wall_s = time.perf_counter() - started
    report.failures.sort(key=lambda r: (r.profile, r.seed))
    return report
