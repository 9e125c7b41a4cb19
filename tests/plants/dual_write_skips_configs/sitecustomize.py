"""Planted bug (tests/plants/README.md): during the ZooKeeper migration's dual write, a config
change committed without a change to its topic is not written to ZooKeeper (the delta's
config znodes are left out unless their topic is in the delta too).

``install`` applies it (``setattr`` given: a test's ``monkeypatch.setattr``); started as a
process's ``sitecustomize`` it installs itself."""

from __future__ import annotations

from typing import Any


def install(setattr_: Any = setattr) -> None:
    from pykraft.migration import zk_writes

    desired = zk_writes.desired

    def skipping(image, kraft_epoch, scope=None):  # type: ignore[no-untyped-def]
        want = desired(image, kraft_epoch, scope)
        if scope is None:
            return want
        kept = {k: v for k, v in want.configs.items() if k[0] == "topics" and k[1] in want.topics}
        return zk_writes.DesiredZk(
            want.topics, kept, want.kraft_epoch, want.next_producer_id, want.acls, want.tokens
        )

    setattr_(zk_writes, "desired", skipping)


if __name__ == "sitecustomize":
    install()
