"""The trace checker's rules for appends, fetches, truncations, snapshots, the high watermark
and voter-set changes (``pykraft.spec.logs``, issue 49 item 2): a legal history of steps
passes, and each rule fails on the one step of a history that breaks it, with its name. A
replica the trace does not hold (a Kafka controller beside pykraft's) never makes a rule fail.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pykraft.spec import SpecState, SpecViolation

A, B, C = "1:a", "2:b", "3:c"
VOTERS = [A, B, C]
Step = tuple[int, str, dict[str, object]]


def start(
    node: int, replica: str, *, end: int = 0, hwm: int = 0, voters: list[str] = VOTERS
) -> Step:
    d: dict[str, object] = {"replica": replica, "role": "unattached", "epoch": 0, "leader_id": -1}
    d.update(voted=None, log_start=0, log_end=end, last_epoch=0, hwm=hwm, voters=voters)
    return node, "spec_start", d


def become(
    node: int,
    replica: str,
    old: str,
    new: str,
    e0: int,
    e1: int,
    leader: int = -1,
    voted: str | None = None,
) -> Step:
    d: dict[str, object] = {"replica": replica, "from": old, "to": new, "from_epoch": e0}
    d.update(epoch=e1, leader_id=leader, voted=voted)
    return node, "transition", d


def append(
    node: int,
    replica: str,
    base: int,
    last: int,
    epoch: int,
    *,
    own: bool,
    role: str,
    at: int | None = None,
    crc: int = 7,
) -> Step:
    d: dict[str, object] = {"replica": replica, "own": own, "role": role}
    d.update(epoch=epoch if at is None else at, batches=[[base, last, epoch, crc + base]])
    return node, "spec_append", d


def hwm(node: int, replica: str, value: int, role: str, epoch: int) -> Step:
    return node, "spec_hwm", {"replica": replica, "hwm": value, "role": role, "epoch": epoch}


def truncate(node: int, replica: str, end: int) -> Step:
    return node, "spec_truncate", {"replica": replica, "end": end}


def voters(
    node: int,
    replica: str,
    offset: int,
    new: list[str],
    hwm: int,
    epoch: int,
    cause: str = "append",
) -> Step:
    d: dict[str, object] = {"replica": replica, "offset": offset, "voters": new, "cause": cause}
    d.update(role="leader", epoch=epoch, hwm=hwm)
    return node, "spec_voters", d


def elect_a() -> list[Step]:
    """Three replicas start; A leads epoch 1 and appends 0..4 and 5..9; B follows and
    fetches 0..4."""
    return [
        start(1, A),
        start(2, B),
        start(3, C),
        become(1, A, "unattached", "prospective", 0, 0),
        become(1, A, "prospective", "candidate", 0, 1, voted=A),
        become(1, A, "candidate", "leader", 1, 1, leader=1, voted=A),
        become(2, B, "unattached", "follower", 0, 1, leader=1, voted=A),
        append(1, A, 0, 4, 1, own=True, role="leader"),
        append(1, A, 5, 9, 1, own=True, role="leader"),
        append(2, B, 0, 4, 1, own=False, role="follower"),
    ]


def walk(steps: list[Step]) -> SpecState:
    state = SpecState()
    for node, kind, d in steps:
        state.step(node, kind, d)
    return state


def test_a_legal_history_passes() -> None:
    state = walk(
        [
            *elect_a(),
            hwm(1, A, 5, "leader", 1),
            hwm(2, B, 5, "follower", 1),
            append(2, B, 5, 9, 1, own=False, role="follower"),
            become(3, C, "unattached", "follower", 0, 1, leader=1, voted=A),
            append(3, C, 0, 4, 1, own=False, role="follower"),
            append(3, C, 5, 9, 1, own=False, role="follower"),
            hwm(1, A, 10, "leader", 1),
            append(1, A, 10, 10, 1, own=True, role="leader"),  # a voter change, not fetched
            voters(1, A, 10, [A, B], 10, 1),
            # B takes over in epoch 2 with C's vote; A's uncommitted tail is truncated.
            become(2, B, "follower", "prospective", 1, 1, leader=1, voted=A),
            become(2, B, "prospective", "candidate", 1, 2, voted=B),
            become(3, C, "follower", "unattached", 1, 2, voted=B),
            become(2, B, "candidate", "leader", 2, 2, leader=2, voted=B),
            append(2, B, 10, 10, 2, own=True, role="leader"),
            become(3, C, "unattached", "follower", 2, 2, leader=2, voted=B),
            append(3, C, 10, 10, 2, own=False, role="follower"),
            hwm(2, B, 11, "leader", 2),
            become(1, A, "leader", "follower", 1, 2, leader=2),
            truncate(1, A, 10),
            append(1, A, 10, 10, 2, own=False, role="follower", at=2),
            hwm(1, A, 11, "follower", 2),
        ]
    )
    assert state.steps == 31
    assert state.logs.committed.end == 11 and state.logs.committed.epoch_at(10) == 2


CASES: list[tuple[str, Callable[[], list[Step]]]] = [
    ("append-by-leader", lambda: [*elect_a(), append(2, B, 5, 9, 1, own=True, role="follower")]),
    (
        "append-by-leader",
        lambda: [*elect_a(), append(1, A, 10, 12, 0, own=True, role="leader", at=1)],
    ),
    ("append-at-log-end", lambda: [*elect_a(), append(1, A, 11, 12, 1, own=True, role="leader")]),
    (
        "fetched-epoch-not-ahead",
        lambda: [*elect_a(), append(2, B, 5, 9, 2, own=False, role="follower", at=1)],
    ),
    (
        "log-epochs-ascend",
        lambda: [*elect_a(), append(2, B, 5, 9, 0, own=False, role="follower", at=1)],
    ),
    (
        "log-matching",
        lambda: [*elect_a(), append(2, B, 5, 9, 1, own=False, role="follower", crc=8)],
    ),
    ("log-matching", lambda: [*elect_a(), append(2, B, 5, 8, 1, own=False, role="follower")]),
    ("hwm-majority", lambda: [*elect_a(), hwm(1, A, 7, "leader", 1)]),
    ("hwm-in-leader-epoch", lambda: [*elect_a(), hwm(1, A, 5, "leader", 2)]),
    ("hwm-committed", lambda: [*elect_a(), hwm(1, A, 5, "leader", 1), hwm(2, B, 6, "follower", 1)]),
    (
        "hwm-never-decreases",
        lambda: [*elect_a(), hwm(1, A, 5, "leader", 1), hwm(1, A, 4, "leader", 1)],
    ),
    (
        "truncate-above-committed",
        lambda: [*elect_a(), hwm(1, A, 5, "leader", 1), truncate(2, B, 3)],
    ),
    ("voter-change-after-commit", lambda: [*elect_a(), voters(1, A, 10, [A, B], 0, 1)]),
    (
        "voter-change-after-commit",
        lambda: [
            *elect_a(),
            hwm(1, A, 5, "leader", 1),
            voters(1, A, 10, [A, B], 5, 1),
            voters(1, A, 11, [A], 5, 1),
        ],
    ),
    (
        "voters-differ-by-one",
        lambda: [*elect_a(), hwm(1, A, 5, "leader", 1), voters(1, A, 10, [A], 5, 1)],
    ),
    (
        "leader-has-committed",
        lambda: [
            *elect_a(),
            hwm(1, A, 5, "leader", 1),
            become(3, C, "unattached", "prospective", 1, 1),
            become(3, C, "prospective", "candidate", 1, 2, voted=C),
            become(3, C, "candidate", "leader", 2, 2, leader=3, voted=C),
        ],
    ),
]


@pytest.mark.parametrize(
    ("rule", "steps"), CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)]
)
def test_each_rule_fails_on_the_step_that_breaks_it(
    rule: str, steps: Callable[[], list[Step]]
) -> None:
    history = steps()
    walk(history[:-1])  # everything before the last step is legal
    with pytest.raises(SpecViolation) as caught:
        walk(history)
    assert caught.value.rule == rule, caught.value


def test_a_replica_not_traced_counts_as_holding_what_it_is_asked() -> None:
    # A mixed quorum: only A is traced; B and C (Kafka's controllers) hold what A commits.
    state = walk(
        [
            start(1, A),
            become(1, A, "unattached", "prospective", 0, 0),
            become(1, A, "prospective", "candidate", 0, 1, voted=A),
            become(1, A, "candidate", "leader", 1, 1, leader=1, voted=A),
            append(1, A, 0, 4, 1, own=True, role="leader"),
            hwm(1, A, 5, "leader", 1),
        ]
    )
    assert state.logs.committed.end == 5
    # Following an untraced leader (epoch 2, Kafka's), A's high watermark is not checked
    # against a committed end only that leader knows.
    walk(
        [
            start(1, A),
            become(1, A, "unattached", "follower", 0, 2, leader=2),
            append(1, A, 0, 4, 2, own=False, role="follower", at=2),
            hwm(1, A, 5, "follower", 2),
        ]
    )
