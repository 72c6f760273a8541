"""Sources shipped with kgroup_spark: a Kafka topic and a SQLite queue."""

from kgroup_spark.sources.kafka_topic import KafkaTopicSource
from kgroup_spark.sources.sqlite_queue import SqliteQueue, SqliteQueueSource

__all__ = ["KafkaTopicSource", "SqliteQueue", "SqliteQueueSource"]
