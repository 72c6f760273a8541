"""ApiVersions (API key 18): every served API and its version range, read from the registry."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane


def api_versions_response(version: int, error: int = ErrorCode.NONE) -> Any:
    """The ApiVersions answer: every served API and its version range.

    KIP-511: a client asking with a newer ApiVersions version than the server knows gets a
    v0-shaped body with UNSUPPORTED_VERSION and the list, so it can retry with one it shares.
    """
    # Read at call time: the registry imports this module.
    from kgroup.server.apis import SUPPORTED_VERSIONS

    entry = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(
        version=version, error_code=int(error), throttle_time_ms=0,
        api_keys=[entry(version=version, api_key=int(key), min_version=low, max_version=high)
                  for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())])


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    return api_versions_response(version)


def _error_answer(request: Any, version: int, code: int) -> Any:
    return api_versions_response(version, code)


API = broker_api(ApiKey.ApiVersions, (0, 3), ApiVersionsRequest, ApiVersionsResponse, _handle, _error_answer)
