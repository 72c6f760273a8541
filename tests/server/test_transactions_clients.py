"""Transactions with stock clients (issue 26): kgroup's wire broker and Apache Kafka, the same scenarios.

Each scenario runs against ``kgroup`` (a 3-broker :class:`~kgroup.server.KafkaServer` on loopback)
and against ``kafka`` (the session's single-node Apache Kafka, the reference): what a client sees
must be the same on both.

* confluent-kafka and kafka-python 3.0 transactional producers: a committed, an aborted and a
  committed transaction; a read_committed consumer sees only the committed records (in order), a
  read_uncommitted one sees all of them;
* a zombie: a second producer with the same ``transactional.id`` fences the first, whose open
  transaction is aborted and whose next call fails as fenced;
* ``send_offsets_to_transaction``: the offsets a consumer group commits inside a transaction
  become visible with the transaction's commit, and are dropped by its abort.
"""
from __future__ import annotations

import time
import uuid
from typing import Iterator, List

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

#: Longest wait for one client call or one read-back (seconds; a few hundred ms when idle).
STEP_S = 30.0


@pytest.fixture(params=["kgroup", pytest.param("kafka", marks=pytest.mark.kafka)])
def bootstrap(request) -> Iterator[str]:
    """Bootstrap servers of the broker under test."""
    if request.param == "kafka":
        yield request.getfixturevalue("apache_kafka_single").bootstrap_servers
        return
    from kgroup.server import KafkaServer

    config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=3, coordinator=config) as server:
        yield server.bootstrap_servers


def _topic(bootstrap: str, prefix: str, partitions: int = 1, replication_factor: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor)], operation_timeout=STEP_S)
    futures[name].result(timeout=STEP_S)
    return name


def _producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60_000, "linger.ms": 0})
    producer.init_transactions(STEP_S)
    return producer


def _transaction(producer: Producer, topic: str, values: List[str], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode())
    if commit:
        producer.commit_transaction(STEP_S)
    else:
        producer.flush(STEP_S)  # the records reach the log before the abort, as in a real failure
        producer.abort_transaction(STEP_S)


def _read_all(bootstrap: str, topic: str, isolation: str, expected: int, partitions: int = 1) -> List[str]:
    """Every record value of ``topic`` readable at ``isolation`` (stops once ``expected`` arrived and
    one more empty poll confirms nothing else follows, or at the step bound)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: List[str] = []
        deadline = time.monotonic() + STEP_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if len(values) >= expected:
                    break
                continue
            if message.error() is None:
                values.append(message.value().decode())
        return values
    finally:
        consumer.close()


def _values(prefix: str, count: int) -> List[str]:
    return [f"{prefix}{i}" for i in range(count)]


def test_confluent_commit_and_abort_as_kafka_shows_them(bootstrap):
    topic = _topic(bootstrap, "txn-confluent")
    producer = _producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    _transaction(producer, topic, _values("a", 5), commit=True)
    _transaction(producer, topic, _values("b", 5), commit=False)
    _transaction(producer, topic, _values("c", 5), commit=True)
    producer.flush(STEP_S)
    committed = _values("a", 5) + _values("c", 5)
    assert _read_all(bootstrap, topic, "read_committed", 10) == committed
    everything = _values("a", 5) + _values("b", 5) + _values("c", 5)
    assert _read_all(bootstrap, topic, "read_uncommitted", 15) == everything


def test_read_committed_stops_at_an_open_transaction(bootstrap):
    topic = _topic(bootstrap, "txn-open")
    producer = _producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    _transaction(producer, topic, _values("a", 3), commit=True)
    producer.begin_transaction()
    for value in _values("open", 3):
        producer.produce(topic, value=value.encode())
    producer.flush(STEP_S)
    # The open transaction holds the last stable offset: nothing after it is readable yet.
    assert _read_all(bootstrap, topic, "read_committed", 3) == _values("a", 3)
    producer.commit_transaction(STEP_S)
    assert _read_all(bootstrap, topic, "read_committed", 6) == _values("a", 3) + _values("open", 3)


def test_kafka_python_transactional_producer(bootstrap):
    kafka = pytest.importorskip("kafka")
    topic = _topic(bootstrap, "txn-kafka-python")
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                   transactional_id=f"txn-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        for prefix, commit in (("a", True), ("b", False), ("c", True)):
            producer.begin_transaction()
            for value in _values(prefix, 4):
                producer.send(topic, value=value.encode())
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=STEP_S)
    assert _read_all(bootstrap, topic, "read_committed", 8) == _values("a", 4) + _values("c", 4)
    reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 consumer_timeout_ms=3000)
    try:
        reader.assign([kafka.TopicPartition(topic, 0)])
        seen = [record.value.decode() for record in reader]
    finally:
        reader.close()
    assert seen == _values("a", 4) + _values("c", 4)


def test_a_zombie_with_the_same_transactional_id_is_fenced(bootstrap):
    topic = _topic(bootstrap, "txn-zombie")
    transactional_id = f"txn-{uuid.uuid4().hex[:8]}"
    zombie = _producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    for value in _values("zombie", 3):
        zombie.produce(topic, value=value.encode())
    zombie.flush(STEP_S)
    successor = _producer(bootstrap, transactional_id)  # bumps the epoch, aborts the zombie's transaction
    _transaction(successor, topic, _values("ok", 3), commit=True)
    with pytest.raises(KafkaException) as failure:
        zombie.commit_transaction(STEP_S)
    assert failure.value.args[0].fatal(), failure.value
    assert _read_all(bootstrap, topic, "read_committed", 3) == _values("ok", 3)


def _committed_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (answer,) = consumer.committed([TopicPartition(topic, 0)], timeout=STEP_S)
        return answer.offset
    finally:
        consumer.close()


def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(bootstrap):
    source = _topic(bootstrap, "txn-source")
    sink = _topic(bootstrap, "txn-sink")
    seed = Producer({"bootstrap.servers": bootstrap})
    for value in _values("in", 6):
        seed.produce(source, value=value.encode())
    seed.flush(STEP_S)
    group = f"eos-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = _producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    try:
        consumer.subscribe([source])
        consumed: List[str] = []
        deadline = time.monotonic() + STEP_S
        while len(consumed) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                consumed.append(message.value().decode())
        assert consumed == _values("in", 6)
        for offset, commit in ((3, False), (6, True)):
            producer.begin_transaction()
            producer.produce(sink, value=f"out-{offset}".encode())
            producer.send_offsets_to_transaction([TopicPartition(source, 0, offset)],
                                                 consumer.consumer_group_metadata(), STEP_S)
            if commit:
                producer.commit_transaction(STEP_S)
            else:
                producer.abort_transaction(STEP_S)
                # The aborted transaction's offsets never become the group's.
                assert _committed_offset(bootstrap, group, source) < 0
    finally:
        consumer.close()
    assert _committed_offset(bootstrap, group, source) == 6
    assert _read_all(bootstrap, sink, "read_committed", 1) == ["out-6"]
