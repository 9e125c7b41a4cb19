"""The trace checker (``pykraft.spec``, issue 49 item 2): every role transition walked
through the KRaft specification's rules, in the simulator as it runs and over a trace file
(``pykraft sim check-trace``). Each rule fails on a step it forbids; traces of every
profile pass; and a planted core bug that no safety invariant and not the core's own
self-check catches is caught by it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pykraft.cli.main import main
from pykraft.raft import roles, state
from pykraft.sim import SimConfig, TraceWriter, get_profile, run, spec_trace
from pykraft.sim.profiles import PROFILES
from pykraft.spec import SpecViolation, Step, check_trace_lines
from pykraft.spec.roles import RoleRules

A, B = "1:a", "2:b"


def _step(old: str, new: str, e0: int, e1: int, leader: int = -1, voted: str | None = None) -> Step:
    return Step(1, A, old, new, e0, e1, leader, voted)


@pytest.mark.parametrize(
    ("steps", "rule"),
    [
        ([_step("unattached", "prospective", 3, 4)], "prospective-keeps-epoch"),
        ([_step("unattached", "candidate", 3, 4, voted=A)], "candidate-after-prospective"),
        ([_step("prospective", "candidate", 3, 5, voted=A)], "candidate-after-prospective"),
        ([_step("prospective", "candidate", 3, 4, voted=B)], "candidate-after-prospective"),
        ([_step("prospective", "leader", 4, 4, leader=1)], "leader-after-candidate"),
        ([_step("follower", "resigned", 4, 4)], "resigned-after-leader"),
        ([_step("unattached", "follower", 4, 4, leader=1)], "follower-of-another"),
        ([_step("follower", "follower", 4, 4, leader=2)], "follower-of-another"),
        ([_step("follower", "unattached", 4, 3)], "epoch-never-decreases"),
        (
            [
                _step("unattached", "unattached", 4, 4, voted=B),
                _step("unattached", "unattached", 4, 4, voted="3:c"),
            ],
            "one-vote-per-epoch",
        ),
        (
            [
                _step("unattached", "follower", 3, 4, leader=2),
                Step(3, "3:c", "unattached", "follower", 3, 4, 4, None),
            ],
            "one-leader-named-per-epoch",
        ),
    ],
)
def test_each_rule_fails_on_a_step_it_forbids(steps: list[Step], rule: str) -> None:
    checker = RoleRules()
    with pytest.raises(SpecViolation) as caught:
        for s in steps:
            checker.check(s)
    assert caught.value.rule == rule


def test_the_steps_of_an_election_pass() -> None:
    checker = RoleRules()
    for s in (
        _step("follower", "prospective", 3, 3, leader=2),
        _step("prospective", "candidate", 3, 4, voted=A),
        _step("candidate", "leader", 4, 4, leader=1, voted=A),
        _step("leader", "resigned", 4, 4, voted=A),
        _step("resigned", "unattached", 4, 5),
        Step(2, B, "unattached", "follower", 4, 5, 3, None),
    ):
        checker.check(s)
    assert checker.steps == 6


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_traces_of_every_profile_pass_the_file_checker(profile: str, tmp_path: Path) -> None:
    sink = io.StringIO()
    result = run(SimConfig.make(2, profile, events=3_000, observers=1), TraceWriter(sink))
    assert result.violation is None, result.violation
    path = tmp_path / "trace.jsonl"
    path.write_text(sink.getvalue())
    steps, violation = check_trace_lines(sink.getvalue().splitlines())
    assert violation is None and steps > 0
    assert main(["sim", "check-trace", str(path)]) == 0


def test_a_broken_trace_is_named_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sink = io.StringIO()
    run(SimConfig.make(1, "partitions", events=2_000, observers=1), TraceWriter(sink))
    lines = sink.getvalue().splitlines()
    index = next(i for i, line in enumerate(lines) if '"to":"prospective"' in line)
    lines[index] = lines[index].replace('"to":"prospective"', '"to":"leader"')
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert main(["sim", "check-trace", str(path)]) == 1
    assert f"spec:leader-after-candidate: broken.jsonl line {index + 1}:" in capsys.readouterr().out


class _Bumped(roles.Prospective):
    """The planted bug of tests/plants/prospective_bumps_epoch, in process."""

    __slots__ = ()

    def __init__(self, epoch, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(epoch + 1, *args, **kwargs)


def test_a_core_bug_the_invariants_miss_and_the_trace_rules_catch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pre-votes asked at a bumped epoch, and the core's own transition table widened to let
    # it pass (as a change "fixing" the IllegalStateError would): safe, but not KIP-996.
    monkeypatch.setattr(state, "Prospective", _Bumped)
    for targets in state.TRANSITIONS.values():
        if "prospective" in targets:
            monkeypatch.setitem(targets, "prospective", targets["prospective"] | {state.NEXT})
    config = SimConfig(seed=1, voters=3, observers=1, events=5_000, profile=get_profile("crashes"))
    caught = run(config)
    assert caught.violation is not None
    assert caught.violation.invariant == "spec:prospective-keeps-epoch", caught.violation
    monkeypatch.setattr(spec_trace.SpecChecker, "attach", lambda *_: None)
    alone = run(config)
    assert alone.violation is None  # every safety invariant and the core's self-check pass
    assert alone.max_epoch > caught.max_epoch
