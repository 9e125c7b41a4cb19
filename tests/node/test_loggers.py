"""BROKER_LOGGER on a controller (issue 47 item 5, ``node/loggers.py``): the resource must
name this node, every change of a resource is checked before any is applied, validate-only
changes nothing, and Kafka 4.4.0's texts. Kafka's own kafka-configs drives it in
``tests/interop/test_kafka_cluster.py``."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

from pykraft.node.loggers import TRACE, alter_loggers, describe_loggers, only_loggers
from pykraft.protocol import ErrorCode

LOG = logging.getLogger("test.loggers")


def resource(name: str, *configs: tuple[str, int, str | None]) -> Any:
    return SimpleNamespace(
        resource_type=8,
        resource_name=name,
        configs=[SimpleNamespace(name=n, config_operation=op, value=v) for n, op, v in configs],
        configuration_keys=None,
    )


def test_describe_names_every_logger_with_its_effective_level() -> None:
    logging.getLogger("test.loggers.child").setLevel(logging.WARNING)
    (result,) = describe_loggers(3, [resource("3")])
    levels = {c["name"]: c["value"] for c in result["configs"]}
    assert levels["test.loggers.child"] == "WARN" and "root" in levels
    (wrong,) = describe_loggers(3, [resource("4")])
    assert wrong["error_code"] == ErrorCode.invalid_request
    assert wrong["error_message"] == "Unexpected broker id, expected 3 but received 4"


def test_a_resource_is_applied_whole_or_not_at_all() -> None:
    child = logging.getLogger("test.loggers.whole")
    child.setLevel(logging.INFO)
    (result,) = alter_loggers(
        3,
        [resource("3", ("test.loggers.whole", 0, "TRACE"), ("no.such.logger", 0, "DEBUG"))],
        False,
        LOG,
    )
    assert result["error_code"] == ErrorCode.invalid_config
    assert result["error_message"] == "Logger no.such.logger does not exist!"
    assert child.level == logging.INFO  # the valid change was not applied either
    (ok,) = alter_loggers(3, [resource("3", ("test.loggers.whole", 0, "TRACE"))], True, LOG)
    assert ok["error_code"] == ErrorCode.none and child.level == logging.INFO  # validate only
    alter_loggers(3, [resource("3", ("test.loggers.whole", 0, "TRACE"))], False, LOG)
    assert child.level == TRACE
    alter_loggers(3, [resource("3", ("test.loggers.whole", 1, None))], False, LOG)
    assert child.level == logging.NOTSET


def test_kafkas_refusals() -> None:
    cases = {
        "APPEND operation is not allowed for the BROKER_LOGGER resource": resource(
            "3", ("root", 2, "DEBUG")
        ),
        "Node id must be an integer, but it is: x": resource("x", ("root", 0, "DEBUG")),
        "Unexpected node id. Expected 3, but received 4": resource("4", ("root", 0, "DEBUG")),
    }
    for text, case in cases.items():
        (result,) = alter_loggers(3, [case], False, LOG)
        assert result["error_code"] == ErrorCode.invalid_request, text
        assert result["error_message"] == text


def test_only_whole_logger_requests_are_the_nodes() -> None:
    assert only_loggers([resource("3")])
    assert not only_loggers([resource("3"), SimpleNamespace(resource_type=4)])
    assert not only_loggers([])
