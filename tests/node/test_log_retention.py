"""The metadata log kept within metadata.max.retention.bytes / .ms (node/log_retention.py,
Kafka's KafkaMetadataLog.maybeClean): the rule, then on a running controller."""

from __future__ import annotations

import signal
from pathlib import Path

from pykraft.node.log_retention import SnapshotFacts, clean_target
from pykraft.raft.types import OffsetAndEpoch

from .procs import fmt, free_ports, make_config, wait_for
from .test_controller import _cluster_configs, _set_cluster_configs

DAY = 24 * 3600 * 1000


def _snaps(*specs: tuple[int, int, int]) -> list[SnapshotFacts]:
    """(offset, size, timestamp) each, oldest first."""
    return [SnapshotFacts(OffsetAndEpoch(o, 1), size, ts) for o, size, ts in specs]


def _log_from(sizes: dict[int, int]) -> object:
    """A log of segments {base offset: bytes}: the bytes kept from an offset on."""

    def kept(offset: int) -> int:
        bases = sorted(sizes)
        first = max([b for b in bases if b <= offset], default=bases[0])
        return sum(size for base, size in sizes.items() if base >= first)

    return kept


def test_within_both_limits_nothing_goes() -> None:
    snaps = _snaps((100, 10, 0), (200, 10, 0), (300, 10, 0))
    log = _log_from({0: 50, 100: 50, 200: 50, 300: 50})
    assert clean_target(snaps, log, 0, 1_000, 1_000, DAY) is None  # type: ignore[arg-type]


def test_over_the_size_the_oldest_go_until_it_fits() -> None:
    snaps = _snaps((100, 10, 0), (200, 10, 0), (300, 10, 0))
    log = _log_from({0: 50, 100: 50, 200: 50, 300: 50})
    # 200 + 30 > 200: the oldest goes, and the log before the next one (log from 200:
    # 100 + 20 = 120 fits).
    assert clean_target(snaps, log, 0, 1_000, 200, DAY) == OffsetAndEpoch(200, 1)  # type: ignore[arg-type]
    # Within 100 bytes only once the log starts at 300 (120 > 100; then 50 + 10).
    assert clean_target(snaps, log, 0, 1_000, 100, DAY) == OffsetAndEpoch(300, 1)  # type: ignore[arg-type]
    # Within 250 as it is (200 + 30).
    assert clean_target(snaps, log, 0, 1_000, 250, DAY) is None  # type: ignore[arg-type]


def test_the_newest_snapshot_always_stays_with_the_log_after_it() -> None:
    snaps = _snaps((100, 10, 0), (200, 10, 0))
    log = _log_from({0: 50, 100: 50, 200: 50})
    assert clean_target(snaps, log, 0, 10 * DAY, 0, 1) == OffsetAndEpoch(200, 1)  # type: ignore[arg-type]
    assert clean_target(snaps[1:], log, 200, 10 * DAY, 0, 1) is None  # type: ignore[arg-type]


def test_snapshots_older_than_the_retention_go_with_the_log_before_the_next() -> None:
    snaps = _snaps((100, 10, 1 * DAY), (200, 10, 5 * DAY), (300, 10, 9 * DAY))
    log = _log_from({0: 50, 100: 50, 200: 50, 300: 50})
    assert clean_target(snaps, log, 0, 8 * DAY, -1, 7 * DAY) is None  # type: ignore[arg-type]
    assert clean_target(snaps, log, 0, 8 * DAY, -1, 7 * DAY - 1) == OffsetAndEpoch(200, 1)  # type: ignore[arg-type]
    assert clean_target(snaps, log, 0, 13 * DAY, -1, 3 * DAY) == OffsetAndEpoch(300, 1)  # type: ignore[arg-type]


def test_minus_one_turns_a_limit_off() -> None:
    snaps = _snaps((100, 10, 0), (200, 10, 0))
    log = _log_from({0: 10**9, 100: 10**9, 200: 10**9})
    assert clean_target(snaps, log, 0, 100 * DAY, -1, -1) is None  # type: ignore[arg-type]


def _snapshot_files(data: Path) -> list[str]:
    return sorted(p.name for p in (data / "__cluster_metadata-0").glob("*.checkpoint"))


def _log_start(data: Path) -> int:
    path = data / "__cluster_metadata-0" / "log-start-offset"
    return int(path.read_text().split()[0]) if path.exists() else 0


def test_a_controller_keeps_its_log_within_retention_then_cuts_it(tmp_path: Path) -> None:
    """Kafka's defaults (100 MiB, 7 days): snapshots no longer cut the log, so a restart
    replays the newest snapshot and the log after it while the log reaches further back.
    Restarted with metadata.max.retention.bytes=1, the next snapshot moves the log start to
    itself and the older snapshots go."""
    (port,) = free_ports(1)
    extra = "metadata.log.max.record.bytes.between.snapshots=8192\n"
    node = make_config(tmp_path, 1, port, voters=f"1@127.0.0.1:{port}", extra=extra)
    fmt(node)
    node.start()
    try:
        _set_cluster_configs(node.address, 60)  # ~15 KB of records: a snapshot
        real = lambda: [n for n in _snapshot_files(node.data) if not n.startswith("0" * 20)]  # noqa: E731
        wait_for(lambda: len(real()) >= 1, "a snapshot")
        before = real()[-1]
        _set_cluster_configs(node.address, 2, prefix="y.")
        node.send(signal.SIGUSR1)
        wait_for(lambda: real()[-1] > before, "a second snapshot")
        assert len(real()) >= 2 and _log_start(node.data) == 0, (real(), _log_start(node.data))
        node.stop(signal.SIGTERM)
        node.start()
        wait_for(lambda: len(_cluster_configs(node.address)) >= 62, "every config after a restart")
        node.stop(signal.SIGTERM)

        node.config.write_text(node.config.read_text() + "metadata.max.retention.bytes=1\n")
        node.start()
        wait_for(lambda: len(_cluster_configs(node.address)) >= 62, "every config again")
        kept = real()
        _set_cluster_configs(node.address, 1, prefix="z.")
        node.send(signal.SIGUSR1)
        wait_for(lambda: real() and real()[-1] > kept[-1], "a snapshot under the new retention")
        newest = real()[-1]
        wait_for(lambda: real() == [newest], "only the newest snapshot kept")
        assert _log_start(node.data) == int(newest.split("-")[0])
        node.stop(signal.SIGTERM)
        node.start()
        wait_for(lambda: len(_cluster_configs(node.address)) >= 63, "every config from the cut log")
    finally:
        node.kill()


class _Core:
    """What PeriodicClean uses of the core: its snapshots, its retention hook, the cut."""

    def __init__(self, latest: OffsetAndEpoch | None, target: OffsetAndEpoch | None) -> None:
        self.log = object()
        self._latest, self.target = latest, target
        self.asked: list[OffsetAndEpoch] = []
        self.cut: list[OffsetAndEpoch] = []
        self.snapshots = self

    def latest(self) -> OffsetAndEpoch | None:
        return self._latest

    def snapshot_retention(self, sid: OffsetAndEpoch, _log: object) -> OffsetAndEpoch | None:
        self.asked.append(sid)
        return self.target

    def delete_before_snapshot(self, sid: OffsetAndEpoch) -> bool:
        self.cut.append(sid)
        return True


def test_the_retention_check_also_runs_between_snapshots(monkeypatch: object) -> None:
    """As Kafka's cleaner every 60 s: the node asks the core's retention hook with the newest
    snapshot and cuts the log to what it answers, stepped through the node's run, until
    stopped; with no snapshot nothing happens."""
    import asyncio

    import pytest

    from pykraft.node import log_retention

    mp = pytest.MonkeyPatch()
    mp.setattr(log_retention, "CLEAN_INTERVAL_S", 0.01)
    newest, older = OffsetAndEpoch(500, 3), OffsetAndEpoch(200, 2)
    core = _Core(newest, older)
    steps: list[str] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()

        def run(step: object) -> None:
            steps.append("run")
            step()  # type: ignore[operator]

        clean = log_retention.PeriodicClean(loop, run, core)  # type: ignore[arg-type]
        clean.start()
        await asyncio.sleep(0.1)
        clean.stop()
        seen = len(core.cut)
        await asyncio.sleep(0.05)
        assert len(core.cut) == seen  # stopped

    try:
        asyncio.run(scenario())
    finally:
        mp.undo()
    assert core.cut and set(core.cut) == {older} and set(core.asked) == {newest}
    assert len(steps) == len(core.cut)
    idle = _Core(None, older)
    log_retention.PeriodicClean(None, lambda step: step(), idle).clean()  # type: ignore[arg-type]
    assert idle.cut == [] and idle.asked == []
