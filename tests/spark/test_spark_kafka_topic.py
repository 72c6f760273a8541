"""The Kafka-topic source against kgroup's wire server and against Tansu, the group visible there."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from kgroup.testing.tansu import BrokerUnavailableError, create_topic, produce, running_tansu
from spark_helpers import KeyedSink, consume_available, group_offsets

PARTITIONS = 12
RECORDS = 96


def _consume_topic(spark, bootstrap: str, group_id: str, topic: str, tmp_path, **extra: str) -> KeyedSink:
    return consume_available(spark, bootstrap, group_id, str(tmp_path / "checkpoint"), source="kafka",
                             **{"kafka.bootstrap.servers": bootstrap, "kafka.topic": topic, **extra})


def _group_listed(bootstrap: str, group_id: str) -> bool:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kgroup-spark-test-admin")
    try:
        return group_id in {g[0] if isinstance(g, tuple) else g.get("group_id") for g in admin.list_groups()}
    finally:
        admin.close()


def _check(sink: KeyedSink, values: list, bootstrap: str, group_id: str) -> None:
    assert sorted(sink.rows.values()) == sorted(values)
    assert max(sink.deliveries.values()) == 1
    assert sum(group_offsets(bootstrap, group_id).values()) == RECORDS
    assert _group_listed(bootstrap, group_id)


def test_kafka_topic_on_kgroup_server(spark, group_host, group_name, tmp_path):
    topic = f"events-{uuid.uuid4().hex[:6]}"
    group_host.server.create_topic(topic, partitions=PARTITIONS)
    values = produce(group_host.bootstrap_servers, topic, RECORDS, PARTITIONS)
    sink = _consume_topic(spark, group_host.bootstrap_servers, group_name, topic, tmp_path)
    _check(sink, values, group_host.bootstrap_servers, group_name)
    assert group_host.ownership_overlaps(group_name) == []


@pytest.mark.broker
def test_kafka_topic_on_tansu(spark, group_name, tmp_path):
    with contextlib.ExitStack() as stack:
        try:
            bootstrap = stack.enter_context(running_tansu())
        except BrokerUnavailableError as error:
            pytest.fail(str(error), pytrace=False)
        topic = f"events-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic, PARTITIONS)
        values = produce(bootstrap, topic, RECORDS, PARTITIONS, one_per_batch=True)
        # Tansu's static membership is broken (see docs/benchmarks.md): dynamic readers there.
        sink = _consume_topic(spark, bootstrap, group_name, topic, tmp_path, static="false")
        _check(sink, values, bootstrap, group_name)
