"""Building ApiVersions responses from an :class:`ApiTable` and feature ranges.

Kafka's rules, kept here in one place:

* The response advertises every row of the table (sorted by api key).
* ``SupportedFeatures`` (tagged, v3+) lists the feature ranges this node can run, pykraft's
  ``kraft.version`` 0-1 by default (KIP-853).  In v3 a feature whose minimum is 0 is *omitted*
  (KAFKA-17011: older clients rejected a minimum of 0; the schema says "in v0-v3, features
  with MinSupportedVersion = 0 are omitted"), so ``kraft.version`` appears from v4 on.
* ``FinalizedFeatures`` (v3+) carries the cluster-wide levels when known, with min = max =
  the level, as Kafka writes them since KIP-778; the epoch is -1 while unknown.
* A request at a version the server does not know is answered at v0 with
  ``UNSUPPORTED_VERSION`` and, as KIP-511 prescribes, only the ApiVersions row, so the client
  can retry at a version both sides speak.
* v5 (KIP-1242, Kafka 4.4; kio stops at v4, so pykraft's generated class from Kafka's JSON)
  adds ``ClusterId`` and ``NodeId`` to the request. A request is valid (Kafka's
  ``ApiVersionsRequest.isValid``) when, from v5, both or neither are set, and, from v3, the
  client software name and version match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``;
  a controller answers an invalid one ``INVALID_REQUEST`` with no rows (Kafka's
  ``ControllerApis``). Only brokers compare the two fields with their own (and answer
  ``REBOOTSTRAP_REQUIRED``); a controller ignores them, and so does pykraft.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from typing import Final, TypeAlias, TypeVar, cast

import kio.schema.api_versions.v0.response as v0
import kio.schema.api_versions.v1.response as v1
import kio.schema.api_versions.v2.response as v2
import kio.schema.api_versions.v3.response as v3
import kio.schema.api_versions.v4.response as v4
from kio.static.primitive import i16, i32Timedelta, i64
from kio.static.protocol import ResponsePayload

from .apis import ApiKey, ApiTable, ApiVersionRange, response_schema
from .errors import ErrorCode
from .generated import api_versions_response as v5

__all__ = [
    "API_VERSIONS_ROW",
    "KRAFT_SUPPORTED_FEATURES",
    "ApiVersionsResponse",
    "api_versions_request_valid",
    "build_api_versions_response",
    "unsupported_api_versions_response",
]

ApiVersionsResponse: TypeAlias = (
    v0.ApiVersionsResponse
    | v1.ApiVersionsResponse
    | v2.ApiVersionsResponse
    | v3.ApiVersionsResponse
    | v4.ApiVersionsResponse
)
"""kio's ApiVersions responses (v0-4); v5 is pykraft's generated class, typed as the
``ResponsePayload`` the wire layer takes (``protocol.ext``)."""

API_VERSIONS_ROW: Final = ApiVersionRange(ApiKey.API_VERSIONS, 0, 5)
"""The versions of ApiVersions this module answers (v0-5, as Kafka 4.4): every listener serves
this row."""

_SOFTWARE_NAME_VERSION: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

KRAFT_SUPPORTED_FEATURES: Final[Mapping[str, tuple[int, int]]] = {"kraft.version": (0, 1)}
"""Feature name -> (min, max) supported version: KIP-853's kraft.version 0 (static voters)
and 1 (dynamic voters)."""


A = TypeVar(
    "A", v0.ApiVersion, v1.ApiVersion, v2.ApiVersion, v3.ApiVersion, v4.ApiVersion, v5.ApiVersion
)


def api_versions_request_valid(api_version: int, request: object) -> bool:
    """Kafka's ``ApiVersionsRequest.isValid`` (see the module docstring)."""
    if api_version >= 5:
        cluster_id = getattr(request, "cluster_id", None)
        node_id = int(getattr(request, "node_id", -1))
        if (cluster_id is None) != (node_id == -1):
            return False
    if api_version >= 3:
        name = str(getattr(request, "client_software_name", ""))
        version = str(getattr(request, "client_software_version", ""))
        return bool(_SOFTWARE_NAME_VERSION.fullmatch(name)) and bool(
            _SOFTWARE_NAME_VERSION.fullmatch(version)
        )
    return True


def _api_keys(row_type: type[A], apis: Iterable[ApiVersionRange]) -> tuple[A, ...]:
    return tuple(
        row_type(
            api_key=i16(r.api_key), min_version=i16(r.min_version), max_version=i16(r.max_version)
        )
        for r in apis
    )


def _v3_v4(
    api_version: int,
    apis: ApiTable,
    error_code: ErrorCode,
    throttle_time: i32Timedelta,
    supported_features: Mapping[str, tuple[int, int]],
    finalized_features: Mapping[str, int],
    finalized_features_epoch: int,
    zk_migration_ready: bool,
) -> ApiVersionsResponse:
    mod = v3 if api_version == 3 else v4
    # v3 omits features whose minimum is 0 (KAFKA-17011, see the module docstring).
    supported = {
        name: (lo, hi)
        for name, (lo, hi) in supported_features.items()
        if api_version >= 4 or lo != 0
    }
    response: ApiVersionsResponse = mod.ApiVersionsResponse(
        error_code=error_code,
        api_keys=_api_keys(mod.ApiVersion, apis),
        throttle_time=throttle_time,
        supported_features=tuple(
            mod.SupportedFeatureKey(name=name, min_version=i16(lo), max_version=i16(hi))
            for name, (lo, hi) in sorted(supported.items())
        ),
        finalized_features_epoch=i64(finalized_features_epoch),
        finalized_features=tuple(
            mod.FinalizedFeatureKey(
                name=name, max_version_level=i16(level), min_version_level=i16(level)
            )
            for name, level in sorted(finalized_features.items())
        ),
        zk_migration_ready=zk_migration_ready,
    )
    return response


def _v5(
    apis: ApiTable,
    error_code: ErrorCode,
    throttle_time_ms: int,
    supported_features: Mapping[str, tuple[int, int]],
    finalized_features: Mapping[str, int],
    finalized_features_epoch: int,
    zk_migration_ready: bool,
) -> ResponsePayload:
    """pykraft's generated class (``ext``): plain ints, Kafka's field names."""
    cls = cast("type[v5.ApiVersionsResponse]", response_schema(ApiKey.API_VERSIONS, 5))
    return cast(
        ResponsePayload,
        cls(
            error_code=int(error_code),
            api_keys=_api_keys(v5.ApiVersion, apis),
            throttle_time_ms=throttle_time_ms,
            supported_features=tuple(
                v5.SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                for name, (lo, hi) in sorted(supported_features.items())
            ),
            finalized_features_epoch=finalized_features_epoch,
            finalized_features=tuple(
                v5.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                for name, level in sorted(finalized_features.items())
            ),
            zk_migration_ready=zk_migration_ready,
        ),
    )


def build_api_versions_response(
    api_version: int,
    apis: ApiTable,
    *,
    error_code: ErrorCode = ErrorCode.none,
    throttle_time_ms: int = 0,
    supported_features: Mapping[str, tuple[int, int]] = KRAFT_SUPPORTED_FEATURES,
    finalized_features: Mapping[str, int] | None = None,
    finalized_features_epoch: int = -1,
    zk_migration_ready: bool = False,
) -> ApiVersionsResponse | ResponsePayload:
    """The ApiVersions response at ``api_version`` advertising ``apis`` and the features.

    ``finalized_features`` maps feature name -> finalized level.
    """
    throttle_time = i32Timedelta.parse(datetime.timedelta(milliseconds=throttle_time_ms))
    match api_version:
        case 0:
            return v0.ApiVersionsResponse(
                error_code=error_code, api_keys=_api_keys(v0.ApiVersion, apis)
            )
        case 1:
            return v1.ApiVersionsResponse(
                error_code=error_code,
                api_keys=_api_keys(v1.ApiVersion, apis),
                throttle_time=throttle_time,
            )
        case 2:
            return v2.ApiVersionsResponse(
                error_code=error_code,
                api_keys=_api_keys(v2.ApiVersion, apis),
                throttle_time=throttle_time,
            )
        case 3 | 4:
            return _v3_v4(
                api_version,
                apis,
                error_code,
                throttle_time,
                supported_features,
                finalized_features or {},
                finalized_features_epoch,
                zk_migration_ready,
            )
        case 5:
            return _v5(
                apis,
                error_code,
                throttle_time_ms,
                supported_features,
                finalized_features or {},
                finalized_features_epoch,
                zk_migration_ready,
            )
    raise ValueError(f"no ApiVersions response v{api_version}")


def unsupported_api_versions_response(apis: ApiTable) -> v0.ApiVersionsResponse:
    """Kafka's answer to an ApiVersions request at a version it does not know (KIP-511)."""
    row = apis.get(ApiKey.API_VERSIONS)
    return v0.ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=_api_keys(v0.ApiVersion, () if row is None else (row,)),
    )
