"""ACLs: Kafka's StandardAuthorizer over the metadata log, and the CreateAcls / DeleteAcls /
DescribeAcls requests that change and list them (docs/kafka/SECURITY-CONTRACT.md 5).

Theory of operation. ACL bindings live in the log as AccessControlEntryRecord (added, with a
random id) and RemoveAccessControlEntryRecord (by id); the image's ACL part keeps the live ones
with an index (``metadata/parts/acls.py``), so every controller — and every broker reading the
same log — enforces the same set. :class:`StandardAuthorizer` decides one (principal, host,
operation, resource) as Kafka's StandardAuthorizerData does: super users first; then the
bindings on that resource type whose name matches (LITERAL exact, LITERAL ``*``, PREFIXED
prefix: ``Acls.matching``, a lookup, not a walk), whose principal is the caller's or
``User:*`` and whose host is the caller's or ``*``; a matching DENY of the operation (or ALL)
wins; else an ALLOW of it (or of one that implies it: READ/WRITE/DELETE/ALTER imply DESCRIBE,
ALTER_CONFIGS implies DESCRIBE_CONFIGS); else, when no binding at all names the resource,
``allow.everyone.if.no.acl.found``. DescribeAcls and DeleteAcls filters that name a resource
read the same index.

Pure: the caller passes the image; ids come from the controller's seeded randomness.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.config import RandomSource
from pykraft.controller.errors import MAX_RECORDS_PER_USER_OP
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.parts.acls import StandardAcl
from pykraft.metadata.versions import IBP_4_4_IV1
from pykraft.protocol import views

__all__ = [
    "CLUSTER_NAME",
    "Op",
    "Res",
    "StandardAuthorizer",
    "bindings",
    "create_acls",
    "delete_acls",
    "describe_acls",
]


class Res:
    """ResourceType codes (kafka-clients)."""

    UNKNOWN, ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = range(8)


class Pattern:
    """PatternType codes."""

    UNKNOWN, ANY, MATCH, LITERAL, PREFIXED = range(5)


class Op:
    """AclOperation codes."""

    (
        UNKNOWN,
        ANY,
        ALL,
        READ,
        WRITE,
        CREATE,
        DELETE,
        ALTER,
        DESCRIBE,
        CLUSTER_ACTION,
        DESCRIBE_CONFIGS,
        ALTER_CONFIGS,
        IDEMPOTENT_WRITE,
        CREATE_TOKENS,
        DESCRIBE_TOKENS,
        TWO_PHASE_COMMIT,
    ) = range(16)


class Perm:
    UNKNOWN, ANY, DENY, ALLOW = range(4)


CLUSTER_NAME: Final = "kafka-cluster"
WILDCARD: Final = "*"
WILDCARD_PRINCIPAL: Final = "User:*"

# An ALLOW of any of these grants the key operation too (StandardAuthorizerData).
_IMPLIED_BY: Final = {
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
}


def _matching(acl: StandardAcl) -> views.delete_acls_response.DeleteAclsMatchingAcl:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": acl.resource_type,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation,
        "permission_type": acl.permission_type,
    }


def bindings(image: Image) -> Iterator[tuple[uuid.UUID, StandardAcl]]:
    """Every live ACL of the image, with its id."""
    return iter(image.acls.by_id.items())


class StandardAuthorizer:
    """Kafka's StandardAuthorizer decision (see the module docstring)."""

    def __init__(self, super_users: Iterable[str], allow_everyone_if_no_acl_found: bool) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone = allow_everyone_if_no_acl_found

    def authorize(
        self,
        image: Image,
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        resource_name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        any_acl = False
        allowed = False
        implied = _IMPLIED_BY.get(operation, frozenset({operation}))
        for _, acl in image.acls.matching(resource_type, resource_name):
            any_acl = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.host not in (host, WILDCARD) and not _in_cidr(host, acl.host):
                continue
            if acl.permission_type == Perm.DENY:
                if acl.operation in (operation, Op.ALL):
                    return False
            elif acl.operation == Op.ALL or acl.operation in implied:
                allowed = True
        if allowed:
            return True
        return not any_acl and self.allow_everyone


# -- CreateAcls / DeleteAcls / DescribeAcls -----------------------------------------------------


def _in_cidr(host: str, pattern: str) -> bool:
    """Kafka 4.4's CIDR host patterns (``CidrUtils``): ``host`` is an address in the network
    ``pattern`` names (``10.0.0.0/8``)."""
    if "/" not in pattern:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return False


def _host_problem(host: str, metadata_version: int) -> str | None:
    """Kafka 4.4.0's ``validateHostPattern``: a CIDR host needs 4.4-IV1 and must parse."""
    if "/" not in host:
        return None
    if metadata_version < IBP_4_4_IV1:
        return "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."
    try:
        ipaddress.ip_network(host, strict=False)
    except ValueError as e:
        return f"Invalid CIDR notation '{host}': {e}"
    return None


def _invalid(binding: StandardAcl, metadata_version: int) -> str | None:
    """Kafka's AclApis + AclControlManager.validateNewAcl checks, first failing message."""
    if binding.resource_type == Res.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not binding.resource_name:
        return "Invalid empty resource name"
    if binding.resource_type in (Res.UNKNOWN, Res.ANY) or not 0 <= binding.resource_type <= 7:
        return f"Invalid resourceType {binding.resource_type}"
    if binding.pattern_type not in (Pattern.LITERAL, Pattern.PREFIXED):
        return f"Invalid patternType {binding.pattern_type}"
    if binding.operation in (Op.UNKNOWN, Op.ANY) or not 0 <= binding.operation <= 15:
        return f"Invalid operation {binding.operation}"
    if binding.permission_type not in (Perm.ALLOW, Perm.DENY):
        return f"Invalid permissionType {binding.permission_type}"
    kind, sep, name = binding.principal.partition(":")
    if not sep or not kind or not name:
        return f"Could not parse principal from `{binding.principal}` (no colon is present)."
    return _host_problem(binding.host, metadata_version)


def _new_id(
    rng: RandomSource, used: set[uuid.UUID], live: dict[uuid.UUID, StandardAcl]
) -> uuid.UUID:
    while True:
        acl_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        if acl_id not in used and acl_id not in live:
            used.add(acl_id)
            return acl_id


def create_acls(
    image: Image, rng: RandomSource, request: views.CreateAclsRequest
) -> tuple[RecordList, views.CreateAclsResponse]:
    """One result per creation, in order; an ACL already present (or repeated) is a success
    written once (Kafka 4.3.1)."""
    acls = image.acls
    added: set[StandardAcl] = set()
    used: set[uuid.UUID] = set()
    records: RecordList = []
    results: list[views.create_acls_response.AclCreationResult] = []
    for creation in request.creations:
        binding = StandardAcl(
            int(creation.resource_type),
            str(creation.resource_name),
            int(creation.resource_pattern_type),
            str(creation.principal),
            str(creation.host),
            int(creation.operation),
            int(creation.permission_type),
        )
        problem = _invalid(binding, image.metadata_version or 0)
        if problem is not None:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": problem})
            continue
        if binding not in acls.ids and binding not in added:
            acl_id = _new_id(rng, used, acls.by_id)
            added.add(binding)
            records.append((binding.record(acl_id), 0))
        results.append({"error_code": ErrorCode.none, "error_message": None})
    return records, {"throttle_time": 0, "results": results}


@dataclass(frozen=True, slots=True)
class AclFilter:
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    @classmethod
    def of(cls, f: views.delete_acls.DeleteAclsFilter | views.DescribeAclsRequest) -> AclFilter:
        """From a DeleteAcls filter or a DescribeAcls request (the same ``*_filter`` fields)."""
        return cls(
            int(f.resource_type_filter),
            f.resource_name_filter,
            int(f.pattern_type_filter),
            f.principal_filter,
            f.host_filter,
            int(f.operation),
            int(f.permission_type),
        )

    def candidates(self, image: Image) -> Iterator[tuple[uuid.UUID, StandardAcl]]:
        """The ACLs this filter can match, from the ACL part's index when the filter names a
        resource type and name (a superset: ``matches`` still decides), else all of them."""
        name, kind = self.resource_name, self.resource_type
        acls = image.acls
        if name is None or kind == Res.ANY:
            return bindings(image)
        if self.pattern_type == Pattern.MATCH:
            return acls.matching(kind, name)
        if self.pattern_type in (Pattern.LITERAL, Pattern.PREFIXED):
            return acls.on_pattern(kind, name, self.pattern_type)
        return bindings(image)

    def matches(self, acl: StandardAcl) -> bool:
        """Kafka's AclBindingFilter.matches (MATCH: LITERAL equal or ``*``, or PREFIXED
        prefix of the name; ANY: any pattern with the exact name)."""
        if self.resource_type != Res.ANY and self.resource_type != acl.resource_type:
            return False
        name = self.resource_name
        if self.pattern_type == Pattern.MATCH:
            if name is not None and not (
                (acl.pattern_type == Pattern.LITERAL and acl.resource_name in (name, WILDCARD))
                or (acl.pattern_type == Pattern.PREFIXED and name.startswith(acl.resource_name))
            ):
                return False
        else:
            if self.pattern_type != Pattern.ANY and self.pattern_type != acl.pattern_type:
                return False
            if name is not None and name != acl.resource_name:
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Op.ANY and self.operation != acl.operation:
            return False
        return self.permission_type == Perm.ANY or self.permission_type == acl.permission_type


def delete_acls(
    image: Image, request: views.DeleteAclsRequest
) -> tuple[RecordList, views.DeleteAclsResponse]:
    """Per filter, every matching ACL is removed (one RemoveAccessControlEntryRecord each)
    and listed; at most MAX_RECORDS_PER_USER_OP removals per request."""
    records: RecordList = []
    removed: set[uuid.UUID] = set()
    results: list[views.delete_acls_response.DeleteAclsFilterResult] = []
    for f in request.filters:
        flt = AclFilter.of(f)
        matching = [(i, acl) for i, acl in flt.candidates(image) if flt.matches(acl)]
        if len(removed) + len(matching) > MAX_RECORDS_PER_USER_OP:
            results.append(
                {
                    "error_code": ErrorCode.invalid_request,
                    "error_message": "Cannot remove more than "
                    f"{MAX_RECORDS_PER_USER_OP} acls in a single delete operation.",
                    "matching_acls": [],
                }
            )
            continue
        for acl_id, _ in matching:
            if acl_id not in removed:
                removed.add(acl_id)
                records.append((r.RemoveAccessControlEntryRecord(id=acl_id), 0))
        results.append(
            {
                "error_code": ErrorCode.none,
                "error_message": None,
                "matching_acls": [_matching(acl) for _, acl in matching],
            }
        )
    return records, {"throttle_time": 0, "filter_results": results}


def describe_acls(image: Image, request: views.DescribeAclsRequest) -> views.DescribeAclsResponse:
    """The bindings a filter matches, grouped by resource pattern."""
    flt = AclFilter.of(request)
    groups: dict[tuple[int, str, int], list[views.describe_acls_response.AclDescription]] = {}
    for _, acl in sorted(flt.candidates(image), key=lambda item: str(item[0])):
        if flt.matches(acl):
            groups.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                {
                    "principal": acl.principal,
                    "host": acl.host,
                    "operation": acl.operation,
                    "permission_type": acl.permission_type,
                }
            )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "resources": [
            {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
            for (t, n, p), acls in sorted(groups.items())
        ],
    }


Authorize = Callable[[int, int, str], bool]
"""``allowed(operation, resource_type, resource_name)`` for the request's principal."""
