"""Log levels changed at run time, as Kafka's controllers change theirs (KIP-919; Kafka's
``RuntimeLoggerManager`` and ``ConfigHelper``): the BROKER_LOGGER config resource (type 8),
named by this node's id, through DescribeConfigs and IncrementalAlterConfigs sent to the node
itself (``kafka-configs --bootstrap-controller ... --entity-type broker-loggers --entity-name
<node id>``). This node's own state: nothing goes through the metadata log, and every
controller answers for itself, active or not.

The loggers are the process's Python loggers (``root`` and every logger created, such as
``pykraft.node.driver``); a level is one of Kafka's (``TRACE``, ``DEBUG``, ``INFO``, ``WARN``,
``ERROR``, ``FATAL``: Python's DEBUG - 5, DEBUG, INFO, WARNING, ERROR, CRITICAL). DescribeConfigs
lists each logger with its effective level (DYNAMIC_BROKER_LOGGER_CONFIG); SET gives a logger
a level, DELETE unsets it (it inherits again; never the root's); APPEND and SUBTRACT are
refused. Errors and texts are Kafka 4.4.0's (read from its jars).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from pykraft.controller.acls import Op
from pykraft.controller.authorization import CLUSTER_AUTHORIZATION_FAILED
from pykraft.controller.errors import ApiError
from pykraft.controller.log_listener import MetaLogListener
from pykraft.net.security import Session
from pykraft.node.request_fields import caller_of
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode
from pykraft.protocol.apis import response_schema
from pykraft.protocol.build import make

__all__ = [
    "LOGGER_RESOURCE",
    "alter_loggers",
    "describe_loggers",
    "logger_answer",
    "only_loggers",
]

log = logging.getLogger("pykraft.node.loggers")

LOGGER_RESOURCE: Final = 8  # ConfigResource.Type.BROKER_LOGGER
SOURCE_DYNAMIC_BROKER_LOGGER: Final = 6
TRACE: Final = logging.DEBUG - 5
_TO_PYTHON: Final = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
VALID_LOG_LEVELS: Final = ",".join(sorted(_TO_PYTHON))  # Kafka's VALID_LOG_LEVELS_STRING
_OPS: Final = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}
ROOT: Final = "root"


def logger_answer(
    listener: MetaLogListener | None, node_id: int, request: DecodedRequest, session: Session
) -> ResponsePayload | None:
    """This node's answer to a DescribeConfigs or IncrementalAlterConfigs whose resources
    are all BROKER_LOGGER ones (None for any other request): the principal needs
    DESCRIBE_CONFIGS (describe) or CLUSTER_ACTION (alter) on the cluster, as on Kafka's
    controller; while the image loads only a cluster without an authorizer passes."""
    api, version = request.api_key, request.api_version
    if api not in (ApiKey.DESCRIBE_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return None
    message: Any = request.message  # DescribeConfigs or IncrementalAlterConfigs, any version
    resources = message.resources
    if not only_loggers(resources):
        return None
    describe = api == ApiKey.DESCRIBE_CONFIGS
    op = Op.DESCRIBE_CONFIGS if describe else Op.CLUSTER_ACTION
    controller = None if listener is None or listener.cold else listener.controller
    if controller is None:
        allowed = listener is None or listener.controller.authorizer is None
    else:
        allowed = controller.allowed(caller_of(session, request.client_id), op)
    if not allowed:
        results: list[dict[str, Any]] = [
            {
                "error_code": ErrorCode.cluster_authorization_failed,
                "error_message": CLUSTER_AUTHORIZATION_FAILED,
                "resource_type": LOGGER_RESOURCE,
                "resource_name": str(r.resource_name),
                **({"configs": ()} if describe else {}),
            }
            for r in resources
        ]
    elif describe:
        results = describe_loggers(node_id, resources)
    else:
        results = alter_loggers(node_id, resources, bool(message.validate_only), log)
    key = "results" if describe else "responses"
    payload: ResponsePayload = make(
        response_schema(api, version), {"throttle_time": 0, key: results}
    )
    return payload


def only_loggers(resources: Iterable[Any]) -> bool:
    """Whether a request's resources are all BROKER_LOGGER ones (answered by this node)."""
    types = [int(r.resource_type) for r in resources]
    return bool(types) and all(t == LOGGER_RESOURCE for t in types)


def _kafka_level(level: int) -> str:
    for name, value in sorted(_TO_PYTHON.items(), key=lambda kv: -kv[1]):
        if level >= value:
            return name
    return "TRACE"


def _loggers() -> dict[str, logging.Logger]:
    manager = logging.Logger.manager
    found = {n: lg for n, lg in manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    return {ROOT: logging.getLogger(), **dict(sorted(found.items()))}


def _check_node(node_id: int, name: str, *, describe: bool) -> None:
    """The resource must name this node (Kafka's two texts: ConfigHelper's for describe,
    RuntimeLoggerManager's for alter)."""
    if describe and not name:
        raise ApiError(ErrorCode.invalid_request, "Broker id must not be empty")
    if not name.lstrip("-").isdigit():
        what = "Broker" if describe else "Node"
        raise ApiError(
            ErrorCode.invalid_request, f"{what} id must be an integer, but it is: {name}"
        )
    if int(name) != node_id:
        text = (
            f"Unexpected broker id, expected {node_id} but received {name}"
            if describe
            else f"Unexpected node id. Expected {node_id}, but received {name}"
        )
        raise ApiError(ErrorCode.invalid_request, text)


def describe_loggers(node_id: int, resources: Iterable[Any]) -> list[dict[str, Any]]:
    """DescribeConfigs results for BROKER_LOGGER resources."""
    results = []
    for resource in resources:
        name = str(resource.resource_name)
        result: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": LOGGER_RESOURCE,
            "resource_name": name,
            "configs": (),
        }
        try:
            _check_node(node_id, name, describe=True)
        except ApiError as e:
            results.append({**result, "error_code": e.code, "error_message": e.message})
            continue
        keys = resource.configuration_keys
        wanted = None if keys is None else set(keys)
        result["configs"] = [
            {
                "name": logger_name,
                "value": _kafka_level(logger.getEffectiveLevel()),
                "read_only": False,
                "config_source": SOURCE_DYNAMIC_BROKER_LOGGER,
                "is_sensitive": False,
                "config_type": 2,  # STRING
            }
            for logger_name, logger in _loggers().items()
            if wanted is None or logger_name in wanted
        ]
        results.append(result)
    return results


def _validated(node_id: int, resource: Any) -> list[tuple[logging.Logger, int | None]]:
    """The changes one resource asks for, all checked first: (logger, level; None unsets)."""
    _check_node(node_id, str(resource.resource_name), describe=False)
    known = _loggers()
    changes: list[tuple[logging.Logger, int | None]] = []
    for config in resource.configs:
        name, op = str(config.name), _OPS.get(int(config.config_operation))
        logger = known.get(name)
        if op in ("APPEND", "SUBTRACT"):
            raise ApiError(
                ErrorCode.invalid_request,
                f"{op} operation is not allowed for the BROKER_LOGGER resource",
            )
        if op is None:
            raise ApiError(
                ErrorCode.invalid_request,
                f"Unknown operation type {config.config_operation} is not allowed for the "
                "BROKER_LOGGER resource",
            )
        if logger is None:
            raise ApiError(ErrorCode.invalid_config, f"Logger {name} does not exist!")
        if op == "DELETE":
            if name == ROOT:
                raise ApiError(
                    ErrorCode.invalid_request,
                    "Removing the log level of the root logger is not allowed",
                )
            changes.append((logger, None))
            continue
        level = _TO_PYTHON.get(str(config.value))
        if level is None:
            raise ApiError(
                ErrorCode.invalid_config,
                f"Cannot set the log level of {name} to {config.value} as it is not a "
                f"supported log level. Valid log levels are {VALID_LOG_LEVELS}",
            )
        changes.append((logger, level))
    return changes


def alter_loggers(
    node_id: int, resources: Iterable[Any], validate_only: bool, log: logging.Logger
) -> list[dict[str, Any]]:
    """IncrementalAlterConfigs results for BROKER_LOGGER resources; each resource's changes
    are applied together once all of them are valid, and logged as Kafka logs them."""
    results = []
    for resource in resources:
        result: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": LOGGER_RESOURCE,
            "resource_name": str(resource.resource_name),
        }
        try:
            changes = _validated(node_id, resource)
        except ApiError as e:
            results.append({**result, "error_code": e.code, "error_message": e.message})
            continue
        if not validate_only:
            for logger, level in changes:
                logger.setLevel(logging.NOTSET if level is None else level)
                if level is None:
                    log.info("Unset the log level of %s", logger.name)
                else:
                    log.info("Updated the log level of %s to %s", logger.name, _kafka_level(level))
        results.append(result)
    return results
