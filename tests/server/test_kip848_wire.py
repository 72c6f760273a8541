"""KIP-848 over real sockets: confluent-kafka with ``group.protocol=consumer`` against kgroup's server.

One consumer joins and gets every partition, a second joins and the partitions split, commits
succeed and OffsetFetch (v9, with the member epoch) sees them, and a consumer that leaves hands
its partitions over.  Every wait is bounded; the coordinator's own view (ConsumerGroupDescribe
through the core) is checked after each step.
"""
from __future__ import annotations

import time
from typing import Callable, List

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "kip848"
GROUP = "kip848-group"
PARTITIONS = 6
RECORDS = 60
#: A step that takes a heartbeat or two on an idle machine; generous for CI.
WAIT_S = 30.0
#: Short heartbeats (Kafka's group.consumer.heartbeat.interval.ms) so a rebalance takes a few hundred ms.
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=200,
                                consumer_group_session_timeout_ms=6_000)


def _consumer(bootstrap: str, name: str):
    return confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
        "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })


def _partitions(consumer) -> List[int]:
    return sorted(tp.partition for tp in consumer.assignment())


def _poll_until(consumers, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out after {WAIT_S}s waiting for {what}"
        for consumer in consumers:
            consumer.poll(0.05)


def _described(server):
    described = server.describe_consumer_group(GROUP)
    assert described.error_code is ErrorCode.NONE, described
    return described


@pytest.mark.kafka_broker(coordinator=CONFIG)
def test_confluent_consumers_join_split_commit_and_hand_over(kafka_broker):
    kafka_broker.create_topic(TOPIC, PARTITIONS)
    producer = confluent_kafka.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(RECORDS):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(WAIT_S) == 0

    first = _consumer(kafka_broker.bootstrap_servers, "first")
    second = None
    try:
        first.subscribe([TOPIC])
        consumed: List = []

        def poll_first_for_records() -> bool:
            message = first.poll(0.05)
            if message is not None and message.error() is None:
                consumed.append(message)
            return _partitions(first) == list(range(PARTITIONS)) and len(consumed) >= RECORDS

        _poll_until([], poll_first_for_records,
                    "the first consumer to own every partition and read every record")
        assert sorted(int(m.value()) for m in consumed) == list(range(RECORDS))

        # A commit carries the member epoch (OffsetCommit v9); the committed offsets read back
        # through OffsetFetch v9, which checks the epoch too.
        first.commit(asynchronous=False)
        committed = first.committed([confluent_kafka.TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                    timeout=WAIT_S)
        assert [tp.offset for tp in committed] == [RECORDS // PARTITIONS] * PARTITIONS
        (member,) = _described(kafka_broker).members
        assert member.client_id == "first" and len(member.assignment) == PARTITIONS

        second = _consumer(kafka_broker.bootstrap_servers, "second")
        second.subscribe([TOPIC])
        _poll_until([first, second],
                    lambda: len(_partitions(first)) == 3 and len(_partitions(second)) == 3,
                    "the partitions to split 3/3")
        assert set(_partitions(first)).isdisjoint(_partitions(second))
        described = _described(kafka_broker)
        assert described.group_state == "Stable" and len(described.members) == 2
        # Both members reached the target assignment of the current epoch.
        assert all(m.member_epoch == described.assignment_epoch and m.assignment == m.target_assignment
                   for m in described.members)

        # The second consumer leaves (epoch -1): its partitions go back to the first.
        second.close()
        second = None
        _poll_until([first], lambda: _partitions(first) == list(range(PARTITIONS)),
                    "the first consumer to get every partition back")
        assert [m.client_id for m in _described(kafka_broker).members] == ["first"]
    finally:
        if second is not None:
            second.close()
        first.close()
