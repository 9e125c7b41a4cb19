"""The Grafana dashboard and the Prometheus alert rules of ``ops/`` (issue 47 item 2): the
files are what ``pykraft.ops`` writes, every query and alert expression parses as PromQL, the
dashboard is importable (unique ids, panels inside Grafana's 24 columns, no overlap) and
every rule has what Alertmanager routes on. That each series named is served by a running
cluster is ``tests/interop/test_kafka_broker.py``'s."""

from __future__ import annotations

import json

import yaml

from pykraft.ops.__main__ import FILES, ROOT, main
from pykraft.ops.alerts import RULES
from pykraft.ops.dashboard import queries

from .promql_names import series_names


def test_the_files_are_what_the_code_writes() -> None:
    assert main(["--check"]) == 0, "python -m pykraft.ops --write"
    assert set(FILES) and all((ROOT / path).exists() for path in FILES)


def test_every_query_parses_and_names_a_series() -> None:
    for expr in queries() + [rule.expr for rule in RULES]:
        names = series_names(expr)
        assert names, expr
        assert all(name.startswith(("kafka_", "pykraft_", "process_")) for name in names), expr


def test_the_dashboard_is_laid_out_for_grafana() -> None:
    board = json.loads((ROOT / "ops/grafana/pykraft-controllers.json").read_text())
    panels = board["panels"]
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine
    exprs = [t["expr"] for panel in panels for t in panel.get("targets", [])]
    assert exprs == queries()
    assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "job"}


def test_the_rule_file_is_prometheus_shaped() -> None:
    loaded = yaml.safe_load((ROOT / "ops/prometheus/pykraft-alerts.yml").read_text())
    rules = loaded["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [rule.alert for rule in RULES]
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning"), rule
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        assert rule["for"].endswith("m"), rule
        assert series_names(rule["expr"]), rule
