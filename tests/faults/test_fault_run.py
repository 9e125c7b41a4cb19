"""The CI fault run: 60 seconds of real faults on real processes (``pykraft faults run``).

Three ``pykraft server`` voters and an observer, each in its own network namespace with its
log on a small tmpfs; the seeded schedule applies every kind of fault (kill -9, SIGSTOP,
graceful restart, full disk, isolation, a split, one-way loss). Needs root, as the CI machine
gives (namespaces, mounts). The long run is ``pykraft faults run --seconds 1800``.
"""

from __future__ import annotations

from pathlib import Path

from pykraft.faults.run import NETWORK_KINDS, PROCESS_KINDS, RunConfig, run


def test_a_minute_of_faults_loses_nothing_and_the_replicas_agree(tmp_path: Path) -> None:
    report = run(RunConfig(seed=11, seconds=60, voters=3, observers=1, work=tmp_path))
    text = report.format()
    print(text)
    assert report.ok, text
    assert {f.kind for f in report.faults} == set(PROCESS_KINDS + NETWORK_KINDS)
    v = report.verdict
    assert v is not None and not v.lost and not v.divergences
    # The workload really ran through the faults (20 writes/s offered).
    assert v.checked >= 400 and v.checked == report.acked
    # A full disk stopped its node with the line that says why, and it came back.
    assert any("No space left on device" in d for d in report.disk_stops), report.disk_stops
