"""Delegation tokens in ZooKeeper (KIP-866), both directions, as Kafka 3.9's
``DelegationTokenManagerZk`` stores them and ``ZkDelegationTokenMigrationClient`` migrates
them. Pure: no I/O.

A token is ``/delegation_token/tokens/<tokenId>`` holding
``{"version":3,"owner":..,"tokenRequester":..,"renewers":[..],"issueTimestamp":..,
"maxTimestamp":..,"expiryTimestamp":..,"tokenId":..}``, the principals ``Sanitizer``-encoded
(URL encoding: ``User:alice`` is ``User%3Aalice``); version 1 has no ``tokenRequester`` (the
owner requested it). The HMAC is not stored: every node derives it from
``delegation.token.secret.key``, which must be the same on the KRaft controllers. A change is
announced with ``/delegation_token/token_changes/token_change_<seq>`` holding the token id,
which the ZooKeeper-mode brokers watch.

* **ZooKeeper -> KRaft** (:func:`token_records`): one DelegationTokenRecord per token.
* **KRaft -> ZooKeeper** (:func:`desired_tokens`, :func:`token_ops`,
  :func:`token_notifications`): the image's tokens as those znodes, the writes that make
  ZooKeeper say so (an expired or removed token's znode deleted), a notification per token.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import quote, unquote

from pykraft.metadata import records as r
from pykraft.migration.zk_acls import SnapshotNodes

__all__ = [
    "TOKENS",
    "TOKEN_CHANGES",
    "desired_tokens",
    "read_tokens",
    "token_json",
    "token_notifications",
    "token_ops",
    "token_records",
]

ROOT: Final = "/delegation_token"
TOKENS: Final = f"{ROOT}/tokens"
TOKEN_CHANGES: Final = f"{ROOT}/token_changes/token_change_"
CURRENT_VERSION: Final = 3

Token = tuple[str, str, tuple[str, ...], int, int, int]
"""(owner, requester, renewers, issue, max, expiry timestamps in ms) of one token."""


def _sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: URL encoding with ``%20`` for a space, ``*`` encoded."""
    return quote(name, safe="-._~").replace("~", "%7E")


def token_json(token: Token, token_id: str) -> bytes:
    owner, requester, renewers, issue, maximum, expiry = token
    value = {
        "version": CURRENT_VERSION,
        "owner": _sanitize(owner),
        "tokenRequester": _sanitize(requester),
        "renewers": [_sanitize(p) for p in renewers],
        "issueTimestamp": issue,
        "maxTimestamp": maximum,
        "expiryTimestamp": expiry,
        "tokenId": token_id,
    }
    return json.dumps(value, separators=(",", ":")).encode()


def parse_token_json(path: str, data: bytes | None) -> Token:
    """ValueError naming the znode when the content is not Kafka's."""
    try:
        value = json.loads(data or b"")
        owner = unquote(str(value["owner"]))
        requester = unquote(str(value.get("tokenRequester", value["owner"])))
        renewers = tuple(unquote(str(p)) for p in value.get("renewers", ()))
        return (
            owner,
            requester,
            renewers,
            int(value["issueTimestamp"]),
            int(value["maxTimestamp"]),
            int(value["expiryTimestamp"]),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not Kafka's delegation token JSON: {e}") from None


def read_tokens(snapshot: SnapshotNodes) -> dict[str, Token]:
    """Every token znode in ``snapshot``, by token id."""
    out: dict[str, Token] = {}
    for token_id in snapshot.children(TOKENS):
        path = f"{TOKENS}/{token_id}"
        node = snapshot.get(path)
        if node is not None:
            out[token_id] = parse_token_json(path, node.data)
    return out


def token_records(tokens: Mapping[str, Token]) -> list[list[tuple[Any, int]]]:
    """One batch of DelegationTokenRecords (by token id), or none."""
    batch: list[tuple[Any, int]] = []
    for token_id in sorted(tokens):
        owner, requester, renewers, issue, maximum, expiry = tokens[token_id]
        record = r.DelegationTokenRecord(
            owner=owner,
            requester=requester,
            renewers=renewers,
            issue_timestamp=issue,
            max_timestamp=maximum,
            expiration_timestamp=expiry,
            token_id=token_id,
        )
        batch.append((record, 0))
    return [batch] if batch else []


def desired_tokens(records: Iterable[Any]) -> dict[str, Token]:
    """The image's DelegationTokenRecords, by token id."""
    return {
        str(rec.token_id): (
            str(rec.owner),
            str(rec.requester),
            tuple(str(p) for p in rec.renewers),
            int(rec.issue_timestamp),
            int(rec.max_timestamp),
            int(rec.expiration_timestamp),
        )
        for rec in records
    }


def token_nodes(tokens: Mapping[str, Token], root_exists: bool) -> dict[str, Any]:
    """``tokens`` as znodes (a model of ZooKeeper)."""
    from pykraft.migration.zk_data import Znode

    nodes: dict[str, Any] = {}
    if root_exists or tokens:
        nodes[ROOT] = Znode(None, 0, ("tokens",))
        nodes[TOKENS] = Znode(None, 0, tuple(sorted(tokens)))
    for token_id, token in tokens.items():
        nodes[f"{TOKENS}/{token_id}"] = Znode(token_json(token, token_id), 0)
    return nodes


def token_ops(want: Mapping[str, Token], have: SnapshotNodes) -> list[tuple[str, str, bytes]]:
    """(kind, path, data) writes that make ZooKeeper's token znodes say ``want``."""
    ops: list[tuple[str, str, bytes]] = []
    present = read_tokens(have)
    if want and have.get(TOKENS) is None:
        if have.get(ROOT) is None:
            ops.append(("create", ROOT, b""))
        ops.append(("create", TOKENS, b""))
    for token_id in sorted(want):
        if present.get(token_id) == want[token_id]:
            continue
        kind = "set" if token_id in present else "create"
        ops.append((kind, f"{TOKENS}/{token_id}", token_json(want[token_id], token_id)))
    for token_id in sorted(set(present) - set(want)):
        ops.append(("delete", f"{TOKENS}/{token_id}", b""))
    return ops


def token_notifications(paths: Iterable[str]) -> list[tuple[str, bytes]]:
    """(sequential znode prefix, data) for each token znode written (its id)."""
    out: list[tuple[str, bytes]] = []
    for path in paths:
        parent, _, token_id = path.rpartition("/")
        if parent == TOKENS and token_id:
            out.append((TOKEN_CHANGES, token_id.encode()))
    return out
