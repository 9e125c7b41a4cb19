"""The planted bugs the simulator must catch (``tests/plants/``, issue 49 item 4): each run
with its plant fails on the named invariant at the event ``docs/PLANTED-BUGS.md`` records
(the simulator is deterministic), and the same run without the plant passes."""

from __future__ import annotations

import pytest

from tests.plants.catalogue import DOC, SIM_PLANTS, SimPlant, table


@pytest.mark.parametrize("plant", SIM_PLANTS, ids=[p.name for p in SIM_PLANTS])
def test_the_run_passes_without_the_plant(plant: SimPlant) -> None:
    done = plant.run(planted=False)
    assert done.returncode == 0 and "result: OK" in done.stdout, done.stdout[-2000:]


def test_every_plant_is_caught_where_the_catalogue_says() -> None:
    assert table() == DOC.read_text(), "run .venv/bin/python -m tests.plants.catalogue --write"
    assert "NOT CAUGHT" not in DOC.read_text()
