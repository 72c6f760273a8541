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
from typing import List

import pytest

from .server_transactions import STEP_S, new_topic, read_all, transaction, transactional_producer, values_of

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402


def test_confluent_commit_and_abort_as_kafka_shows_them(bootstrap):
    topic = new_topic(bootstrap, "txn-confluent")
    producer = transactional_producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    transaction(producer, topic, values_of("a", 5), commit=True)
    transaction(producer, topic, values_of("b", 5), commit=False)
    transaction(producer, topic, values_of("c", 5), commit=True)
    producer.flush(STEP_S)
    committed = values_of("a", 5) + values_of("c", 5)
    assert read_all(bootstrap, topic, "read_committed", 10) == committed
    everything = values_of("a", 5) + values_of("b", 5) + values_of("c", 5)
    assert read_all(bootstrap, topic, "read_uncommitted", 15) == everything


def test_read_committed_stops_at_an_open_transaction(bootstrap):
    topic = new_topic(bootstrap, "txn-open")
    producer = transactional_producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    transaction(producer, topic, values_of("a", 3), commit=True)
    producer.begin_transaction()
    for value in values_of("open", 3):
        producer.produce(topic, value=value.encode())
    producer.flush(STEP_S)
    # The open transaction holds the last stable offset: nothing after it is readable yet.
    assert read_all(bootstrap, topic, "read_committed", 3) == values_of("a", 3)
    producer.commit_transaction(STEP_S)
    assert read_all(bootstrap, topic, "read_committed", 6) == values_of("a", 3) + values_of("open", 3)


def test_kafka_python_transactional_producer(bootstrap):
    kafka = pytest.importorskip("kafka")
    topic = new_topic(bootstrap, "txn-kafka-python")
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                   transactional_id=f"txn-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        for prefix, commit in (("a", True), ("b", False), ("c", True)):
            producer.begin_transaction()
            for value in values_of(prefix, 4):
                producer.send(topic, value=value.encode())
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=STEP_S)
    assert read_all(bootstrap, topic, "read_committed", 8) == values_of("a", 4) + values_of("c", 4)
    reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 consumer_timeout_ms=3000)
    try:
        reader.assign([kafka.TopicPartition(topic, 0)])
        seen = [record.value.decode() for record in reader]
    finally:
        reader.close()
    assert seen == values_of("a", 4) + values_of("c", 4)


def test_a_zombie_with_the_same_transactional_id_is_fenced(bootstrap):
    topic = new_topic(bootstrap, "txn-zombie")
    transactional_id = f"txn-{uuid.uuid4().hex[:8]}"
    zombie = transactional_producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    for value in values_of("zombie", 3):
        zombie.produce(topic, value=value.encode())
    zombie.flush(STEP_S)
    # The successor's init bumps the epoch and aborts the zombie's transaction.
    successor = transactional_producer(bootstrap, transactional_id)
    transaction(successor, topic, values_of("ok", 3), commit=True)
    with pytest.raises(KafkaException) as failure:
        zombie.commit_transaction(STEP_S)
    assert failure.value.args[0].fatal(), failure.value
    assert read_all(bootstrap, topic, "read_committed", 3) == values_of("ok", 3)


def _committed_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (answer,) = consumer.committed([TopicPartition(topic, 0)], timeout=STEP_S)
        return answer.offset
    finally:
        consumer.close()


def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(bootstrap):
    source = new_topic(bootstrap, "txn-source")
    sink = new_topic(bootstrap, "txn-sink")
    seed = Producer({"bootstrap.servers": bootstrap})
    for value in values_of("in", 6):
        seed.produce(source, value=value.encode())
    seed.flush(STEP_S)
    group = f"eos-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = transactional_producer(bootstrap, f"txn-{uuid.uuid4().hex[:8]}")
    try:
        consumer.subscribe([source])
        consumed: List[str] = []
        deadline = time.monotonic() + STEP_S
        while len(consumed) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                consumed.append(message.value().decode())
        assert consumed == values_of("in", 6)
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
    assert read_all(bootstrap, sink, "read_committed", 1) == ["out-6"]
