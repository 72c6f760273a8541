"""Helpers of the transaction tests with stock clients (tests/server/test_transactions_*.py,
test_exactly_once_workers.py): the broker under test (kgroup's or Apache Kafka), topics, a
confluent-kafka transactional producer, and reading a topic back at an isolation level."""
from __future__ import annotations

import time
import uuid
from typing import Iterator, List

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

__all__ = ["STEP_S", "broker_bootstrap", "new_topic", "read_all", "transaction", "transactional_producer",
           "values_of"]

#: Longest wait for one client call or one read-back (seconds; a few hundred ms when idle).
STEP_S = 30.0


@pytest.fixture(name="bootstrap", params=["kgroup", pytest.param("kafka", marks=pytest.mark.kafka)])
def broker_bootstrap(request) -> Iterator[str]:
    """Bootstrap servers of the broker under test: kgroup's (3 brokers) and Apache Kafka's (the
    session's single node), the same test on both (a fixture of tests/server/conftest.py)."""
    if request.param == "kafka":
        yield request.getfixturevalue("apache_kafka_single").bootstrap_servers
        return
    from kgroup.server import KafkaServer

    config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=3, coordinator=config) as server:
        yield server.bootstrap_servers


def new_topic(bootstrap: str, prefix: str, partitions: int = 1, replication_factor: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor)], operation_timeout=STEP_S)
    futures[name].result(timeout=STEP_S)
    return name


def transactional_producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60_000, "linger.ms": 0})
    producer.init_transactions(STEP_S)
    return producer


def transaction(producer: Producer, topic: str, values: List[str], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode())
    if commit:
        producer.commit_transaction(STEP_S)
    else:
        producer.flush(STEP_S)  # the records reach the log before the abort, as in a real failure
        producer.abort_transaction(STEP_S)


def read_all(bootstrap: str, topic: str, isolation: str, expected: int, partitions: int = 1,
             budget_s: float = STEP_S) -> List[str]:
    """Every record value of ``topic`` readable at ``isolation`` (stops once ``expected`` arrived and
    one more empty poll confirms nothing else follows, or after ``budget_s``)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: List[str] = []
        deadline = time.monotonic() + budget_s
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


def values_of(prefix: str, count: int) -> List[str]:
    return [f"{prefix}{i}" for i in range(count)]
