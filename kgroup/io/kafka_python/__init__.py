"""kgroup over kafka-python 3.0: a transport on its network client and drop-in
``ConsumerCoordinator`` / ``KafkaConsumer`` classes.

See ``docs/kafka_python.md`` for the supported versions and departures.
"""
from kgroup.io.kafka_python.transport import KafkaPythonTransport

__all__ = ["KafkaPythonTransport"]
