"""The specification's rules for appends, fetches, truncations, snapshots, the high watermark
and voter-set changes.

Theory of operation. ``LogRules`` keeps, per traced replica, its log as epoch runs
(``EpochLog``), its high watermark, role, epoch and voter set; and, for the whole cluster,
the identity of every batch ever appended ((base offset, epoch) -> (last offset, CRC)) and
the committed prefix (``committed``: the epochs of the offsets some leader's high watermark
passed). Replicas not traced (a Kafka controller beside pykraft's in a mixed quorum) are
unknown: a rule that would need their state counts them as agreeing, so a partial trace never
raises a false alarm, it only checks less. The rules, our reading of the KIP-853/KIP-996
specifications' next-state relation (no text of theirs is copied):

* ``append-by-leader``: only a leader appends its own batches, each in its own epoch;
* ``append-at-log-end``: every append (own or fetched) starts at the log end offset;
* ``fetched-epoch-not-ahead``: a follower appends only batches of its epoch or older, never
  an epoch below its log's last (``log-epochs-ascend``);
* ``log-matching``: a batch at one (base offset, epoch) is the same batch (last offset, CRC)
  in every log it reaches;
* ``truncate-above-committed``: a truncation never removes a committed batch a replica
  holds (an append below the committed end in another epoch is allowed: a stale leader and
  its followers write it, uncommitted, and truncate it later); ``snapshot-committed``: a fetched snapshot ends
  at or below the committed end;
* ``leader-has-committed``: a replica becoming leader holds the whole committed prefix;
* ``hwm-in-leader-epoch``: a leader's high watermark passes only a batch of its own epoch;
  ``hwm-majority``: only when a majority of its voter set holds that batch (untraced voters
  counted as holding it); ``hwm-committed``: a follower's high watermark never passes what a
  traced leader committed, and its log agrees with the committed prefix below it;
  ``hwm-never-decreases`` within one incarnation;
* ``voter-change-after-commit``: a leader writes a voter change only once its previous one and
  a batch of its own epoch are committed; ``voters-differ-by-one``: and it differs from the
  voter set before it by one voter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.spec.epochs import EpochLog
from pykraft.spec.roles import fail

__all__ = ["LogRules", "Replica", "num"]

Details = dict[str, object]


@dataclass(slots=True)
class Replica:
    node: int
    log: EpochLog
    hwm: int = 0
    role: str = "unattached"
    epoch: int = 0
    voters: tuple[str, ...] = ()
    voters_offset: int = -2
    started: bool = True  # False: first seen mid-trace, its log end taken from its first append


@dataclass(slots=True)
class LogRules:
    replicas: dict[str, Replica] = field(default_factory=dict)
    batches: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    committed: EpochLog = field(default_factory=EpochLog)
    traced_leaders: dict[int, bool] = field(default_factory=dict)  # epoch -> leader traced

    def start(self, node: int, d: Details) -> None:
        key = str(d["replica"])
        end = num(d, "log_end")
        known = self.replicas.get(key)
        if known is None or known.log.end < end:
            log = EpochLog.unknown(end)
        else:
            log = known.log
            log.truncate(end)  # a crash loses the unflushed tail
        voters = tuple(str(v) for v in _list(d, "voters"))
        hwm = num(d, "hwm")
        self.replicas[key] = Replica(node, log, hwm, str(d["role"]), num(d, "epoch"), voters)
        self.committed.copy_range(log, hwm)  # what a replica starts with as committed is

    def transition(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        r.role, r.epoch = str(d["to"]), num(d, "epoch")
        if r.role == "leader":
            self.traced_leaders[r.epoch] = True
            end = self.committed.end
            if end > 0 and (r.log.end < end or r.log.agrees(self.committed, end - 1) is False):
                fail(
                    "leader-has-committed",
                    node,
                    str(d["replica"]),
                    f"leads epoch {r.epoch} with log end {r.log.end}, epoch {r.log.epoch_at(end - 1)} at offset {end - 1}; committed to {end}, epoch {self.committed.epoch_at(end - 1)} there",
                )

    def append(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        key = str(d["replica"])
        own, epoch, role = bool(d["own"]), num(d, "epoch"), str(d["role"])
        for batch in _list(d, "batches"):
            assert isinstance(batch, list)
            base, last, batch_epoch, crc = (int(x) for x in batch)
            where = f"batch {base}..{last} of epoch {batch_epoch}"
            if not r.started:
                r.log, r.started = EpochLog.unknown(base), True
            if own and (role != "leader" or batch_epoch != epoch):
                fail(
                    "append-by-leader",
                    node,
                    key,
                    f"{where} appended as its own by a {role} of epoch {epoch}",
                )
            if base != r.log.end:
                fail("append-at-log-end", node, key, f"{where} appended at log end {r.log.end}")
            if not own and batch_epoch > epoch:
                fail(
                    "fetched-epoch-not-ahead",
                    node,
                    key,
                    f"{where} fetched by a {role} of epoch {epoch}",
                )
            last_epoch = r.log.last_epoch
            if last_epoch is not None and batch_epoch < last_epoch:
                fail("log-epochs-ascend", node, key, f"{where} after a batch of epoch {last_epoch}")
            seen = self.batches.setdefault((base, batch_epoch), (last, crc))
            if seen != (last, crc):
                fail(
                    "log-matching",
                    node,
                    key,
                    f"{where} (CRC {crc:#x}) where another log holds {base}..{seen[0]} (CRC {seen[1]:#x})",
                )
            r.log.append(base, last, batch_epoch)

    def truncate(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        end = num(d, "end")
        if end < min(self.committed.end, r.log.end) and r.log.agrees(self.committed, end):
            fail(
                "truncate-above-committed",
                node,
                str(d["replica"]),
                f"truncated to {end} from {r.log.end}, dropping the committed batch at {end} (committed to {self.committed.end})",
            )
        r.log.truncate(end)

    def snapshot(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        offset = num(d, "offset")
        if self.committed.known_from < offset and offset > self.committed.end:
            fail(
                "snapshot-committed",
                node,
                str(d["replica"]),
                f"loaded a snapshot ending at {offset} past the committed end {self.committed.end}",
            )
        r.log = EpochLog.unknown(offset)

    def hwm(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        key, hwm = str(d["replica"]), num(d, "hwm")
        if hwm < r.hwm:
            fail("hwm-never-decreases", node, key, f"high watermark {hwm} after {r.hwm}")
        r.hwm = hwm
        if str(d["role"]) == "leader":
            self._leader_hwm(node, key, r, hwm, num(d, "epoch"))
        else:
            self._follower_hwm(node, key, r, hwm, num(d, "epoch"))
        self.committed.copy_range(r.log, hwm)

    def _leader_hwm(self, node: int, key: str, r: Replica, hwm: int, epoch: int) -> None:
        at = r.log.epoch_at(hwm - 1)
        if at is not None and at != epoch:
            fail(
                "hwm-in-leader-epoch",
                node,
                key,
                f"leader of epoch {epoch} moved its high watermark to {hwm} past a batch of epoch {at}",
            )
        holders = sum(1 for v in r.voters if self._holds(v, r, hwm))
        if r.voters and holders < len(r.voters) // 2 + 1:
            fail(
                "hwm-majority",
                node,
                key,
                f"high watermark {hwm} in epoch {epoch}, but only {holders} of the voters {list(r.voters)} hold offset {hwm - 1}",
            )

    def _follower_hwm(self, node: int, key: str, r: Replica, hwm: int, epoch: int) -> None:
        if self.traced_leaders.get(epoch) and hwm > self.committed.end:
            fail(
                "hwm-committed",
                node,
                key,
                f"high watermark {hwm} in epoch {epoch} past the committed end {self.committed.end}",
            )
        if hwm > 0 and r.log.agrees(self.committed, hwm - 1) is False:
            fail(
                "hwm-committed",
                node,
                key,
                f"high watermark {hwm}, but its log holds epoch {r.log.epoch_at(hwm - 1)} at {hwm - 1} where epoch {self.committed.epoch_at(hwm - 1)} committed",
            )

    def _holds(self, voter: str, leader: Replica, hwm: int) -> bool:
        replica = self._find(voter)
        if replica is None:
            return True  # not traced: cannot tell, so it counts
        if replica is leader:
            return leader.log.end >= hwm
        return replica.log.end >= hwm and replica.log.agrees(leader.log, hwm - 1) is not False

    def _find(self, voter: str) -> Replica | None:
        found = self.replicas.get(voter)
        if found is not None or not voter.endswith(":None"):
            return found
        prefix = voter[: -len("None")]
        matches = [r for k, r in self.replicas.items() if k.startswith(prefix)]
        return matches[-1] if matches else None

    def voters(self, node: int, d: Details) -> None:
        r = self._replica(node, d)
        key, offset = str(d["replica"]), num(d, "offset")
        new = tuple(str(v) for v in _list(d, "voters"))
        if d["cause"] == "append" and _difference(r.voters, new) > 0:
            hwm, epoch = num(d, "hwm"), num(d, "epoch")
            own_epoch = hwm > 0 and r.log.epoch_at(hwm - 1) in (epoch, None)
            if hwm <= r.voters_offset or not own_epoch:
                fail(
                    "voter-change-after-commit",
                    node,
                    key,
                    f"voter set {list(new)} written at {offset} with the high watermark at {hwm} (previous voter change at {r.voters_offset}, epoch {epoch})",
                )
            if _difference(r.voters, new) > 1:
                fail(
                    "voters-differ-by-one",
                    node,
                    key,
                    f"voter set {list(new)} written after {list(r.voters)}",
                )
        r.voters, r.voters_offset = new, offset

    def recovered(self, point: int) -> None:
        """A recovery from a lost majority rewrote logs: everything above ``point`` is new,
        and what every replica holds is unknown until it reports again."""
        self.committed = EpochLog.unknown(point)
        for r in self.replicas.values():
            r.log = EpochLog.unknown(r.log.end)
        self.batches = {k: v for k, v in self.batches.items() if k[0] < point}
        self.traced_leaders.clear()

    def _replica(self, node: int, d: Details) -> Replica:
        key = str(d["replica"])
        found = self.replicas.get(key)
        if found is None:  # a trace that starts mid-way: nothing known of its log yet
            found = self.replicas[key] = Replica(node, EpochLog.unknown(0), started=False)
        return found


def _difference(old: tuple[str, ...], new: tuple[str, ...]) -> int:
    """Voters added plus voters removed, by id (and directory where both sides know it)."""
    a = {v.split(":")[0]: v.split(":")[1] for v in old}
    b = {v.split(":")[0]: v.split(":")[1] for v in new}
    changed = sum(1 for i in a.keys() & b.keys() if "None" not in (a[i], b[i]) and a[i] != b[i])
    return len(a.keys() ^ b.keys()) + changed


def num(d: Details, name: str) -> int:
    """The int field ``name`` of a step."""
    value = d[name]
    assert isinstance(value, int), (name, value)
    return value


def _list(d: Details, name: str) -> list[object]:
    value = d[name]
    assert isinstance(value, list), (name, value)
    return value
