"""ACLs in ZooKeeper (KIP-866), both directions, as Kafka 3.9's ``AclAuthorizer`` stores them
and its ``ZkAclMigrationClient`` migrates them. Pure: no I/O.

Layout (``kafka.zk.ZkData``): a resource's ACLs are one znode, literal patterns under
``/kafka-acl/<Type>/<name>``, prefixed ones under ``/kafka-acl-extended/prefixed/<Type>/<name>``
(``<Type>`` is ``SecurityUtils.resourceTypeName``: ``Topic``, ``Group``, ``Cluster``,
``TransactionalId``, ``DelegationToken``, ``User``), holding
``{"version":1,"acls":[{"principal":..,"permissionType":"Allow","operation":"Read","host":..}]}``.
A change to a resource is announced with a sequential znode the ZooKeeper-mode brokers'
authorizers watch: ``/kafka-acl-changes/acl_changes_<seq>`` holding ``TOPIC:<name>`` for a
literal pattern (``ResourceType.toString``), ``/kafka-acl-extended-changes/acl_changes_<seq>``
holding ``{"version":1,"resourceType":"TOPIC","name":..,"patternType":"PREFIXED"}`` otherwise.

* **ZooKeeper -> KRaft** (:func:`acl_records`): every ACL becomes an AccessControlEntryRecord,
  one batch per resource. Kafka gives each a random id; here the id is derived from the binding
  (a name-based UUID), so the controller's load and the Spark dry run write the same bytes and
  the load stays a pure function of ZooKeeper's content.
* **KRaft -> ZooKeeper** (:func:`desired_acls`, :func:`acl_ops`, :func:`acl_notifications`):
  the image's ACLs as those znodes, the writes that make ZooKeeper say so (a resource left
  without ACLs loses its znode, as ``deleteResource`` does), and a change notification per
  resource written.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Protocol

from pykraft.metadata import records as r

__all__ = [
    "ACL_CHANGES",
    "ACL_EXTENDED_CHANGES",
    "ACL_ROOTS",
    "AclEntry",
    "SnapshotNodes",
    "ZkAcls",
    "acl_json",
    "acl_nodes",
    "acl_notifications",
    "acl_ops",
    "acl_parents",
    "acl_records",
    "desired_acls",
    "is_resource",
    "read_acls",
]

LITERAL_ROOT: Final = "/kafka-acl"
EXTENDED_ROOT: Final = "/kafka-acl-extended"
PREFIXED_ROOT: Final = f"{EXTENDED_ROOT}/prefixed"
ACL_ROOTS: Final = (LITERAL_ROOT, EXTENDED_ROOT)
ACL_CHANGES: Final = "/kafka-acl-changes/acl_changes_"
ACL_EXTENDED_CHANGES: Final = "/kafka-acl-extended-changes/acl_changes_"

PATTERN_LITERAL: Final = 3
PATTERN_PREFIXED: Final = 4
# ResourceType codes -> their enum names; the znode path's name is the camel-cased form.
RESOURCE_TYPES: Final = {
    2: "TOPIC",
    3: "GROUP",
    4: "CLUSTER",
    5: "TRANSACTIONAL_ID",
    6: "DELEGATION_TOKEN",
    7: "USER",
}
OPERATIONS: Final = {
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
}
PERMISSIONS: Final = {2: "DENY", 3: "ALLOW"}
_ACL_ID_NAMESPACE: Final = uuid.UUID("6b61666b-612d-6163-6c2d-6d6967726174")

AclEntry = tuple[str, str, int, int]
"""(principal, host, operation, permission type): one ACE of a resource."""

ZkAcls = Mapping[str, frozenset[AclEntry]]
"""A resource znode's path -> its ACEs."""


def _camel(enum_name: str) -> str:
    """SecurityUtils.resourceTypeName / operationName / permissionTypeName."""
    return "".join(part.capitalize() for part in enum_name.split("_"))


def _code(names: Mapping[int, str], text: str, what: str, path: str) -> int:
    key = text.replace("_", "").lower()
    for code, name in names.items():
        if name.replace("_", "").lower() == key:
            return code
    raise ValueError(f"{path}: unknown {what} {text!r}")


def resource_path(resource_type: int, pattern_type: int, name: str) -> str:
    """The znode of one resource's ACLs (``ZkAclStore.path``)."""
    root = LITERAL_ROOT if pattern_type == PATTERN_LITERAL else PREFIXED_ROOT
    return f"{root}/{_camel(RESOURCE_TYPES[resource_type])}/{name}"


def _parse_path(path: str) -> tuple[int, int, str]:
    """(resource type, pattern type, name) of a resource znode path."""
    if path.startswith(PREFIXED_ROOT + "/"):
        pattern, rest = PATTERN_PREFIXED, path[len(PREFIXED_ROOT) + 1 :]
    elif path.startswith(LITERAL_ROOT + "/"):
        pattern, rest = PATTERN_LITERAL, path[len(LITERAL_ROOT) + 1 :]
    else:
        raise ValueError(f"{path}: not an ACL znode")
    type_name, _, name = rest.partition("/")
    return _code(RESOURCE_TYPES, type_name, "resource type", path), pattern, name


def acl_json(entries: Iterable[AclEntry]) -> bytes:
    """A resource znode's content (``AclEntry.toJsonCompatibleMap``), in a stable order."""
    acls = [
        {
            "principal": principal,
            "permissionType": _camel(PERMISSIONS[permission]),
            "operation": _camel(OPERATIONS[operation]),
            "host": host,
        }
        for principal, host, operation, permission in sorted(entries)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def parse_acl_json(path: str, data: bytes | None) -> frozenset[AclEntry]:
    """ValueError naming the znode when the content is not Kafka's."""
    if not data:
        return frozenset()
    try:
        value = json.loads(data)
        entries = value["acls"]
        out = set()
        for acl in entries:
            out.add(
                (
                    str(acl["principal"]),
                    str(acl["host"]),
                    _code(OPERATIONS, str(acl["operation"]), "operation", path),
                    _code(PERMISSIONS, str(acl["permissionType"]), "permission type", path),
                )
            )
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not Kafka's ACL JSON: {e}") from None
    return frozenset(out)


class SnapshotNodes(Protocol):
    """What the ACL and token readers need of a snapshot (``zk_data.ZkSnapshot`` is one)."""

    def children(self, path: str) -> tuple[str, ...]: ...
    def get(self, path: str) -> Any: ...


def _resource_paths(snapshot: SnapshotNodes) -> Iterator[str]:
    for root in (LITERAL_ROOT, PREFIXED_ROOT):
        for type_name in snapshot.children(root):
            if root == LITERAL_ROOT and type_name not in {
                _camel(n) for n in RESOURCE_TYPES.values()
            }:
                continue  # not a resource type (e.g. a stray child)
            for name in snapshot.children(f"{root}/{type_name}"):
                yield f"{root}/{type_name}/{name}"


def read_acls(snapshot: SnapshotNodes) -> dict[str, frozenset[AclEntry]]:
    """Every resource znode with ACLs in ``snapshot``."""
    out: dict[str, frozenset[AclEntry]] = {}
    for path in _resource_paths(snapshot):
        node = snapshot.get(path)
        entries = parse_acl_json(path, None if node is None else node.data)
        if entries:
            out[path] = entries
    return out


def acl_records(acls: ZkAcls) -> list[list[tuple[Any, int]]]:
    """The AccessControlEntryRecord batches of ``acls``, one per resource, by path."""
    batches: list[list[tuple[Any, int]]] = []
    for path in sorted(acls):
        resource_type, pattern, name = _parse_path(path)
        batch: list[tuple[Any, int]] = []
        for principal, host, operation, permission in sorted(acls[path]):
            key = f"{resource_type}|{pattern}|{name}|{principal}|{host}|{operation}|{permission}"
            record = r.AccessControlEntryRecord(
                id=uuid.uuid5(_ACL_ID_NAMESPACE, key),
                resource_type=resource_type,
                resource_name=name,
                pattern_type=pattern,
                principal=principal,
                host=host,
                operation=operation,
                permission_type=permission,
            )
            batch.append((record, 0))
        batches.append(batch)
    return batches


def desired_acls(records: Iterable[Any]) -> dict[str, frozenset[AclEntry]]:
    """The image's AccessControlEntryRecords as resource znodes (patterns ZooKeeper cannot
    hold -- none today -- are left out)."""
    out: dict[str, set[AclEntry]] = {}
    for rec in records:
        pattern = int(rec.pattern_type)
        resource_type = int(rec.resource_type)
        if pattern not in (PATTERN_LITERAL, PATTERN_PREFIXED):
            continue
        if resource_type not in RESOURCE_TYPES:
            continue
        path = resource_path(resource_type, pattern, str(rec.resource_name))
        out.setdefault(path, set()).add(
            (str(rec.principal), str(rec.host), int(rec.operation), int(rec.permission_type))
        )
    return {path: frozenset(entries) for path, entries in out.items()}


def acl_parents(snapshot: SnapshotNodes) -> set[str]:
    """The ACL container znodes (roots and type nodes) that exist in ``snapshot``."""
    out = set()
    for root in (LITERAL_ROOT, EXTENDED_ROOT, PREFIXED_ROOT):
        if snapshot.get(root) is not None:
            out.add(root)
    for root in (LITERAL_ROOT, PREFIXED_ROOT):
        out.update(f"{root}/{t}" for t in snapshot.children(root))
    return out


def is_resource(path: str) -> bool:
    """``path`` names one resource's ACLs (not a root or a type node)."""
    grandparent = path.rpartition("/")[0].rpartition("/")[0]
    return grandparent in (LITERAL_ROOT, PREFIXED_ROOT)


def acl_nodes(acls: ZkAcls, parents: Iterable[str]) -> dict[str, Any]:
    """``acls`` and the container znodes ``parents`` as znodes (a model of ZooKeeper)."""
    from pykraft.migration.zk_data import Znode

    nodes: dict[str, Any] = {}
    kids: dict[str, set[str]] = {parent: set() for parent in parents}
    for path in kids:
        parent, _, name = path.rpartition("/")
        if parent in kids:
            kids[parent].add(name)
    for path, entries in acls.items():
        parent, _, name = path.rpartition("/")
        kids.setdefault(parent, set()).add(name)
        nodes[path] = Znode(acl_json(entries), 0)
    for path, children in kids.items():
        nodes[path] = Znode(None, 0, tuple(sorted(children)))
    return nodes


def acl_ops(want: ZkAcls, have: SnapshotNodes) -> list[tuple[str, str, bytes]]:
    """(kind, path, data) writes that make ZooKeeper's ACL znodes say ``want``: parents
    created where missing, changed resources set, emptied ones deleted."""
    ops: list[tuple[str, str, bytes]] = []
    present = read_acls(have)
    made: set[str] = set()
    for path in sorted(want):
        if present.get(path) == want[path]:
            continue
        node = have.get(path)
        if node is None:
            parent = path.rpartition("/")[0]
            chain = []
            while parent and parent not in made and have.get(parent) is None:
                chain.append(parent)
                parent = parent.rpartition("/")[0]
            for missing in reversed(chain):
                ops.append(("create", missing, b""))
                made.add(missing)
            ops.append(("create", path, acl_json(want[path])))
        else:
            ops.append(("set", path, acl_json(want[path])))
    for path in sorted(set(_resource_paths(have)) - set(want)):
        ops.append(("delete", path, b""))
    return ops


def acl_notifications(ops: Iterable[tuple[str, str]]) -> list[tuple[str, bytes]]:
    """(sequential znode prefix, data) announcing each resource that ``ops`` (kind, path)
    wrote, as ``LiteralAclChangeStore``/``ExtendedAclChangeStore`` encode them."""
    out: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for _kind, path in ops:
        try:
            resource_type, pattern, name = _parse_path(path)
        except ValueError:
            continue
        if not is_resource(path) or path in seen:
            continue  # a root or type node, or announced already
        seen.add(path)
        enum_name = RESOURCE_TYPES[resource_type]
        if pattern == PATTERN_LITERAL:
            out.append((ACL_CHANGES, f"{enum_name}:{name}".encode()))
        else:
            event = {
                "version": 1,
                "resourceType": enum_name,
                "name": name,
                "patternType": "PREFIXED",
            }
            out.append((ACL_EXTENDED_CHANGES, json.dumps(event, separators=(",", ":")).encode()))
    return out
