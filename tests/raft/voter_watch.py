"""The voter records of the scenario harness's leaders: printed as each is appended and
committed, and checked at each append against KIP-853's single changes and KIP-642 (E2, E4).

Output, in the order things happen (called on every Ready and before every transition)::

    1: voters append 1 2 3 4 @offset=7     leader 1 appended this voter set
    1: voters commit 1 2 3 4 @offset=7     ... and its high watermark passed it
    1: target append 4 5 6 @offset=3       the KIP-642 target record (``none``: cleared)
    1: voters truncated 1 2 3 4 @offset=7  gone from 1's log before it committed

A leader's records are those at or after its epoch start offset; records of earlier leaders
still above its high watermark print only their commit. State lives on the harness's ``Node``
(``leading_epoch``, ``voters_seen``, ``voters_pending``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.roles import Leader
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterSet

if TYPE_CHECKING:
    from .harness import Cluster


def observe(c: Cluster, i: int) -> None:
    """Print node ``i``'s new appends (as leader) and commits; check each append
    (``check_voter_append``). Called whenever its core may have moved."""
    node = c.nodes[i]
    core = node.core
    if core is None:
        return
    hwm = core.high_watermark
    voters = core.voter_history.entries
    targets = core.control.target_history.entries
    # Commits first: a change commits before the next one is appended (E2).
    _commits(c, i, "voters", node.voters_pending, {o for o, _ in voters}, hwm)
    _commits(c, i, "target", node.target_pending, {o for o, _ in targets}, hwm)
    role = core.state
    if not isinstance(role, Leader):
        return
    if node.leading_epoch != core.epoch:
        # Newly elected: records below its epoch start are not its appends, but those
        # still above its high watermark commit under it.
        node.leading_epoch = core.epoch
        node.voters_seen = node.target_seen = role.epoch_start_offset - 1
        for o, v in voters:
            if hwm <= o < role.epoch_start_offset:
                node.voters_pending[o] = names(v)
        for o, t in targets:
            if hwm <= o < role.epoch_start_offset:
                node.target_pending[o] = names(t)
    for o, v in voters:
        if o > node.voters_seen:
            node.voters_seen = o
            check_voter_append(c, i, o, v)
            _appended(c, i, "voters", node.voters_pending, o, names(v), hwm)
    for o, t in targets:
        if o > node.target_seen:
            node.target_seen = o
            check_target_append(c, i, o, t)
            _appended(c, i, "target", node.target_pending, o, names(t), hwm)


def _appended(
    c: Cluster, i: int, what: str, pending: dict[int, str], offset: int, shown: str, hwm: int
) -> None:
    c.out.append(f"{i}: {what} append {shown} @offset={offset}")
    if offset < hwm:  # a single voter commits its own appends as it flushes them
        c.out.append(f"{i}: {what} commit {shown} @offset={offset}")
    else:
        pending[offset] = shown


def _commits(
    c: Cluster, i: int, what: str, pending: dict[int, str], present: set[int], hwm: int
) -> None:
    for offset in sorted(pending):
        if offset not in present:
            c.out.append(f"{i}: {what} truncated {pending.pop(offset)} @offset={offset}")
        elif offset < hwm:
            c.out.append(f"{i}: {what} commit {pending.pop(offset)} @offset={offset}")


def check_voter_append(c: Cluster, i: int, offset: int, new: VoterSet) -> None:
    """Leader ``i`` just appended the voter set ``new`` at ``offset``: the previous change
    committed first, the two sets differ by one voter at most, a majority of both is up
    (E4), and a change made for a KIP-642 target is the one E2 prescribes."""
    core = c.nodes[i].core
    assert core is not None
    history = core.voter_history
    prev = history.value_at_or_before(offset - 1)
    if prev is None:
        return  # the first voter set written to the log (D3, D10)
    prev_offset = max(o for o, _ in history.entries if o < offset)
    assert prev_offset < core.high_watermark, (
        f"{i} appended voters at {offset} before the change at {prev_offset} committed "
        f"(hwm {core.high_watermark}): E2"
    )
    assert voter_changes(prev, new) <= 1, (
        f"{i} changed more than one voter at {offset}: {names(prev)} -> {names(new)}"
    )
    if set(prev.keys) == set(new.keys):
        return  # new endpoints or kraft.version range (D6), or the first leader's copy
    role = core.state
    assert isinstance(role, Leader)
    assert core.high_watermark > role.epoch_start_offset, (
        f"{i} changed voters at {offset} before committing its epoch (D4)"
    )
    target = core.control.target_history.value_at_or_before(offset - 1)
    # E4 is the leader's duty during a reassignment; an operator's single change (D4, D5)
    # made while the script keeps nodes down is the operator's.
    if target is not None or all(n.core is not None for n in c.nodes.values()):
        for voters in (prev, new):
            up = [k for k in voters.keys if is_up(c, k)]
            assert len(up) >= voters.majority_size, (
                f"{i} appended voters {names(new)} at {offset} while only "
                f"{' '.join(key_name(k) for k in up) or 'none'} of {names(voters)} "
                "are up: E4"
            )
    if target is not None:
        # Assumes no operator change (add-voter / remove-voter) is made mid-reassignment.
        check_e2_step(i, prev, new, target)


def check_target_append(c: Cluster, i: int, offset: int, target: VoterSet | None) -> None:
    """E2: the target is cleared only once the voter set has reached it."""
    core = c.nodes[i].core
    assert core is not None
    if target is not None:
        return
    previous = core.control.target_history.value_at_or_before(offset - 1)
    if previous is not None:
        assert set(core.voters.keys) == set(previous.keys), (
            f"{i} cleared target {names(previous)} at {offset} with voters {names(core.voters)}"
        )


def is_up(c: Cluster, key: ReplicaKey) -> bool:
    """The replica runs (with this directory id: a wiped disk is another replica)."""
    node = c.nodes.get(key.id)
    if node is None or node.core is None:
        return False
    return key.directory_id is None or key == c.key(key.id)


def key_name(key: ReplicaKey) -> str:
    """``3``, or ``3'`` for 3's first reformatted disk (``harness.directory_id``'s scheme)."""
    if key.directory_id is None:
        return str(key.id)
    return str(key.id) + "'" * (key.directory_id.int - key.id * 1000 - 1)


def names(voters: VoterSet | None) -> str:
    """``1 2 3'``: the replica keys, or ``none`` (a cleared target)."""
    if voters is None:
        return "none"
    return " ".join(key_name(k) for k in voters.keys) or "(empty)"


def voter_changes(a: VoterSet, b: VoterSet) -> int:
    """Voters added plus voters removed from ``a`` to ``b``. A replaced directory id counts as
    both (a reformatted disk is another replica, D1); one filled in where unset counts as
    none (D6)."""
    n = len(set(a.ids) ^ set(b.ids))
    for vid in set(a.ids) & set(b.ids):
        ka, kb = a.voters[vid].key, b.voters[vid].key
        if ka.directory_id is not None and ka != kb:
            n += 2
    return n


def check_e2_step(leader: int, prev: VoterSet, new: VoterSet, target: VoterSet) -> None:
    """The single change from ``prev`` to ``new`` is the one E2 prescribes toward ``target``:
    add one when |to add| >= |to remove|, otherwise remove one that is not the leader (the
    leader resigns instead, and its successor removes it). A voter whose id is still held by a
    voter to remove (a new directory id, D12) cannot be added before that one is removed."""
    to_add = set(target.keys) - set(prev.keys)
    to_remove = set(prev.keys) - set(target.keys)
    added = set(new.keys) - set(prev.keys)
    removed = set(prev.keys) - set(new.keys)
    addable = {k for k in to_add if k.id not in prev.ids}
    step = f"{leader}: {names(prev)} -> {names(new)} toward {names(target)}"
    if to_add and len(to_add) >= len(to_remove) and addable:
        assert len(added) == 1 and not removed and added <= addable, f"E2 wants an add: {step}"
    else:
        assert len(removed) == 1 and not added and removed <= to_remove, (
            f"E2 wants a removal: {step}"
        )
        assert leader not in {k.id for k in removed}, f"E2: a leader removes itself last: {step}"
