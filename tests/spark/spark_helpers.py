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
    reader = (spark.readStream.format("kgroup").option("bootstrap.servers", host_bootstrap)
              .option("group.id", group_id).option("readers", "2"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def group_offsets(bootstrap: str, group_id: str) -> dict[int, int]:
    """The group's committed offsets, read with kafka-python's stock admin client."""
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kgroup-spark-test-admin")
    try:
        offsets = admin.list_group_offsets({group_id: None}).get(group_id, {})
        return {tp.partition: meta.offset for tp, meta in offsets.items()}
    finally:
        admin.close()
