"""Assignments the kgroup→kafka-python assignor adapter returns behave like stock's.

Stock assignors (kafka-python 3.0 ``RangePartitionAssignor.assign``) return
``ConsumerProtocolAssignment`` objects whose ``partitions()`` works at once;
kafka-python's coordinator and user code may read them before they are
encoded for SyncGroup.
"""
from __future__ import annotations

import types

from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.structs import TopicPartition

from kgroup.assignors.kafka_python import to_kafka_python


def _cluster(counts):
    cluster = ClusterMetadata()
    cluster.partitions_for_topic = lambda topic: set(range(counts[topic])) if topic in counts else None
    return cluster


def _members(adapter, topics_by_member):
    return [types.SimpleNamespace(member_id=member_id, group_instance_id=None,
                                  metadata=adapter.metadata(topics))
            for member_id, topics in topics_by_member.items()]


def test_adapter_assignments_answer_partitions_before_encoding_like_stock():
    adapter = to_kafka_python("range")
    members = _members(adapter, {"a": ["t"], "b": ["t"]})
    ours = adapter.assign(_cluster({"t": 4}), members)
    stock = RangePartitionAssignor.assign(_cluster({"t": 4}), members)
    for member_id in ("a", "b"):
        assert sorted(ours[member_id].partitions()) == sorted(stock[member_id].partitions())
        # entries iterate as (topic, partitions), as stock's tuples do
        assert [tuple(entry) for entry in ours[member_id].assigned_partitions] == \
            [tuple(entry) for entry in stock[member_id].assigned_partitions]
        decoded = ConsumerProtocolAssignment.decode(ours[member_id].encode())
        assert decoded.partitions() == ours[member_id].partitions()
    assert ours["a"].partitions() == [TopicPartition("t", 0), TopicPartition("t", 1)]


def test_adapter_on_assignment_takes_stock_built_assignments():
    """kafka-python's own assignors build assignments from (topic, partitions) tuples."""
    adapter = to_kafka_python("cooperative-sticky")
    adapter.on_assignment(ConsumerProtocolAssignment(0, [("t", [1, 0])], b""), 3)
    subscription = adapter.metadata({"t"})
    assert [tuple(entry) for entry in subscription.owned_partitions] == [("t", [0, 1])]
    assert subscription.generation_id == 3
