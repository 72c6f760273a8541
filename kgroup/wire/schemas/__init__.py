"""Kafka's JSON message schemas for the APIs kafka-python 3.0 does not ship (package data).

ConsumerGroupHeartbeat (api key 68) and ConsumerGroupDescribe (69), from
apache/kafka ``clients/src/main/resources/common/message/`` (the protocol
spec; their Apache license header is kept), at Kafka 4.0's versions:
ConsumerGroupHeartbeat v0-v1 (v1: KIP-1082 client-generated member ids) and
ConsumerGroupDescribe v0-v1 (v1: KIP-1099 MemberType).  kafka-python's own
loader (``kafka.protocol.schemas.load_json``) reads them, see
:mod:`kgroup.wire.kafka_python`.  Each file is named after the class it
defines there (Kafka's message name plus ``Struct``), since the loader finds a
schema by its class's name; the schema's own ``name`` field is Kafka's.
"""
