"""The one table of the metadata controller's APIs: a row per API with the versions served and
how the controller treats it -- whether any controller answers it from its image, whether a
broker may forward it in an Envelope, from which version a mutation quota refuses it, and
which of its fields are authorized item by item (as ``net/apis.py`` is for the quorum's APIs).

Theory of operation. The node advertises ``CONTROLLER_API_VERSIONS`` in ApiVersions and sends
every API of the table to the controller (``node/controller_host.py``); the admin client
negotiates from the same ranges; the controller answers reads (``READ_APIS``) on any
controller at the committed offset and everything else only while active
(``controller/quorum_controller.py``), applies KIP-599's strict quota from ``STRICT_FROM``
(``controller/mutation_quota.py``) and authorizes per item the fields named here
(``controller/authorization.py``); ``node/envelope.py`` unwraps only ``FORWARDABLE`` APIs.
Each derived name is read from the rows below, so an API's wire facts are written once.
Its behaviour is its row of the controller's table (``controller/handlers.HANDLERS``: the
handler, and the error answer of an API whose items carry the code; a test keeps both key
sets equal); the typed views of its request and response are generated from the versions
here (``protocol/view_gen.py``). The rule of each authorization is code of
``controller/authorization.py``.

Versions: Kafka 4.3.1's controller ranges, where kio has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pykraft.protocol.apis import ApiKey

__all__ = [
    "CONTROLLER_APIS",
    "CONTROLLER_API_VERSIONS",
    "FORWARDABLE",
    "READ_APIS",
    "STRICT_FROM",
    "ControllerApi",
    "authorized_items",
]


@dataclass(frozen=True, slots=True)
class ControllerApi:
    key: ApiKey
    versions: tuple[int, int]
    # Answered by any controller from its image at the committed offset (Kafka's read
    # events), not only by the active one.
    read: bool = False
    # May reach the controller inside a broker's Envelope (Kafka's forwardable APIs).
    forwardable: bool = True
    # KIP-599: the first version whose clients understand THROTTLING_QUOTA_EXCEEDED (older
    # ones are admitted and only throttled).
    strict_quota_from: int | None = None
    # (request field, response field): the items authorized one by one, a refused one
    # answered in the response field and the others handled.
    items: tuple[str, str] | None = None


_ROWS: Final = (
    ControllerApi(ApiKey.CREATE_TOPICS, (2, 7), strict_quota_from=6, items=("topics", "topics")),
    # DeleteTopics' items are ``topic_names`` before v6 (``authorized_items``).
    ControllerApi(ApiKey.DELETE_TOPICS, (1, 6), strict_quota_from=5, items=("topics", "responses")),
    ControllerApi(
        ApiKey.DESCRIBE_CONFIGS,
        (1, 4),
        read=True,
        forwardable=False,
        items=("resources", "results"),
    ),
    ControllerApi(ApiKey.ALTER_CONFIGS, (0, 2), items=("resources", "responses")),
    ControllerApi(
        ApiKey.CREATE_PARTITIONS, (0, 3), strict_quota_from=3, items=("topics", "results")
    ),
    ControllerApi(ApiKey.ELECT_LEADERS, (0, 2)),
    ControllerApi(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1), items=("resources", "responses")),
    ControllerApi(ApiKey.ALTER_PARTITION, (2, 3), forwardable=False),
    ControllerApi(ApiKey.UPDATE_FEATURES, (0, 2)),
    ControllerApi(ApiKey.BROKER_REGISTRATION, (0, 4), forwardable=False),
    ControllerApi(ApiKey.BROKER_HEARTBEAT, (0, 2), forwardable=False),
    ControllerApi(ApiKey.UNREGISTER_BROKER, (0, 0)),
    ControllerApi(ApiKey.ALLOCATE_PRODUCER_IDS, (0, 0)),
    ControllerApi(ApiKey.ASSIGN_REPLICAS_TO_DIRS, (0, 0), forwardable=False),  # JBOD
    ControllerApi(ApiKey.UNREGISTER_CONTROLLER, (0, 0)),  # Kafka 4.4.0, at 4.4-IV2
    ControllerApi(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 1)),
    ControllerApi(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 1)),  # v1: KIP-435 (protocol/ext.py)
    # Security (docs/kafka/SECURITY-CONTRACT.md 4-6); v0 of the ACL APIs left Kafka in 4.0.
    ControllerApi(ApiKey.DESCRIBE_ACLS, (1, 3), read=True, forwardable=False),
    ControllerApi(ApiKey.CREATE_ACLS, (1, 3)),
    ControllerApi(ApiKey.DELETE_ACLS, (1, 3)),
    ControllerApi(ApiKey.ALTER_CLIENT_QUOTAS, (0, 1)),
    ControllerApi(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, (0, 0)),
    ControllerApi(ApiKey.CREATE_DELEGATION_TOKEN, (1, 3)),
    ControllerApi(ApiKey.RENEW_DELEGATION_TOKEN, (1, 2)),
    ControllerApi(ApiKey.EXPIRE_DELEGATION_TOKEN, (1, 2)),
)

CONTROLLER_APIS: Final = {row.key: row for row in _ROWS}
CONTROLLER_API_VERSIONS: Final = {row.key: row.versions for row in _ROWS}
READ_APIS: Final = frozenset(row.key for row in _ROWS if row.read)
STRICT_FROM: Final[dict[int, int]] = {
    row.key: row.strict_quota_from for row in _ROWS if row.strict_quota_from is not None
}
# The quorum's APIs a broker may forward too (answered by the raft layer, ``net/apis.py``).
FORWARDABLE: Final = frozenset(row.key for row in _ROWS if row.forwardable) | {
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
}


def authorized_items(api_key: int, version: int) -> tuple[str, str] | None:
    """The (request field, response field) of the items authorized one by one, at
    ``version``; None when the whole request is authorized at once."""
    row = CONTROLLER_APIS.get(ApiKey(api_key)) if api_key in CONTROLLER_APIS else None
    if row is None or row.items is None:
        return None
    if api_key == ApiKey.DELETE_TOPICS and version < 6:
        return ("topic_names", row.items[1])
    return row.items
