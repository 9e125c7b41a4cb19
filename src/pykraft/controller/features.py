"""The features a metadata controller finalizes (KIP-584): the levels it supports and
UpdateFeatures, checked as Kafka's ``FeatureControlManager`` does. Pure functions of the
image; the controller appends the records they return."""

from __future__ import annotations

from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.partitions import MIN_INSYNC
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE, Image
from pykraft.metadata.versions import (
    ELR_VERSION,
    FEATURES,
    METADATA_VERSION,
    MINIMUM_METADATA_VERSION,
    dependency_error,
    metadata_changed_between,
    metadata_version,
)
from pykraft.protocol import views

__all__ = [
    "MAX_METADATA_VERSION",
    "SUPPORTED_FEATURES",
    "check_bootstrap_level",
    "elr_safety_records",
    "feature_update",
    "update_features",
]

# The metadata.version range pykraft's controller writes records for: up to 4.4-IV2 (33),
# Kafka 4.4.0's newest, the levels whose records and rules it implements (eligible leader
# replicas from 4.1-IV0, cordoned log directories at 4.3-IV0, CIDR ACL hosts at 4.4-IV1,
# UnregisterController at 4.4-IV2).
MAX_METADATA_VERSION: Final = 33

SUPPORTED_FEATURES: Final = {
    METADATA_VERSION: (MINIMUM_METADATA_VERSION.level, MAX_METADATA_VERSION),
    **FEATURES,
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
KRAFT_VERSION: Final = "kraft.version"


def update_features(
    image: Image,
    version: int,
    request: views.UpdateFeaturesRequest,
    node_id: int,
    controller_features: dict[int, dict[str, tuple[int, int]]],
    static_min_insync: int = 1,
    kraft_version: int = 0,
) -> tuple[RecordList, views.UpdateFeaturesResponse]:
    """UpdateFeatures: the FeatureLevelRecords and the response (all updates or none, as
    Kafka; none with ValidateOnly). Each level is checked against the *proposed* levels (the
    finalized ones with every requested level applied), so an upgrade of metadata.version and
    of a feature that needs it may come in one request (``kafka-features upgrade
    --release-version``). Turning eligible leader replicas on adds Kafka's safety records."""
    validate_only = bool(getattr(request, "validate_only", False))
    proposed = {**image.features, KRAFT_VERSION: kraft_version}
    for update in request.feature_updates:
        proposed[update.feature] = int(update.max_version_level)
    records: RecordList = []
    results: list[views.update_features_response.UpdatableFeatureResult] = []
    top: ApiError | None = None
    for update in request.feature_updates:
        try:
            if update.feature == KRAFT_VERSION:
                _kraft_version_update(update, kraft_version)
                record = None
            else:
                record = feature_update(
                    image, version, update, node_id, controller_features, proposed
                )
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
    elif proposed.get(ELR_VERSION, 0) > 0 and any(
        u.feature == ELR_VERSION for u in request.feature_updates
    ):
        records += elr_safety_records(image, static_min_insync)
    response: views.UpdateFeaturesResponse = {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "results": results,
    }
    if top is not None and version >= 2:
        response.update({"error_code": top.code, "error_message": top.message, "results": ()})
    if validate_only:
        records = []
    return records, response


def _kraft_version_update(update: views.update_features.FeatureUpdateKey, current: int) -> None:
    """kraft.version beside other features (``kafka-features upgrade --release-version``
    sends it with them): the quorum's level, which the node raised first when the request
    asked for more (``node/kraft_upgrade.py``, Kafka's ``upgradeKRaftVersion`` within the
    same UpdateFeatures), is accepted as it is; a lower level is a downgrade, which kraft.version
    does not have."""
    level = int(update.max_version_level)
    if level != current:
        raise _invalid(
            KRAFT_VERSION,
            level,
            f"kraft.version cannot be downgraded from {current} to {level}",
        )


def elr_safety_records(image: Image, static_min_insync: int) -> RecordList:
    """Kafka's ``maybeGenerateElrSafetyRecords``, when eligible leader replicas are turned on:
    a cluster-wide ``min.insync.replicas`` (the controller's own setting) if the cluster has
    none, and every broker's own ``min.insync.replicas`` deleted (with ELR only the cluster's
    and the topics' count)."""
    out: RecordList = []
    if MIN_INSYNC not in image.configs.get((BROKER_RESOURCE, ""), {}):
        out.append(
            (
                r.ConfigRecord(
                    resource_type=BROKER_RESOURCE,
                    resource_name="",
                    name=MIN_INSYNC,
                    value=str(static_min_insync),
                ),
                0,
            )
        )
    for (kind, name), configs in sorted(image.configs.items()):
        if kind == BROKER_RESOURCE and name and MIN_INSYNC in configs:
            out.append(
                (
                    r.ConfigRecord(
                        resource_type=BROKER_RESOURCE,
                        resource_name=name,
                        name=MIN_INSYNC,
                        value=None,
                    ),
                    0,
                )
            )
    return out


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
        low_name, high_name = metadata_version(low).name, metadata_version(high).name
        raise ValueError(
            f"metadata.version {level} is not one this controller runs: it supports "
            f"{low_name} ({low}) to {high_name} ({high}), the levels UpdateFeatures accepts"
        )


def _invalid(name: str, level: int, reason: str) -> ApiError:
    return ApiError(
        ErrorCode.invalid_update_version,
        f"Invalid update version {level} for feature {name}. {reason}",
    )


def _check_metadata_version(current: int, level: int, upgrade_type: int) -> None:
    """Kafka's ``updateMetadataVersion``: a known level; a downgrade only SAFE and only when
    no level on the way down changed the metadata."""
    try:
        target = metadata_version(level)
    except ValueError:
        raise ApiError(
            ErrorCode.invalid_update_version,
            f"Invalid metadata.version {level}. Unknown metadata.version {level}.",
        ) from None
    if level >= current or current == 0:
        return
    was = metadata_version(current).name if current >= MINIMUM_METADATA_VERSION.level else current
    if upgrade_type == UNSAFE_DOWNGRADE:
        reason = "Unsafe metadata downgrade is not supported in this version."
    elif metadata_changed_between(level, current):
        reason = (
            "Refusing to perform the requested downgrade because it might delete metadata "
            "information."
        )
    else:
        return
    raise ApiError(
        ErrorCode.invalid_update_version,
        f"Unsupported metadata.version downgrade from {was} to {target.name}. {reason}",
    )


def feature_update(
    image: Image,
    version: int,
    update: views.update_features.FeatureUpdateKey,
    node_id: int,
    controller_features: dict[int, dict[str, tuple[int, int]]],
    proposed: dict[str, int] | None = None,
) -> r.FeatureLevelRecord | None:
    """One feature's new level, checked as Kafka's FeatureControlManager does (supported
    by this controller, every broker and every controller; downgrades only when asked, and
    for metadata.version only safe ones across levels that did not change the metadata; the
    feature's dependencies met by the ``proposed`` levels); None when the level does not
    change."""
    name = update.feature
    level = int(update.max_version_level)
    if version == 0:
        upgrade_type = SAFE_DOWNGRADE if getattr(update, "allow_downgrade", False) else UPGRADE
    else:
        upgrade_type = int(getattr(update, "upgrade_type", UPGRADE))  # v1+
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise _invalid(name, level, "The controller does not support the given upgrade type.")
    if name not in SUPPORTED_FEATURES:
        raise _invalid(name, level, "The controller does not support the given feature.")
    if level < 0:
        raise _invalid(name, level, "A feature version cannot be less than 0.")
    current = image.features.get(name, 0)
    if level < current and upgrade_type == UPGRADE:
        raise _invalid(
            name,
            level,
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade.",
        )
    if level > current and upgrade_type != UPGRADE:
        raise _invalid(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        _check_metadata_version(current, level, upgrade_type)
    _check_supported(image, name, level, node_id, controller_features)
    reason = dependency_error(name, level, image.features if proposed is None else proposed)
    if reason is not None:
        raise _invalid(name, level, reason)
    if level == current:
        return None
    return r.FeatureLevelRecord(name=name, feature_level=level)
