"""kafka-python message classes for the KIP-848 APIs, generated from Kafka's JSON schemas.

kafka-python 3.0 builds its protocol classes from Kafka's JSON schemas but
does not ship ConsumerGroupHeartbeat or ConsumerGroupDescribe; the schemas
live in :mod:`kgroup.server.schemas` and the same loader turns them into
classes here, so encoding and decoding stay kafka-python's (no codec of
kgroup's own).
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kgroup.server import schemas

# ``load_json`` is a keyword of kafka-python's metaclass (where to find the schema), which mypy
# takes for an ``__init_subclass__`` argument: hence the ignores.

__all__ = [
    "ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse",
]


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass
