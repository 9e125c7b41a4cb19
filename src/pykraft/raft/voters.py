"""The voter set, keyed by replica key.

At kraft.version 0 the voter set is static (``controller.quorum.voters``); at kraft.version 1 it
comes from the latest VotersRecord (``control.py`` keeps the history by offset). Everything in
the core asks this type (never a raw list of ids).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykraft.raft.types import Endpoint, ReplicaKey


@dataclass(frozen=True, slots=True)
class VoterInfo:
    """One voter: its replica key, its listeners and the kraft.version range it supports."""

    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = 0


@dataclass(frozen=True, slots=True)
class VoterSet:
    """An immutable voter set.

    Invariant: at most one voter per replica id (DUPLICATE_VOTER is refused upstream); the
    mapping is keyed by id, and ``is_voter`` also compares directory ids when both are known.
    Empty only where the set is unknown (an observer formatted with --no-initial-controllers
    that has not yet read a VotersRecord); a leader's voter set is never empty.
    """

    voters: Mapping[int, VoterInfo]
    ids: frozenset[int] = field(init=False)
    majority_size: int = field(init=False)
    # The voters' replica keys in id order (derived; read after every simulated event).
    keys: tuple[ReplicaKey, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for vid, info in self.voters.items():
            assert vid == info.key.id, (vid, info)
        object.__setattr__(self, "ids", frozenset(self.voters))
        object.__setattr__(self, "majority_size", len(self.voters) // 2 + 1)
        object.__setattr__(self, "keys", tuple(info.key for info in self.voters.values()))

    @classmethod
    def from_ids(
        cls, ids: Iterable[int], endpoints: Mapping[int, tuple[Endpoint, ...]] | None = None
    ) -> VoterSet:
        eps = endpoints or {}
        return cls({i: VoterInfo(ReplicaKey(i), eps.get(i, ())) for i in sorted(set(ids))})

    def __len__(self) -> int:
        return len(self.voters)

    def is_voter(self, key: ReplicaKey) -> bool:
        info = self.voters.get(key.id)
        if info is None:
            return False
        known = info.key.directory_id
        asked = key.directory_id
        # ``is`` first: UUID equality is a Python-level call, and the keys compared are
        # mostly the very same objects.
        return known is asked or known is None or asked is None or known == asked

    def endpoints(self, voter_id: int) -> tuple[Endpoint, ...]:
        info = self.voters.get(voter_id)
        return () if info is None else info.endpoints

    def with_voter(self, info: VoterInfo) -> VoterSet:
        """This set plus (or with an updated) ``info``."""
        return VoterSet(dict(sorted({**self.voters, info.key.id: info}.items())))

    def without(self, voter_id: int) -> VoterSet:
        return VoterSet({i: v for i, v in self.voters.items() if i != voter_id})

    def others(self, local_id: int) -> tuple[int, ...]:
        """Voter ids other than ``local_id``, sorted (deterministic send order)."""
        return tuple(i for i in self.voters if i != local_id)
