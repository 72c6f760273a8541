"""A Kafka topic as a kgroup_spark source, read with kafka-python from any Kafka cluster.

Options: ``kafka.bootstrap.servers`` (the cluster holding the data; it may
differ from the coordinator's) and ``kafka.topic``.  Rows are
``(key binary, value binary, timestamp long)``; offsets are Kafka's.  Kafka
records need no acknowledgement beyond the group's committed offsets.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

from kgroup_spark.errors import CoordinatorUnreachableError, SourceOptionError
from kgroup_spark.source import PartitionedSource

POLL_TIMEOUT_MS = 500
READ_TIMEOUT_MS = 60_000


class KafkaTopicSource(PartitionedSource):
    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        self.bootstrap_servers = self.options.get("kafka.bootstrap.servers", "")
        self.topic = self.options.get("kafka.topic", "")
        missing = [
            key
            for key, value in (
                ("kafka.bootstrap.servers", self.bootstrap_servers),
                ("kafka.topic", self.topic),
            )
            if not value
        ]
        if missing:
            raise SourceOptionError(f"KafkaTopicSource needs option(s) {', '.join(repr(m) for m in missing)}")
        self._consumer: Optional[Any] = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_consumer"] = None
        return state

    @property
    def name(self) -> str:
        return self.topic

    def schema(self) -> str:
        return "key binary, value binary, timestamp long"

    def _client(self) -> Any:
        if self._consumer is None:
            from kafka import KafkaConsumer
            from kafka.errors import KafkaError

            timeout_ms = int(self.options.get("kafka.connect.timeout.ms", "10000"))
            try:
                self._consumer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap_servers,
                    group_id=None,
                    enable_auto_commit=False,
                    client_id="kgroup-spark-source",
                    bootstrap_timeout_ms=timeout_ms,
                    request_timeout_ms=timeout_ms,
                )
            except KafkaError as error:
                raise CoordinatorUnreachableError(
                    "KafkaTopicSource: no broker answered at "
                    f"kafka.bootstrap.servers={self.bootstrap_servers!r} "
                    f"within {timeout_ms} ms ({error})"
                ) from None
        return self._consumer

    def _partitions(self) -> list:
        from kafka import TopicPartition

        partitions = self._client().partitions_for_topic(self.topic)
        if not partitions:
            raise SourceOptionError(
                f"KafkaTopicSource: topic {self.topic!r} does not exist at {self.bootstrap_servers!r}"
            )
        return [TopicPartition(self.topic, p) for p in sorted(partitions)]

    def partition_count(self) -> int:
        return len(self._partitions())

    def latest_offsets(self) -> dict[int, int]:
        return {tp.partition: offset for tp, offset in self._client().end_offsets(self._partitions()).items()}

    def earliest_offsets(self) -> dict[int, int]:
        return {
            tp.partition: offset
            for tp, offset in self._client().beginning_offsets(self._partitions()).items()
        }

    def read(self, partition: int, start_offset: int, end_offset: int) -> Iterator[tuple]:
        from kafka import TopicPartition

        consumer = self._client()
        tp = TopicPartition(self.topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start_offset)
        idle_ms = 0
        # Offsets may have gaps (compaction, transaction markers): read until the position passes the end.
        while consumer.position(tp) < end_offset:
            batch = consumer.poll(timeout_ms=POLL_TIMEOUT_MS).get(tp, [])
            idle_ms = idle_ms + POLL_TIMEOUT_MS if not batch else 0
            if idle_ms > READ_TIMEOUT_MS:
                raise TimeoutError(
                    f"{tp}: no records between {consumer.position(tp)} and {end_offset} "
                    f"within {READ_TIMEOUT_MS} ms"
                )
            for record in batch:
                if record.offset >= end_offset:
                    return
                yield record.offset, (record.key, record.value, record.timestamp)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
