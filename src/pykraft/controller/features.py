"""The features a metadata controller finalizes (KIP-584): the levels it supports and
UpdateFeatures, checked as Kafka's ``FeatureControlManager`` does. Pure functions of the
image; the controller appends the records they return."""

from __future__ import annotations

from typing import Any, Final

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.versions import (
    DEFAULT_METADATA_VERSION,
    FEATURES,
    METADATA_VERSION,
    MINIMUM_METADATA_VERSION,
)

__all__ = [
    "MAX_METADATA_VERSION",
    "SUPPORTED_FEATURES",
    "check_bootstrap_level",
    "feature_update",
    "update_features",
]

# The metadata.version range pykraft's controller writes records for: up to 4.0-IV3 (25).
MAX_METADATA_VERSION: Final = DEFAULT_METADATA_VERSION.level
SUPPORTED_FEATURES: Final = {
    METADATA_VERSION: (MINIMUM_METADATA_VERSION.level, MAX_METADATA_VERSION),
    **FEATURES,
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def update_features(
    image: Image,
    version: int,
    request: Any,
    node_id: int,
    controller_features: dict[int, dict[str, tuple[int, int]]],
) -> tuple[RecordList, dict[str, Any]]:
    """UpdateFeatures: the FeatureLevelRecords and the response (all updates or none, as
    Kafka; none with ValidateOnly)."""
    validate_only = bool(getattr(request, "validate_only", False))
    records: RecordList = []
    results = []
    top: ApiError | None = None
    for update in request.feature_updates:
        try:
            record = feature_update(image, version, update, node_id, controller_features)
            if record is not None:
                records.append((record, 0))
            results.append({"feature": update.feature, "error_code": 0, "error_message": None})
        except ApiError as e:
            top = top or e
            results.append(
                {"feature": update.feature, "error_code": e.code, "error_message": e.message}
            )
    if top is not None:
        # Kafka applies all or nothing.
        records = []
    response: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "results": results,
    }
    if top is not None and version >= 2:
        response.update(error_code=top.code, error_message=top.message, results=())
    if validate_only:
        records = []
    return records, response


def _check_supported(
    image: Image,
    name: str,
    level: int,
    node_id: int,
    controller_features: dict[int, dict[str, tuple[int, int]]],
) -> None:
    """``level`` (0: the feature off) is within what this controller, every registered broker
    and every registered controller supports, in Kafka's words when it is not."""

    def refuse(who: str, low: int, high: int) -> ApiError:
        return ApiError(
            ErrorCode.invalid_update_version,
            f"Invalid update version {level} for feature {name}. {who} only supports "
            f"versions {low}-{high}",
        )

    low, high = SUPPORTED_FEATURES[name]
    if not (level == 0 or low <= level <= high):
        raise refuse(f"Local controller {node_id}", low, high)
    for broker in image.brokers.values():
        blow, bhigh = broker.features.get(name, (0, 0))
        if level != 0 and not blow <= level <= bhigh:
            raise refuse(f"Broker {broker.broker_id}", blow, bhigh)
    for controller_id, features in controller_features.items():
        if name in features:
            clow, chigh = features[name]
            if level != 0 and not clow <= level <= chigh:
                raise refuse(f"Controller {controller_id}", clow, chigh)


def check_bootstrap_level(level: int) -> None:
    """A metadata.version ``storage format`` may start a cluster at: exactly the levels this
    controller writes and UpdateFeatures accepts (``SUPPORTED_FEATURES``); ``ValueError``
    with one line otherwise."""
    low, high = SUPPORTED_FEATURES[METADATA_VERSION]
    if not low <= level <= high:
        from pykraft.metadata.versions import metadata_version

        low_name, high_name = metadata_version(low).name, metadata_version(high).name
        raise ValueError(
            f"metadata.version {level} is not one this controller runs: it supports "
            f"{low_name} ({low}) to {high_name} ({high}), the levels UpdateFeatures accepts"
        )


def feature_update(
    image: Image,
    version: int,
    update: Any,
    node_id: int,
    controller_features: dict[int, dict[str, tuple[int, int]]],
) -> r.FeatureLevelRecord | None:
    """One feature's new level, checked as Kafka's FeatureControlManager does (supported
    by this controller, every broker and every controller; downgrades only when asked, never
    unsafe for metadata.version); None when the level does not change."""
    name = update.feature
    level = int(update.max_version_level)
    if version == 0:
        upgrade_type = SAFE_DOWNGRADE if getattr(update, "allow_downgrade", False) else UPGRADE
    else:
        upgrade_type = int(update.upgrade_type)
    if name not in SUPPORTED_FEATURES:
        raise ApiError(
            ErrorCode.invalid_update_version,
            f"Invalid update version {level} for feature {name}. The controller does not "
            "support the given feature.",
        )
    current = image.features.get(name, 0)
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise ApiError(ErrorCode.invalid_update_version, f"Unknown upgrade type {upgrade_type}")
    if level < current:
        if upgrade_type == UPGRADE:
            raise ApiError(
                ErrorCode.invalid_update_version,
                f"Invalid update version {level} for feature {name}. Can't downgrade the "
                "version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.",
            )
        if name == METADATA_VERSION:
            raise ApiError(
                ErrorCode.invalid_update_version,
                f"Invalid metadata.version {level}. Unsafe metadata.version downgrades are "
                "not supported.",
            )
    if name == METADATA_VERSION and level < MINIMUM_METADATA_VERSION.level:
        raise ApiError(
            ErrorCode.invalid_update_version,
            f"Invalid metadata.version {level}. The minimum is {MINIMUM_METADATA_VERSION.level}.",
        )
    _check_supported(image, name, level, node_id, controller_features)
    if level == current:
        return None
    return r.FeatureLevelRecord(name=name, feature_level=level)
