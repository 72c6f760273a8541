"""kafka-python message classes for the KIP-848 APIs, generated from Kafka's JSON schemas.

kafka-python 3.0 builds its protocol classes from Kafka's JSON schemas but does not ship
ConsumerGroupHeartbeat (API key 68) or ConsumerGroupDescribe (69); the schemas live in
:mod:`kgroup.wire.schemas` and kafka-python's own loader turns them into classes here, so
encoding and decoding stay kafka-python's (no codec of kgroup's own).  Both sides use them:
the client's drop-in (:mod:`kgroup.io.kafka_python`) and the wire server (:mod:`kgroup.server`).

As :mod:`kgroup.assignors.kafka_python`, this module is where kafka-python enters its package:
the rest of :mod:`kgroup.wire` stays pure.  The ``Struct`` suffix keeps the names apart from the
core's messages of the same APIs (:mod:`kgroup.core.consumer_group_messages`); kafka-python's
loader reads the schema file named after the class.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from kgroup.wire import schemas

# ``load_json`` is a keyword of kafka-python's metaclass (where to find the schema), which mypy
# takes for an ``__init_subclass__`` argument: hence the ignores.

__all__ = [
    "ConsumerGroupHeartbeatRequestStruct", "ConsumerGroupHeartbeatResponseStruct",
    "ConsumerGroupDescribeRequestStruct", "ConsumerGroupDescribeResponseStruct",
]


class ConsumerGroupHeartbeatRequestStruct(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupHeartbeatResponseStruct(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeRequestStruct(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponseStruct(ApiMessage, load_json=schemas):  # type: ignore[call-arg]
    pass
