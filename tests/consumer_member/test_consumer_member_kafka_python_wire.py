"""kgroup.KafkaConsumer(group_protocol="consumer") over real sockets against kgroup's wire server.

ConsumerGroupHeartbeat, OffsetCommit v9 and OffsetFetch v9 go through
kafka-python's network client; the ``kafka_broker`` fixture serves them.
Every record is consumed, partitions are never owned by two consumers at
once (ledger over the listener callbacks), and a consumer that leaves hands
its partitions over.  Every wait is bounded.
"""
from __future__ import annotations

import time

import kafka
import pytest

from kgroup import KafkaConsumer
from kgroup import errors as kgroup_errors
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.member.consumer import ConsumerMemberState

from consumer_member_inprocess_harness import OwnershipLedger

BROKER = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=200,
                                consumer_group_session_timeout_ms=3000)
RECORDS = 120


class LedgerRebalanceListener(kafka.ConsumerRebalanceListener):
    def __init__(self, ledger: OwnershipLedger, name: str) -> None:
        self._listener = ledger.listener(name)

    def on_partitions_revoked(self, revoked):
        self._listener.on_partitions_revoked(revoked)

    def on_partitions_assigned(self, assigned):
        self._listener.on_partitions_assigned(assigned)

    def on_partitions_lost(self, lost):
        self._listener.on_partitions_lost(lost)


def produce(server, count: int) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=server.bootstrap_servers)
    for i in range(count):
        producer.send("t", b"%d" % i, partition=i % 6)
    producer.flush(10)
    producer.close()


def consumer(server, ledger: OwnershipLedger, name: str) -> KafkaConsumer:
    c = KafkaConsumer(bootstrap_servers=server.bootstrap_servers, group_id="g", group_protocol="consumer",
                      client_id=name, auto_offset_reset="earliest", enable_auto_commit=False)
    c.subscribe(["t"], listener=LedgerRebalanceListener(ledger, name))
    return c


def drain(consumers, seen: list, until, timeout_s: float = 20.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        for c in consumers:
            for records in c.poll(50).values():
                seen.extend(int(r.value) for r in records)
            c.commit()
        if until():
            return time.monotonic() - start
    pytest.fail(f"not reached in {timeout_s} s: {len(seen)} records, "
                + str([(c._coordinator._member, sorted(c.assignment())) for c in consumers]))


@pytest.mark.kafka_broker(coordinator=BROKER)
def test_consumers_split_consume_everything_and_hand_over_on_leave(kafka_broker):
    kafka_broker.create_topic("t", 6)
    produce(kafka_broker, RECORDS)
    ledger = OwnershipLedger()
    consumers = [consumer(kafka_broker, ledger, f"c{i}") for i in range(3)]
    seen: list = []
    try:
        drain(consumers, seen, lambda: len(set(seen)) == RECORDS
              and sorted(len(c.assignment()) for c in consumers) == [2, 2, 2])
        assert sorted(set(seen)) == list(range(RECORDS))
        # Offsets were committed synchronously after every poll, so a record is processed twice only if
        # its partition moved between its poll and that commit: here the group only grew.
        assert len(seen) - RECORDS <= 6 * 10
        epochs = [c._coordinator._member.member_epoch for c in consumers]
        assert all(e > 0 for e in epochs)
        leaver = consumers.pop(0)
        leaver.close()
        assert leaver._coordinator._member.state is ConsumerMemberState.UNSUBSCRIBED
        produce(kafka_broker, 60)
        drain(consumers, seen, lambda: len(set(seen)) == RECORDS and len(seen) >= RECORDS + 60
              and sorted(len(c.assignment()) for c in consumers) == [3, 3])
        assert ledger.violations == []
        committed = consumers[0].committed(kafka.TopicPartition("t", 0))
        assert committed is not None and committed >= RECORDS // 6
    finally:
        for c in consumers:
            c.close()


@pytest.mark.kafka_broker(coordinator=BROKER)
def test_classic_only_settings_fail_before_connecting(kafka_broker):
    for setting in ({"session_timeout_ms": 10_000}, {"heartbeat_interval_ms": 1000},
                    {"partition_assignment_strategy": ("range",)}):
        with pytest.raises(kafka.errors.KafkaConfigurationError, match=next(iter(setting))):
            KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id="g",
                          group_protocol="consumer", **setting)
    with pytest.raises(kafka.errors.KafkaConfigurationError, match="group_remote_assignor"):
        KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id="g",
                      group_remote_assignor="range")


@pytest.mark.kafka_broker(coordinator=BROKER)
def test_unknown_server_assignor_is_a_fatal_typed_error(kafka_broker):
    kafka_broker.create_topic("t", 2)
    c = KafkaConsumer("t", bootstrap_servers=kafka_broker.bootstrap_servers, group_id="g",
                      group_protocol="consumer", group_remote_assignor="no-such-assignor")
    try:
        with pytest.raises(kafka.errors.UnsupportedAssignorError) as raised:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                c.poll(100)
        assert isinstance(raised.value, kgroup_errors.UnsupportedAssignorError)
        assert "no-such-assignor" in str(raised.value)  # the coordinator's message names it
    finally:
        c.close()


@pytest.mark.kafka_broker(coordinator=BROKER)
def test_kgroup_and_confluent_consumers_share_a_group(kafka_broker):
    """kgroup's member and librdkafka's (group.protocol=consumer) in one KIP-848 group."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    kafka_broker.create_topic("t", 6)
    produce(kafka_broker, RECORDS)
    ledger = OwnershipLedger()
    ours = consumer(kafka_broker, ledger, "kgroup")
    theirs = confluent_kafka.Consumer({
        "bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": "g", "group.protocol": "consumer",
        "client.id": "confluent", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    confluent_listener = ledger.listener("confluent")
    seen: list = []

    def poll_both() -> None:
        if not ours._closed:
            for records in ours.poll(50).values():
                seen.extend(int(r.value) for r in records)
            ours.commit()
        message = theirs.poll(0.05)
        if message is not None and message.error() is None:
            seen.append(int(message.value()))
            theirs.commit(message, asynchronous=False)

    def poll_until(condition, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, (ours._coordinator._member, sorted(ours.assignment()),
                                                 theirs.assignment())
            poll_both()

    try:
        theirs.subscribe(
            ["t"],
            on_assign=lambda c, parts: confluent_listener.on_partitions_assigned(
                [kafka.TopicPartition(p.topic, p.partition) for p in parts]),
            on_revoke=lambda c, parts: confluent_listener.on_partitions_revoked(
                [kafka.TopicPartition(p.topic, p.partition) for p in parts]),
            on_lost=lambda c, parts: confluent_listener.on_partitions_lost(
                [kafka.TopicPartition(p.topic, p.partition) for p in parts]))
        poll_until(lambda: len(set(seen)) == RECORDS and len(ours.assignment()) == 3
                   and len(theirs.assignment()) == 3)
        assert set(ours.assignment()).isdisjoint({kafka.TopicPartition(p.topic, p.partition)
                                                  for p in theirs.assignment()})
        described = kafka_broker.describe_consumer_group("g")
        assert described.group_state == "Stable" and len(described.members) == 2
        assert all(m.member_epoch == described.assignment_epoch for m in described.members)
        # kgroup's member leaves; librdkafka's takes everything over.
        ours.close()
        poll_until(lambda: len(theirs.assignment()) == 6)
        assert ledger.violations == []
    finally:
        ours.close()
        theirs.close()
