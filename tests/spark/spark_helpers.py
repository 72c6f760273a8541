"""Shared helpers of the Spark tests (a module, not a test file)."""

from __future__ import annotations

import collections
import threading
from typing import Any


class KeyedSink:
    """An idempotent sink keyed by (partition, offset) that also counts every delivery."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, int], Any] = {}
        self.deliveries: collections.Counter = collections.Counter()
        self.batches: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, frame: Any, batch_id: int) -> None:
        rows = frame.collect()
        with self._lock:
            self.batches.append(batch_id)
            for row in rows:
                key = (row["partition"], row["offset"])
                self.rows[key] = row["value"]
                self.deliveries[key] += 1


def stream(spark: Any, host_bootstrap: str, group_id: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("kgroup")
        .option("bootstrap.servers", host_bootstrap)
        .option("group.id", group_id)
        .option("readers", "2")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def consume_available(spark: Any, host_bootstrap: str, group_id: str, checkpoint: str,
                      **options: str) -> KeyedSink:
    """Run a streaming query until it has processed everything available, then stop it."""
    sink = KeyedSink()
    query = (stream(spark, host_bootstrap, group_id, **options).writeStream.foreachBatch(sink)
             .option("checkpointLocation", checkpoint).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return sink


def group_offsets(bootstrap: str, group_id: str) -> dict[int, int]:
    """The group's committed offsets, read with kafka-python's stock admin client."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kgroup-spark-test-admin")
    try:
        offsets = admin.list_group_offsets({group_id: None}).get(group_id, {})
        return {tp.partition: meta.offset for tp, meta in offsets.items()}
    finally:
        admin.close()


def _answer(transport: Any, request: Any, node_id: Any = None, timeout_s: float = 10.0) -> Any:
    import time

    correlation_id = transport.send(request, node_id)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for completion in transport.poll(200):
            if completion.correlation_id == correlation_id:
                return completion.result
    raise TimeoutError(f"no answer to {type(request).__name__} within {timeout_s} s")


def late_commit(
    bootstrap: str,
    group_id: str,
    member_id: str,
    generation_id: int,
    instance_id: Any,
    topic: str,
    partition: int,
    offset: int,
) -> Any:
    """What the coordinator answers a zombie's OffsetCommit (its error code for the partition)."""
    from kgroup.core import messages as m
    from kgroup.io.kafka_python.transport import KafkaPythonTransport
    from kgroup.values import TopicPartition

    transport = KafkaPythonTransport(bootstrap_servers=bootstrap, client_id="kgroup-spark-test-zombie")
    try:
        coordinator = _answer(transport, m.FindCoordinatorRequest(group_id))
        request = m.OffsetCommitRequest(
            group_id,
            (
                m.PartitionOffsetCommit(
                    TopicPartition(topic, partition), m.OffsetAndMetadata(offset, "zombie")
                ),
            ),
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        response = _answer(transport, request, coordinator.node_id)
        return response.partitions[0].error_code
    finally:
        transport.close()


def wait_for_file(path: str, timeout_s: float) -> str:
    import os
    import time

    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.05)
    with open(path) as handle:
        return handle.read()
