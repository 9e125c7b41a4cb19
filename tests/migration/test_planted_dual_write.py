"""A planted migration bug (``tests/plants/dual_write_skips_configs``: a config change the
dual write leaves out of ZooKeeper) is caught by the comparison of the dual write's delta path
with a full reconciliation (``test_reconcile.py``), within the seeds below; the same seeds
pass without it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.migration.test_reconcile import dual_write_matches_full_reconciliation

PLANT = Path(__file__).parents[1] / "plants" / "dual_write_skips_configs" / "sitecustomize.py"
SEEDS = range(1, 11)


def _install(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("dual_write_skips_configs", PLANT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install(monkeypatch.setattr)


def test_the_seeds_pass_without_the_plant() -> None:
    for seed in SEEDS:
        dual_write_matches_full_reconciliation(seed)


def test_the_comparison_catches_a_skipped_config_dual_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _install(monkeypatch)
    caught = []
    for seed in SEEDS:
        try:
            dual_write_matches_full_reconciliation(seed)
        except AssertionError:
            caught.append(seed)
    assert caught, "the planted bug went unnoticed"
    print(f"caught in seeds {caught} of {list(SEEDS)}")
