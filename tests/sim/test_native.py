"""The compiled core (``pykraft.native``) is the same program as the source: simulations of
every fault profile, run in a process that loads the mypyc build and in this one (the
interpreted modules), give the same fingerprint -- the same events in the same order, the
same committed history and epochs -- and no violation. A build that does not match the
sources is never loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pykraft.native as native
from pykraft.sim import SimConfig, run
from pykraft.sim.profiles import PROFILES

EVENTS = 4_000
SEEDS = (1, 2)
# Each profile twice: as the simulator runs by default, and with scheduled appends and the
# controllers' sliced loads (the other paths through the core and the listener).
EXTRAS: tuple[dict[str, object], ...] = ({}, {"schedule_appends": True, "sync_slice_records": 64})
CASES = [(name, seed, extra) for name in PROFILES for seed in SEEDS for extra in EXTRAS]

_CHILD = """
import json, sys
import pykraft.native as native
from pykraft.sim import SimConfig, run
cases, events = json.loads(sys.argv[1]), int(sys.argv[2])
out = []
for profile, seed, extra in cases:
    result = run(SimConfig.make(seed=seed, profile=profile, events=events, **extra))
    out.append([result.fingerprint, None if result.violation is None else result.violation.message])
print(json.dumps({"status": native.status().active, "reason": native.status().reason, "runs": out}))
"""


def _build() -> None:
    """The build as CI's set-up makes it (nothing to do when it is current)."""
    subprocess.run([sys.executable, "-m", "pykraft.native", "build"], check=True)


def test_the_compiled_core_runs_the_same_events_as_the_source() -> None:
    _build()
    env = {k: v for k, v in os.environ.items() if k != native.ENV}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(CASES), str(EVENTS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    compiled = json.loads(child.stdout)
    assert compiled["status"], compiled["reason"]
    assert not native.status().active  # this process: the source
    for (profile, seed, extra), (fingerprint, violation) in zip(
        CASES, compiled["runs"], strict=True
    ):
        result = run(SimConfig.make(seed=seed, profile=profile, events=EVENTS, **extra))
        assert result.violation is None, (profile, seed, extra, result.violation)
        assert violation is None, (profile, seed, extra, violation)
        assert fingerprint == result.fingerprint, (profile, seed, extra)


def test_a_build_is_used_only_when_every_source_matches(tmp_path: Path) -> None:
    _build()
    copy = tmp_path / "build"
    shutil.copytree(native.build_dir(), copy)
    saved = os.environ.pop(native.ENV, None)
    try:
        assert native.check(copy)[0].active
        manifest = json.loads((copy / native.MANIFEST).read_text())
        manifest["modules"]["pykraft.raft.core"] = "0" * 64  # as if core.py changed since
        (copy / native.MANIFEST).write_text(json.dumps(manifest))
        verdict, _group = native.check(copy)
        assert not verdict.active and "pykraft.raft.core changed" in verdict.reason
        manifest["suffix"] = ".cpython-30-x86_64-linux-gnu.so"
        (copy / native.MANIFEST).write_text(json.dumps(manifest))
        assert "built for" in native.check(copy)[0].reason
        os.environ[native.ENV] = "0"
        assert native.check(native.build_dir())[0].reason == f"{native.ENV}=0"
    finally:
        os.environ.pop(native.ENV, None)
        if saved is not None:
            os.environ[native.ENV] = saved
