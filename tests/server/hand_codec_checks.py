"""What the hand-codec equivalence tests share: hypothesis settings and value strategies, and
kafka-python's own framing of a response."""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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
