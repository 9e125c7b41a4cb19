"""The kraft.version feature on the wire: UpdateFeatures (v0-2) naming it (D10), served by
the leader, and the ApiVersions probe (v0-4) by which a leader learns a would-be voter's
kraft.version range before adding it (D4).

UpdateFeatures v0 says AllowDowngrade, v1+ UpgradeType (1 upgrade, 2 safe and 3 unsafe
downgrade); v2 answers only at the top level. A request naming any other feature (or none)
is answered INVALID_REQUEST without reaching the core: the controller, when there is one,
takes those first.
"""

from __future__ import annotations

from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft import __version__
from pykraft.net.convert._common import (
    KRAFT_VERSION_FEATURE,
    Converters,
    RejectedRequest,
    check_answers,
    milliseconds,
)
from pykraft.protocol import ApiKey, ErrorCode, request_schema, response_schema
from pykraft.protocol.build import make
from pykraft.raft.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)

__all__ = ["API_VERSIONS_CONVERTERS", "UPDATE_FEATURES_CONVERTERS", "api_versions_request"]


def update_features_from_kio(message: RequestPayload, _local_id: int) -> UpdateFeaturesRequest:
    """UpdateFeatures naming exactly the kraft.version feature (the only one the core owns)."""
    m: Any = message
    version = int(message.__version__)
    updates = tuple(m.feature_updates)
    if len(updates) != 1 or str(updates[0].feature) != KRAFT_VERSION_FEATURE:
        names = ", ".join(str(u.feature) for u in updates) or "none"
        answer = UpdateFeaturesResponse(
            ErrorCode.invalid_request,
            f"only the {KRAFT_VERSION_FEATURE} feature can be updated here (got {names})",
        )
        raise RejectedRequest(
            "unsupported feature update",
            _results(answer, version, [str(u.feature) for u in updates]),
        )
    update = updates[0]
    if version == 0:
        allow_downgrade = bool(update.allow_downgrade)
    else:
        allow_downgrade = int(update.upgrade_type) != 1  # 2 safe, 3 unsafe downgrade
    return UpdateFeaturesRequest(
        timeout_ms=milliseconds(m.timeout),
        kraft_version=int(update.max_version_level),
        allow_downgrade=allow_downgrade,
        validate_only=bool(getattr(m, "validate_only", False)),
    )


def _results(response: UpdateFeaturesResponse, version: int, names: list[str]) -> ResponsePayload:
    """Kafka answers per feature (``Results``, v0-1) and at the top level; pykraft puts the
    outcome in both, for the features asked for."""
    return make(
        response_schema(ApiKey.UPDATE_FEATURES, version),
        {
            "throttle_time": 0,
            "error_code": response.error,
            "error_message": response.error_message,
            "results": [
                {
                    "feature": name,
                    "error_code": response.error,
                    "error_message": response.error_message,
                }
                for name in names
            ],
        },
    )


def update_features_to_kio(
    response: UpdateFeaturesResponse, version: int, _listener_name: str
) -> ResponsePayload:
    return _results(response, version, [KRAFT_VERSION_FEATURE])


def api_versions_request(version: int) -> RequestPayload:
    """ApiVersions as every pykraft client sends it (v3+ name the software)."""
    return api_versions_to_kio(ApiVersionsRequest(), version)


def api_versions_to_kio(_request: ApiVersionsRequest, version: int) -> RequestPayload:
    fields: dict[str, object] = {}
    if version >= 3:
        fields = {"client_software_name": "pykraft", "client_software_version": __version__}
    # v0-4 are kio's classes, v5 pykraft's generated one (``protocol.ext``): one lookup.
    result: RequestPayload = request_schema(ApiKey.API_VERSIONS, version)(**fields)
    return result


def api_versions_from_kio(
    message: ResponsePayload, _request: ApiVersionsRequest, _listener_name: str
) -> ApiVersionsResponse:
    """The peer's kraft.version range (None when it lists no such feature)."""
    check_answers(message, ApiKey.API_VERSIONS)
    m: Any = message
    versions = None
    for feature in getattr(m, "supported_features", ()):
        if str(feature.name) == KRAFT_VERSION_FEATURE:
            versions = (int(feature.min_version), int(feature.max_version))
    return ApiVersionsResponse(ErrorCode(m.error_code), versions)


UPDATE_FEATURES_CONVERTERS: Final = Converters(
    request_from_kio=update_features_from_kio,
    response_to_kio=update_features_to_kio,
)
API_VERSIONS_CONVERTERS: Final = Converters(
    request_to_kio=api_versions_to_kio,
    response_from_kio=api_versions_from_kio,
)
"""The listener answers ApiVersions itself; the core only sends it (the D4 probe)."""
