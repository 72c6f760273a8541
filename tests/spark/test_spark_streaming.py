"""A streaming query over 12 source partitions with two readers (issue 12's first scenario)."""

from __future__ import annotations

import os
import time

from spark_helpers import KeyedSink, group_offsets, stream

READERS = 2


def test_every_record_is_read_once_and_no_partition_has_two_owners(
    spark, group_host, queue, group_name, tmp_path
):
    sink = KeyedSink()
    frame = stream(
        spark, group_host.bootstrap_servers, group_name, source="sqlite", **{"sqlite.path": queue.path}
    )
    query = (
        frame.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        formed = max(i.generation_id for i in group_host.ownership(group_name))
        steady_from_ms = time.monotonic_ns() // 1_000_000
        for partition in range(12):
            queue.append(partition, [f"p{partition}-late{i}" for i in range(3)])
        query.processAllAvailable()
    finally:
        query.stop()

    expected = {(p, o) for p in range(12) for o in range(8)}
    assert set(sink.rows) == expected
    assert sink.rows[(3, 6)] == "p3-late1"
    # Every batch's output holds each record once: the readers split the partitions.
    assert max(sink.deliveries.values()) == 1
    # The coordinator never had two members holding one partition.
    intervals = group_host.ownership(group_name)
    assert {i.partition.partition for i in intervals} == set(range(12))
    assert group_host.ownership_overlaps(group_name) == []
    owners = {i.member_id.rsplit("-", 5)[0] for i in intervals}
    assert owners == {f"{group_name}-reader-{slot}" for slot in range(READERS)}
    # Steady state is sticky: later batches reuse the formed generation's owners (static slots
    # rejoining keep their assignment, KIP-345), so no partition moved and no rebalance happened.
    later = [i for i in intervals if i.start_ms >= steady_from_ms]
    assert {i.generation_id for i in later} <= {formed}
    slot_of = {}
    for interval in intervals:
        if interval.generation_id == formed:
            slot = interval.member_id.split("-reader-")[1].split("-")[0]
            assert slot_of.setdefault(interval.partition.partition, slot) == slot
    # Progress is visible to a stock Kafka admin client as the group's committed offsets.
    assert group_offsets(group_host.bootstrap_servers, group_name) == {p: 8 for p in range(12)}
    # Acknowledgements follow accepted commits only, each record at most once.
    acks = queue.ack_counts()
    assert max(acks.values()) == 1
    assert {key for key, count in acks.items() if count} <= expected
    assert os.path.exists(queue.path)


def test_batch_read_consumes_from_the_committed_offsets(spark, group_host, queue, group_name):
    def read():
        return (
            spark.read.format("kgroup")
            .option("bootstrap.servers", group_host.bootstrap_servers)
            .option("group.id", group_name)
            .option("source", "sqlite")
            .option("sqlite.path", queue.path)
            .load()
            .collect()
        )

    first = read()
    assert sorted((r["partition"], r["offset"]) for r in first) == [
        (p, o) for p in range(12) for o in range(5)
    ]
    queue.append(7, ["new"])
    second = read()
    assert [(r["partition"], r["offset"], r["value"]) for r in second] == [(7, 5, "new")]
    assert group_offsets(group_host.bootstrap_servers, group_name)[7] == 6
