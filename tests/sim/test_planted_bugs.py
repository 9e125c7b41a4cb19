"""The planted bugs the simulator must catch (``tests/plants/``, issue 49 item 4): each run
with its plant fails on the named invariant at the event ``docs/PLANTED-BUGS.md`` records
(the simulator is deterministic), and the same run without the plant passes through that
event. A run's schedule does not depend on its budget of events (a budget that stops just
past the recorded event catches the plant at the same event, checked below), so the run
without the plant needs no more events than that: a few seconds each instead of a full
20,000-event run and its heal phase."""

from __future__ import annotations

import dataclasses

import pytest

from tests.plants.catalogue import DOC, SIM_PLANTS, SimPlant, recorded_event, table

_IDS = [p.name for p in SIM_PLANTS]


@pytest.mark.parametrize("plant", SIM_PLANTS, ids=_IDS)
def test_the_run_passes_without_the_plant(plant: SimPlant) -> None:
    at = recorded_event(plant)
    assert at is not None
    done = dataclasses.replace(plant, events=at).run(planted=False)
    assert done.returncode == 0 and "result: OK" in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("plant", SIM_PLANTS, ids=_IDS)
def test_the_plant_is_caught_where_the_catalogue_says(plant: SimPlant) -> None:
    at = plant.caught_at()
    assert at is not None, f"{plant.name} not caught by {plant.invariant}"
    assert at == recorded_event(plant), "run .venv/bin/python -m tests.plants.catalogue --write"
    assert dataclasses.replace(plant, events=at + 1).caught_at() == at  # the budget's no cause


def test_the_catalogue_lists_every_plant_and_nothing_else() -> None:
    assert table(caught=recorded_event) == DOC.read_text(), (
        "run .venv/bin/python -m tests.plants.catalogue --write"
    )
    assert "NOT CAUGHT" not in DOC.read_text()
