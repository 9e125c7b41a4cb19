"""Where the controller calls the create-topic and alter-config policies
(``controller/policies.py``): a ``PolicyViolation`` becomes POLICY_VIOLATION with its message,
any other exception of the plug-in UNKNOWN_SERVER_ERROR; the controller itself goes on."""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.policies import (
    AlterConfigPolicy,
    AlterConfigRequestMetadata,
    CreateTopicPolicy,
    CreateTopicRequestMetadata,
    PolicyViolation,
)

__all__ = ["alter_config_check", "check_alter_config", "check_create_topic"]


def check_create_topic(
    policy: CreateTopicPolicy | None, request: CreateTopicRequestMetadata
) -> None:
    """Raises ApiError (POLICY_VIOLATION) when ``policy`` refuses the topic."""
    if policy is not None:
        _run(lambda: policy.validate(request))


def check_alter_config(
    policy: AlterConfigPolicy | None, request: AlterConfigRequestMetadata
) -> None:
    """Raises ApiError (POLICY_VIOLATION) when ``policy`` refuses the change."""
    if policy is not None:
        _run(lambda: policy.validate(request))


def alter_config_check(
    policy: AlterConfigPolicy | None, principal: str | None
) -> Callable[[int, str, dict[str, str | None]], None] | None:
    """The check ``controller/configs.py`` runs per resource, told who asks; None without a
    policy."""
    if policy is None:
        return None

    def check(resource_type: int, resource_name: str, changes: dict[str, str | None]) -> None:
        metadata = AlterConfigRequestMetadata(
            resource_type, resource_name, dict(changes), principal
        )
        check_alter_config(policy, metadata)

    return check


def _run(validate: object) -> None:
    assert callable(validate)
    try:
        validate()
    except PolicyViolation as e:
        raise ApiError(ErrorCode.policy_violation, str(e)) from None
    except Exception as e:  # a policy's own bug: the request fails, the controller does not
        raise ApiError(
            ErrorCode.unknown_server_error, f"{type(e).__name__} in the policy: {e}"
        ) from None
