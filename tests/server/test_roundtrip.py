"""Produce and consume through the wire server with each stock client (smoke level; the
compatibility matrix lives in test_client_matrix.py)."""
from __future__ import annotations

import asyncio

import kafka
import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer

NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)


@pytest.fixture
def server():
    with KafkaServer(brokers=3, coordinator=NO_DELAY) as running:
        yield running


def test_kafka_python_round_trip_keeps_keys_headers_and_order(server):
    server.create_topic("t", 3)
    producer = kafka.KafkaProducer(bootstrap_servers=server.bootstrap_servers, compression_type="gzip")
    for i in range(200):
        producer.send("t", key=b"k%d" % (i % 7), value=b"v%d" % i, headers=[("n", str(i).encode())])
    producer.flush(10)
    producer.close()
    consumer = kafka.KafkaConsumer("t", bootstrap_servers=server.bootstrap_servers, group_id="g",
                                   auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    seen = []
    for message in consumer:
        seen.append(message)
        if len(seen) == 200:
            break
    consumer.close()
    assert len(seen) == 200
    assert {m.value for m in seen} == {b"v%d" % i for i in range(200)}
    for m in seen:
        assert m.headers == [("n", m.value[1:])]
    by_key: dict = {}
    for m in seen:
        by_key.setdefault(m.key, []).append(int(m.value[1:]))
    assert all(values == sorted(values) for values in by_key.values())  # one key, one partition, in order


def test_confluent_kafka_round_trip(server):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    server.create_topic("t", 3)
    producer = confluent_kafka.Producer({"bootstrap.servers": server.bootstrap_servers})
    for i in range(100):
        producer.produce("t", key=str(i), value=b"v%d" % i, headers=[("h", b"x")])
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": server.bootstrap_servers, "group.id": "g",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["t"])
    values = set()
    for _ in range(200):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.add(message.value())
            assert message.headers() == [("h", b"x")]
        if len(values) == 100:
            break
    consumer.close()
    assert values == {b"v%d" % i for i in range(100)}


def test_aiokafka_round_trip(server):
    aiokafka = pytest.importorskip("aiokafka")
    server.create_topic("t", 3)

    async def run() -> set:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=server.bootstrap_servers)
        await producer.start()
        for i in range(100):
            await producer.send("t", key=b"%d" % i, value=b"v%d" % i)
        await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer("t", bootstrap_servers=server.bootstrap_servers, group_id="g",
                                             auto_offset_reset="earliest")
        await consumer.start()
        values = set()
        try:
            async def take() -> None:
                async for message in consumer:
                    values.add(message.value)
                    if len(values) == 100:
                        return
            await asyncio.wait_for(take(), 20)
        finally:
            await consumer.stop()
        return values

    assert asyncio.run(run()) == {b"v%d" % i for i in range(100)}


@pytest.mark.kafka_broker(brokers=2, default_partitions=4)
def test_kafka_broker_fixture_serves_its_marker_options(kafka_broker):
    admin = kafka.KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    assert sorted(b["broker_id"] for b in brokers) == [1, 2]
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    producer.send("auto-created", b"x").get(timeout=10)
    producer.close()
    assert len(kafka_broker.trace(api="Produce")) == 1
    assert kafka_broker.partition_leader("auto-created", 3) in (1, 2)


def test_live_bootstrap_servers_leaves_out_a_killed_broker(server):
    assert server.live_bootstrap_servers == server.bootstrap_servers
    server.kill_broker(2)
    assert server.live_bootstrap_servers == ",".join(server.listener(n) for n in (1, 3))
    server.restart_broker(2)
    assert server.live_bootstrap_servers == server.bootstrap_servers
