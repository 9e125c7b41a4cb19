"""The simulator's client appends as a linearizable history (issue 49 item 3): checked at the
end of every run (``appends-linearizable``), and the same history handed to Porcupine
(``tools/linearize``) gets the same verdict, on real runs and on a history made wrong."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pykraft.faults.linearizable import check
from pykraft.sim.client_appends import Append, append_history, check_appends, write_history
from pykraft.sim.config import SimConfig
from pykraft.sim.history import InvariantViolation
from pykraft.sim.simulator import Simulation


def _appends(profile: str, seed: int) -> list[Append]:
    sim = Simulation(SimConfig.make(seed, profile, events=6_000))
    result = sim.run()
    assert result.violation is None, result.summary()
    return append_history(sim.checker.client_appends, sim.history)


@pytest.mark.parametrize(("profile", "seed"), [("chaos", 1), ("majority-loss", 4)])
def test_a_runs_appends_are_linearizable_to_both_checkers(
    tmp_path: Path, profile: str, seed: int
) -> None:
    appends = _appends(profile, seed)
    answered = check_appends(appends)
    assert answered > 50 and answered < len(appends)  # some lost with their leaders
    porcupine = check(write_history(appends, tmp_path / "appends.jsonl"), model="log")
    assert porcupine.ok and porcupine.operations == len(appends), porcupine.lines()


def test_an_answer_out_of_real_time_order_fails_both_checkers(tmp_path: Path) -> None:
    appends = [a for a in _appends("chaos", 1) if a.return_ms is not None]
    first, later = appends[0], next(a for a in appends if a.call_ms > appends[0].return_ms)
    # The later append's offset swapped below the first's: answered in turn, offsets not.
    wrong = [a for a in appends if a not in (first, later)]
    wrong += [dataclasses.replace(later, offset=first.offset - 1), first]
    with pytest.raises(InvariantViolation) as caught:
        check_appends(wrong)
    assert caught.value.invariant == "appends-linearizable"
    porcupine = check(write_history(wrong, tmp_path / "wrong.jsonl"), model="log")
    assert porcupine.result == "Illegal" and len(porcupine.failing) == 2, porcupine.lines()


def test_appends_lost_with_a_majority_leave_the_history() -> None:
    """Seed 513 of the 1,000-run proof: a majority lost with a leader whose epoch the
    recovered quorum uses again at the same offsets. The appends reaching past the recovery
    point went with the majority; kept in the history, two of them were "answered" at one
    offset."""
    sim = Simulation(SimConfig.make(513, "majority-loss", events=8_000))
    result = sim.run()
    assert result.violation is None, result.summary()
    assert result.faults.get("recovered", 0) >= 1
    answered = check_appends(append_history(sim.checker.client_appends, sim.history))
    assert answered > 50
