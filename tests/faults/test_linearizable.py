"""The linearizability checker (``tools/linearize``, Porcupine) on histories whose answer is
known (issue 49 item 3): what a broker's resend of a forwarded request may answer passes,
what no order of the operations explains fails with its smallest failing sub-history."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.faults.linearizable import History, Operation, check


def _op(
    client: int, call: int, ret: int | None, kind: str, key: str = "t", **kw: object
) -> Operation:
    op = Operation(client, call, kind, key, **kw)  # type: ignore[arg-type]
    op.ret = ret
    return op


def _check(tmp_path: Path, *ops: Operation, model: str = "metadata") -> object:
    return check(History(list(ops)).write(tmp_path / "history.jsonl"), model)


def test_concurrent_and_resent_operations_are_linearizable(tmp_path: Path) -> None:
    answer = _check(
        tmp_path,
        _op(0, 1, 5, "create_topic", count=1, result="ok"),
        _op(1, 2, 6, "create_topic", count=1, result="exists"),  # concurrent: after the first
        _op(0, 7, 9, "create_partitions", count=3, result="ok"),
        # A resend after the first attempt took effect: "has 4", the count it asked for.
        _op(1, 10, 12, "create_partitions", count=4, result="invalid_partitions", current=4),
        _op(0, 13, None, "delete_topic", result="unknown"),  # never answered
        _op(0, 14, 15, "alter_config", value="7", result="ok"),  # so the delete came later
        _op(1, 16, 17, "create_topic", key="u", count=1, result="ok"),
        _op(1, 18, 19, "delete_topic", key="u", result="unknown_topic"),  # its own resend
        _op(2, 20, 21, "read", key="u", result="ok", current=-1),
    )
    assert answer.ok and (answer.operations, answer.keys) == (9, 2), answer.lines()


def test_a_topic_created_twice_without_a_deletion_is_not_linearizable(tmp_path: Path) -> None:
    answer = _check(
        tmp_path,
        _op(0, 1, 5, "create_topic", count=1, result="ok"),
        _op(1, 6, 7, "alter_config", value="9", result="ok"),
        _op(0, 8, 9, "create_partitions", count=2, result="ok"),
        _op(1, 10, 11, "create_topic", count=1, result="ok"),
        _op(0, 12, 13, "delete_topic", result="ok"),
    )
    assert answer.result == "Illegal" and answer.failing_key == "t"
    # The smallest failing sub-history: the two creations, nothing else.
    assert [line.split(" [")[0] for line in answer.failing] == [
        "client 0: create_topic(t, 1) -> ok",
        "client 1: create_topic(t, 1) -> ok",
    ]
    assert answer.html is not None and "<html" in answer.html.read_text().lower()


def test_a_read_of_a_value_no_one_set_is_not_linearizable(tmp_path: Path) -> None:
    answer = _check(
        tmp_path,
        _op(0, 1, 2, "create_topic", count=1, result="ok"),
        _op(1, 3, None, "alter_config", value="5", result="unknown"),
        _op(2, 4, 5, "read", result="ok", current=1, value="5"),  # the unanswered one took
        _op(2, 6, 7, "read", result="ok", current=1, value="6"),  # no one set 6
    )
    assert answer.result == "Illegal"
    # Smallest: the read alone (no one set 6, whatever came before).
    assert [line.split(" [")[0] for line in answer.failing] == [
        "client 2: read(t) -> 1 partitions, retention.ms=6"
    ]


def test_acls_created_and_deleted_concurrently_and_resent_are_linearizable(
    tmp_path: Path,
) -> None:
    a, b = "User:lin-a", "User:lin-b"
    answer = _check(
        tmp_path,
        _op(0, 1, 5, "create_acl", key="acl", value=a, result="ok"),
        _op(1, 2, 6, "create_acl", key="acl", value=a, result="ok"),  # idempotent
        _op(0, 7, 9, "create_acl", key="acl", value=b, result="ok"),
        _op(1, 10, 12, "delete_acl", key="acl", value=a, result="ok", current=1),
        # A resend after the first attempt deleted it matches nothing.
        _op(0, 13, 15, "delete_acl", key="acl", value=b, result="ok", current=0),
        _op(1, 16, None, "create_acl", key="acl", value=a, result="unknown"),
        _op(2, 20, 21, "read_acl", key="acl", result="ok", value=a),  # the unanswered one took
    )
    assert answer.ok and answer.operations == 7, answer.lines()


@pytest.mark.parametrize(
    ("ops", "smallest"),
    [
        (  # an acknowledged ACL missing at the end, never deleted
            [("create_acl", "User:lin-a", -1), ("read_acl", "", -1)],
            ["create_acl(acl, User:lin-a) -> ok", "read_acl(acl) -> ACLs for no one"],
        ),
        (  # a deletion that matched an ACL no one created
            [("delete_acl", "User:lin-a", 1)],
            ["delete_acl(acl, User:lin-a) -> ok (1 matched)"],
        ),
    ],
)
def test_acl_histories_no_order_explains_fail(
    tmp_path: Path, ops: list[tuple[str, str, int]], smallest: list[str]
) -> None:
    history = [
        _op(0, 2 * i + 1, 2 * i + 2, kind, key="acl", value=value, result="ok", current=n)
        for i, (kind, value, n) in enumerate(ops)
    ]
    answer = _check(tmp_path, *history)
    assert answer.result == "Illegal" and answer.failing_key == "acl"
    assert [line.split(" [")[0].split(": ", 1)[1] for line in answer.failing] == smallest


@pytest.mark.parametrize(("offsets", "ok"), [((3, 8), True), ((8, 3), False)])
def test_appends_committed_in_turn_get_rising_offsets(
    tmp_path: Path, offsets: tuple[int, int], ok: bool
) -> None:
    answer = _check(
        tmp_path,
        _op(0, 1, 2, "append", key="", result="ok", offset=offsets[0]),
        _op(1, 3, 4, "append", key="", result="ok", offset=offsets[1]),
        _op(1, 0, None, "append", key="", result="unknown"),
        model="log",
    )
    assert answer.ok is ok, answer.lines()


def test_a_history_it_cannot_read_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"client": 0, "call": 1}\n')
    with pytest.raises(RuntimeError, match="needs a kind and a result"):
        check(bad)
