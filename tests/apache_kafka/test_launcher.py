"""The Apache Kafka launcher (kgroup.testing.apache_kafka): real KRaft nodes from Maven Central's jars."""
from __future__ import annotations

from pathlib import Path

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from kgroup.testing.apache_kafka import (
    KAFKA_VERSION, ApacheKafkaCluster, KafkaUnavailableError, cluster_id, kafka_jars, node_properties,
)
from kgroup.testing.raw_kafka_connection import send_raw_request


def test_test_settings_fit_the_node_count():
    one = node_properties(1, 9092, 9093, "1@127.0.0.1:9093", 1, Path("/tmp/x"))
    three = node_properties(2, 9092, 9093, "1@a:1,2@a:2,3@a:3", 3, Path("/tmp/x"), {"num.io.threads": "4"})
    assert one["offsets.topic.replication.factor"] == "1" and one["transaction.state.log.min.isr"] == "1"
    assert three["offsets.topic.replication.factor"] == "3" and three["transaction.state.log.min.isr"] == "2"
    assert three["num.io.threads"] == "4", "overrides win"
    assert one["group.initial.rebalance.delay.ms"] == "0"


def test_a_cluster_needs_a_node():
    with pytest.raises(KafkaUnavailableError, match="at least 1 node"):
        ApacheKafkaCluster(nodes=0)


def test_jars_are_the_pinned_version_and_cached():
    jars = kafka_jars()
    names = {jar.name for jar in jars}
    assert f"kafka_2.13-{KAFKA_VERSION}.jar" in names and f"kafka-clients-{KAFKA_VERSION}.jar" in names
    assert (jars[0].parent / ".complete").read_text().strip() == KAFKA_VERSION
    assert kafka_jars() == jars


def test_single_node_answers_metadata_and_api_versions(apache_kafka_single):
    address = apache_kafka_single.address(1)
    metadata = send_raw_request(address, MetadataRequest[12](topics=[], allow_auto_topic_creation=False))
    assert [b[0] for b in metadata.brokers] == [1]
    versions = send_raw_request(address, ApiVersionsRequest[3](client_software_name="kgroup",
                                                               client_software_version="1"))
    assert versions.error_code == 0
    served = {entry.api_key for entry in versions.api_keys}
    assert {68, 11, 14, 12, 47} <= served, "ConsumerGroupHeartbeat and the classic group APIs"
    assert apache_kafka_single.start_time_s is not None


def test_kill_and_restart_one_node(apache_kafka):
    victim = apache_kafka.node_ids[-1]
    apache_kafka.kill(victim)
    assert victim not in apache_kafka.alive_node_ids()
    apache_kafka.restart(victim)
    assert sorted(apache_kafka.alive_node_ids()) == apache_kafka.node_ids
    metadata = send_raw_request(apache_kafka.address(victim),
                                MetadataRequest[12](topics=[], allow_auto_topic_creation=False))
    assert sorted(b[0] for b in metadata.brokers) == apache_kafka.node_ids


def test_cluster_ids_never_start_with_a_dash():
    """Kafka's Uuid.randomUuid() draws again for an id starting with '-': StorageTool's -t reads one as an
    option (1 start in 64 failed to format before)."""
    ids = [cluster_id() for _ in range(5000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids)
