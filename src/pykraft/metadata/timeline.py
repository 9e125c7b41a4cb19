"""The image's undo log: what Kafka's ``SnapshotRegistry`` and timeline collections give its
controller, for pykraft's one mutable :class:`~pykraft.metadata.image.Image`.

Theory of operation. The active controller applies its records to the image when it
appends them, before they commit (so the next request sees them). Kafka keeps every
manager's state in timeline maps and sets that remember their value at each committed
offset; on losing leadership it reverts to the last committed offset
(``OffsetControlManager.deactivate`` -> ``SnapshotRegistry.revertToSnapshot``), and reads
(DescribeConfigs, the finalized features) see the state at that offset.

pykraft gets the same two operations from one undo log. Every change the image makes goes
through one of the primitives below (``put``/``delete`` on a dict, ``assign`` of an attribute,
``add``/``discard`` on a set, ``append`` to a list). While ``recording`` (only on the active
controller: a standby replays committed records only) each primitive first remembers the
value it replaces, tagged with the offset of the record being applied. Then:

* ``commit(offset)`` forgets what records up to ``offset`` changed (they can no longer be
  lost): the log only ever holds the changes of uncommitted records, so its size is bounded
  by what is in flight, not by the log;
* ``revert(offset)`` undoes, newest first, every change of the records after ``offset``: the
  image is again exactly the committed state, in time proportional to the uncommitted
  changes (Kafka's revert), not to the log (a rebuild from the snapshot);
* ``at_committed()`` is a context in which the image *is* the committed state: the
  uncommitted changes are undone on entry and redone on exit, so a read answered inside sees
  nothing a failover could lose (Kafka's reads at ``lastCommittedOffset``).

Not recording, a primitive is the plain mutation (one attribute test more).

A reader that needs the image as of an older committed offset for a while (the snapshot
generator, which writes a large image in slices between other events: Kafka's
``SnapshotGenerator`` reading its timeline at the snapshot's epoch) pins that offset, which
the image holds at that moment. While pinned, the primitives record on every controller (a
standby too) and also keep, per target, the value each key or attribute had at the pin (the
first change after it wins): ``view(offset)`` reads the image as it was there through that
map (``PinnedView``), without undoing anything, at a cost per read independent of how much
changed since. ``unpin`` lets the map go. (An earlier design read at the pin with ``at``,
undoing every later change on each slice's entry and redoing it on exit: under a stream of
CreateTopics during a snapshot of a million partitions the slices grew to 800 ms and the
snapshot to 300 s, bench/ANALYSIS.md section 18.) ``at_committed()`` is ``at`` the last
committed offset.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, MutableSequence
from contextlib import AbstractContextManager, contextmanager
from typing import Final, TypeVar

__all__ = ["PinnedView", "Timeline"]

K = TypeVar("K")
V = TypeVar("V")


class _Missing:
    """The 'no such key' value of an undo entry."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

# Entry kinds: (offset, kind, target, key, old value).
_DICT: Final = 0  # key of a dict; old value or MISSING
_ATTR: Final = 1  # attribute of an object; old value
_SET: Final = 2  # member of a set; old membership (bool)
_LIST: Final = 3  # an append to a list; undone by removing the last item
_REAPPEND: Final = 4  # only in at_committed's redo list: append the old value again

_Entry = tuple[int, int, object, object, object]
# Per pinned offset: id(target) -> (target, {key or attribute or set member: its value at
# the pin}). The target is held, so its id cannot be reused while it is in the map.
_AtPin = dict[int, tuple[object, dict[object, object]]]


class PinnedView:
    """The image as of a pinned offset (``Timeline.view``): collections and objects read
    through the values their changes since the pin replaced. Dicts and attributes only (the
    image's lists and sets are not in its snapshot)."""

    __slots__ = ("_olds",)

    def __init__(self, olds: _AtPin) -> None:
        self._olds = olds

    def items(self, target: dict[K, V]) -> list[tuple[K, V]]:
        """``target``'s items at the pin (in no particular order)."""
        changed = self._olds.get(id(target))
        if changed is None:
            return list(target.items())
        olds = changed[1]
        out = [(k, v) for k, v in target.items() if k not in olds]
        out += [(k, v) for k, v in olds.items() if v is not MISSING]  # type: ignore[misc]
        return out

    def attr(self, target: object, name: str) -> object:
        changed = self._olds.get(id(target))
        if changed is not None and name in changed[1]:
            return changed[1][name]
        return getattr(target, name)

    def obj(self, target: V) -> V:
        """``target`` itself when unchanged since the pin, else a copy with the attributes it
        had there (the image's state objects are changed in place by ``assign``)."""
        changed = self._olds.get(id(target))
        if changed is None:
            return target
        out = copy.copy(target)
        for name, value in changed[1].items():
            assert isinstance(name, str)
            setattr(out, name, value)
        return out


NOW: Final = PinnedView({})  # the image as it is (no pin)


class Timeline:
    """Invariant: ``_entries`` is in non-decreasing offset order, and undoing them newest
    first turns the image back into its state before the oldest one's record."""

    __slots__ = (
        "_active",
        "_at_pins",
        "_entries",
        "_pins",
        "committed_offset",
        "offset",
        "recording",
    )

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._active = False  # the active controller records its uncommitted changes
        self._pins: list[int] = []  # offsets a reader still needs the image at (one per pin)
        self._at_pins: dict[int, _AtPin] = {}  # what each pinned offset's view reads
        self.recording = False  # _active or pinned: the primitives remember what they replace
        self.offset = -1  # the offset of the record whose changes are being made
        self.committed_offset = -1  # the last offset ``commit`` was told of

    def __len__(self) -> int:
        return len(self._entries)

    # -- the primitives -----------------------------------------------------------------------

    def put(self, target: dict[K, V], key: K, value: V) -> None:
        if self.recording:
            self._record(_DICT, target, key, target.get(key, MISSING))
        target[key] = value

    def delete(self, target: dict[K, V], key: K) -> None:
        if key not in target:
            return
        if self.recording:
            self._record(_DICT, target, key, target[key])
        del target[key]

    def assign(self, target: object, name: str, value: object) -> None:
        if self.recording:
            self._record(_ATTR, target, name, getattr(target, name))
        setattr(target, name, value)

    def add(self, target: set[K], item: K) -> None:
        if item in target:
            return
        if self.recording:
            self._record(_SET, target, item, False)
        target.add(item)

    def discard(self, target: set[K], item: K) -> None:
        if item not in target:
            return
        if self.recording:
            self._record(_SET, target, item, True)
        target.discard(item)

    def _record(self, kind: int, target: object, key: object, old: object) -> None:
        offset = self.offset
        self._entries.append((offset, kind, target, key, old))
        for pin, olds in self._at_pins.items():
            if offset > pin:
                changed = olds.get(id(target))
                if changed is None:
                    olds[id(target)] = (target, {key: old})
                elif key not in changed[1]:
                    changed[1][key] = old

    def append(self, target: MutableSequence[V], item: V) -> None:
        if self.recording:
            self._entries.append((self.offset, _LIST, target, None, None))
        target.append(item)

    # -- commit, revert, read at the committed offset -------------------------------------------

    def record_uncommitted(self, on: bool) -> None:
        """On: this is the active controller, which applies records before they commit."""
        self._active = on
        self.recording = on or bool(self._pins)

    def commit(self, offset: int) -> None:
        """The records up to ``offset`` committed: forget their changes (a pin's reader reads
        through its own map, ``view``)."""
        self.committed_offset = max(self.committed_offset, offset)
        self._forget_committed()

    def pin(self, offset: int) -> None:
        """Keep being able to show the image at ``offset`` (<= the committed offset, which
        the image holds now) until ``unpin``: ``view(offset)``."""
        self._pins.append(offset)
        self._at_pins.setdefault(offset, {})
        self.recording = True

    def unpin(self, offset: int) -> None:
        self._pins.remove(offset)
        if offset not in self._pins:
            del self._at_pins[offset]
        self.recording = self._active or bool(self._pins)
        self._forget_committed()

    def view(self, offset: int) -> PinnedView:
        """The image as of the pinned ``offset``, read without changing it."""
        olds = self._at_pins.get(offset)
        if olds is None:
            raise KeyError(f"offset {offset} is not pinned")
        return PinnedView(olds)

    def _forget_committed(self) -> None:
        """Drop the changes of committed records (``revert`` never goes below them)."""
        offset = self.committed_offset
        entries = self._entries
        if not entries or entries[0][0] > offset:
            return
        if entries[-1][0] <= offset:
            entries.clear()
            return
        lo, hi = 0, len(entries)
        while lo < hi:  # the first entry after ``offset``
            mid = (lo + hi) // 2
            if entries[mid][0] <= offset:
                lo = mid + 1
            else:
                hi = mid
        del entries[:lo]

    def revert(self, offset: int) -> int:
        """Undo every change of the records after ``offset``; the count undone."""
        entries = self._entries
        undone = 0
        while entries and entries[-1][0] > offset:
            _undo(entries.pop())
            undone += 1
        return undone

    def at_committed(self) -> AbstractContextManager[None]:
        """The image as of the last ``commit`` inside the block."""
        return self.at(self.committed_offset)

    @contextmanager
    def at(self, offset: int) -> Iterator[None]:
        """The image as of ``offset`` inside the block (the changes of later records undone
        on entry, redone on exit): the last committed offset, or a pinned one. Nothing may
        change the image inside."""
        entries = self._entries
        first = len(entries)
        while first and entries[first - 1][0] > offset:
            first -= 1
        if first == len(entries):
            yield
            return
        # Undone newest first as they are captured.
        redo = [_capture(entries[i]) for i in range(len(entries) - 1, first - 1, -1)]
        recording, self.recording = self.recording, False
        try:
            yield
        finally:
            for entry in reversed(redo):
                _undo(entry)  # undoing a captured entry redoes the original
            self.recording = recording


def _undo(entry: _Entry) -> None:
    _, kind, target, key, old = entry
    if kind == _DICT:
        assert isinstance(target, dict)
        if old is MISSING:
            target.pop(key, None)
        else:
            target[key] = old
    elif kind == _ATTR:
        assert isinstance(key, str)
        setattr(target, key, old)
    elif kind == _SET:
        assert isinstance(target, set)
        if old:
            target.add(key)
        else:
            target.discard(key)
    elif kind == _LIST:
        assert isinstance(target, list)
        target.pop()
    else:
        assert isinstance(target, list)
        target.append(old)


def _capture(entry: _Entry) -> _Entry:
    """Undo ``entry``; return the entry that undoes the undo (the value it replaced now)."""
    offset, kind, target, key, _ = entry
    if kind == _DICT:
        assert isinstance(target, dict)
        now: object = target.get(key, MISSING)
        redo: _Entry = (offset, kind, target, key, now)
    elif kind == _ATTR:
        assert isinstance(key, str)
        redo = (offset, kind, target, key, getattr(target, key))
    elif kind == _SET:
        assert isinstance(target, set)
        redo = (offset, kind, target, key, key in target)
    else:
        assert isinstance(target, list)
        redo = (offset, _REAPPEND, target, None, target[-1])
    _undo(entry)
    return redo
