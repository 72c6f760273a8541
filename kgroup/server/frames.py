"""Request frames in, response frames out, with kafka-python's generated message classes.

Only the first eight bytes of a request header (API key, API version, correlation id) are
read by hand, because they decide which class decodes the rest and must be known to
answer a request that cannot be decoded.  Everything else is kafka-python's codec, except the
Metadata response (:mod:`kgroup.server.metadata_encoding`, the one answer that lists thousands of
entries), Produce at the versions :mod:`kgroup.server.produce_encoding` covers, Fetch requests at
the versions :mod:`kgroup.server.fetch_request_decoding` covers and Fetch responses at the versions
:mod:`kgroup.server.fetch_encoding` covers (the hot paths; each hands back to kafka-python's codec
whatever it does not cover, so errors stay the generic path's).
"""
from __future__ import annotations

import struct
from typing import Any, Optional

import attrs
from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import MetadataResponse

from kgroup.server.apis import SERVED_APIS
from kgroup.server import fetch_encoding, produce_encoding
from kgroup.server.fetch_encoding import encode_fetch_response
from kgroup.server.fetch_request_decoding import decode_fetch_request
from kgroup.server.hand_codec import RequestFrame
from kgroup.server.metadata_encoding import encode_metadata_frame
from kgroup.server.produce_encoding import decode_produce_request, encode_produce_response

__all__ = ["DecodedRequest", "FrameError", "UnsupportedRequestVersion", "decode_request", "encode_response"]

_HEADER_PREFIX = struct.Struct(">hhi")
#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
MAX_FRAME_BYTES = 104_857_600


class FrameError(Exception):
    """A request that cannot be answered: the connection is closed and one line logged."""


class UnsupportedRequestVersion(Exception):
    """A known API at a version the server does not answer; the request is answered with
    UNSUPPORTED_VERSION where its response can be encoded at that version."""

    def __init__(self, api_key: ApiKey, api_version: int, correlation_id: int, request: Any) -> None:
        low, high = SERVED_APIS[api_key].versions
        super().__init__(f"{api_key.name} v{api_version} is not supported (supported: v{low}-v{high})")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        #: The decoded request when kafka-python can decode that version, else None.
        self.request = request


@attrs.frozen
class DecodedRequest:
    api_key: ApiKey
    api_version: int
    correlation_id: int
    client_id: str
    request: Any


def peek_header(frame: RequestFrame) -> tuple:
    """(api key, api version, correlation id) of a request frame body; FrameError when too short."""
    if len(frame) < _HEADER_PREFIX.size:
        raise FrameError(f"request of {len(frame)} bytes is shorter than a request header")
    return _HEADER_PREFIX.unpack_from(frame)


def peek_client_id(frame: RequestFrame) -> Optional[str]:
    """The client id of a request frame body ("" when null), None when the bytes do not hold one.

    Request headers v1 and v2 both carry it as a classic (non-compact) string right after
    the first eight bytes, so it is readable even when the rest of the request is not."""
    if len(frame) < _HEADER_PREFIX.size + 2:
        return None
    (length,) = struct.unpack_from(">h", frame, _HEADER_PREFIX.size)
    if length < 0:
        return ""
    start = _HEADER_PREFIX.size + 2
    if len(frame) < start + length:
        return None
    try:
        return frame[start:start + length].decode("utf-8")
    except UnicodeDecodeError:
        return None


def decode_request(frame: RequestFrame) -> DecodedRequest:
    """Decode a request frame body (without its length prefix).

    Raises :class:`UnsupportedRequestVersion` for a known API at a version its
    :mod:`~kgroup.server.apis` module does not serve, and :class:`FrameError` for an unknown API
    key or bytes that do not decode (truncated, garbage, a null where the schema allows none).  Bytes
    after the request are ignored, as Kafka's ``AbstractRequest.parseRequest`` does."""
    raw_key, version, correlation_id = peek_header(frame)
    try:
        api_key = ApiKey(raw_key)
    except ValueError:
        raise FrameError(f"unknown API key {raw_key} (correlation id {correlation_id})") from None
    api = SERVED_APIS.get(api_key)
    if api is None:
        raise FrameError(
            f"API {api_key.name} (key {raw_key}) is not served (correlation id {correlation_id})")
    request_class = api.request_class
    if not api.supports(version):
        decoded = None
        if 0 <= version <= request_class.max_version:
            try:
                decoded = request_class.decode(frame, version=version, header=True)
            except Exception:
                decoded = None
            if decoded is not None and _null_field(request_class._struct, decoded, version) is not None:
                decoded = None
        raise UnsupportedRequestVersion(api_key, version, correlation_id, decoded)
    # The hot paths, by hand: (client id, request), or None to leave it to kafka-python's codec below.
    if api_key is ApiKey.Fetch:
        by_hand: Optional[tuple] = decode_fetch_request(frame, version)
    elif api_key is ApiKey.Produce:
        by_hand = decode_produce_request(frame, version)
    else:
        by_hand = None
    if by_hand is not None:
        return DecodedRequest(api_key, version, correlation_id, by_hand[0] or "", by_hand[1])
    try:
        request = request_class.decode(frame, version=version, header=True)
    except Exception as error:
        raise FrameError(f"{api_key.name} v{version} request (correlation id {correlation_id}) "
                         f"does not decode: {type(error).__name__}: {error}") from None
    null_field = _null_field(request_class._struct, request, version)
    if null_field is not None:
        # Kafka's generated readers throw "non-nullable field ... was serialized as null": an
        # unparseable request.  kafka-python decodes it as None, which no handler expects.
        raise FrameError(f"{api_key.name} v{version} request (correlation id {correlation_id}): "
                         f"non-nullable field {null_field} is null")
    client_id = request.header.client_id if request.header is not None else None
    return DecodedRequest(api_key, version, correlation_id, client_id or "", request)


_NULLABLE_TYPES = ("string", "bytes", "records")


def _null_field(struct: Any, value: Any, version: int, path: str = "") -> Optional[str]:
    """The path of the first field that is null though the schema says it cannot be at ``version``."""
    for field in struct.untagged_fields(version):
        item = getattr(value, field.name, None)
        where = f"{path}.{field.name}" if path else field.name
        if item is None:
            can_be_null = field.is_array() or field.is_struct() or field.type_str in _NULLABLE_TYPES
            if can_be_null and not field.nullable_for_version_q(version):
                return where
            continue
        if field.is_struct_array():
            for element in item:
                found = _null_field(field.array_of, element, version, where + "[]")
                if found is not None:
                    return found
        elif field.is_array():
            if field.array_of.type_str in _NULLABLE_TYPES and any(element is None for element in item):
                return where + "[]"
        elif field.is_struct():
            found = _null_field(field, item, version, where)
            if found is not None:
                return found
    return None


def encode_response(response: Any, version: int, correlation_id: int) -> bytes:
    """A response frame (length prefix, header, body) for ``response`` at ``version``."""
    if isinstance(response, MetadataResponse):
        # By hand, from the partition entries' cached bytes (issue 23: kafka-python's encoder took
        # 20-70 ms for a 10,000-partition topic); byte for byte what kafka-python writes.
        frame = encode_metadata_frame(response, version, correlation_id)
        if frame is not None:
            return frame
    # Each hand encoder answers None for a response that is not its API's or that it does not cover.
    frame = encode_fetch_response(response, version, correlation_id)
    if frame is None:
        frame = encode_produce_response(response, version, correlation_id)
    if frame is not None:
        return frame
    # A hand-built answer the hand encoder left: kafka-python's struct, for its generic codec.
    response = fetch_encoding.as_struct(produce_encoding.as_struct(response, version), version)
    if response.API_VERSION != version:
        response.API_VERSION = version  # before the header exists: kafka-python's setter would write into it
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def response_version_for(api_key: ApiKey, version: int) -> Optional[int]:
    """The version an error answer to ``api_key`` at ``version`` can be encoded at, or None."""
    request_class = SERVED_APIS[api_key].request_class
    if 0 <= version <= request_class.max_version:
        return version
    return None
