"""What the hand-codec equivalence tests share: hypothesis settings and value strategies,
kafka-python's own framing of a response, unsigned varints and strings for test frames, and what
frames.decode_request makes of a request frame with and without the hand decoder."""
from __future__ import annotations

from typing import Any, Callable, Optional

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kgroup.server import frames
from kgroup.server.hand_codec import string_bytes, uvarint_bytes

SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=300,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
int16 = st.integers(-2**15, 2**15 - 1)
int32 = st.integers(-2**31, 2**31 - 1)
int64 = st.integers(-2**63, 2**63 - 1)
names = st.text(max_size=12)


def generic_response_frame(response: Any, version: int, correlation_id: int) -> bytes:
    """``response`` (a kafka-python struct) as kafka-python's codec frames it at ``version``."""
    response.API_VERSION = version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


#: Unsigned varints (KIP-482) for test frames: the encoders' writer, which the response tests check
#: byte for byte against kafka-python's, so request frames do not lean on the decoders under test.
uvarint = uvarint_bytes


def string(value: Optional[str], compact: bool) -> bytes:
    """A nullable string for test frames (classic, or compact when ``compact``): the encoders' writer."""
    return string_bytes(value, compact, nullable=True)


def decode_outcome(frame: bytes, values: Callable[[Any], Any]) -> Any:
    """What frames.decode_request makes of ``frame``: the request's ``values`` or the error raised."""
    try:
        decoded = frames.decode_request(frame)
    except Exception as error:  # noqa: BLE001 - the outcome under comparison
        return (type(error), str(error))
    return (decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id,
            values(decoded.request))


def generic_decode_outcome(frame: bytes, values: Callable[[Any], Any], hand_decoder: str,
                           monkeypatch: pytest.MonkeyPatch) -> Any:
    """:func:`decode_outcome` with frames' ``hand_decoder`` (its name) leaving every frame to
    kafka-python's codec: the generic path's outcome."""
    with monkeypatch.context() as patched:
        patched.setattr(frames, hand_decoder, lambda frame, version: None)
        return decode_outcome(frame, values)
