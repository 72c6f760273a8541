"""kafka-python 3.0's own assignors, fed the same groups as ours.

kafka-python's assignors take a ``ClusterMetadata`` and JoinGroup member
structs whose ``metadata`` is a decoded ``ConsumerProtocolSubscription``;
this module builds both from kgroup's plain inputs and converts the
answers back to ``{member_id: [TopicPartition, ...]}``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import MetadataResponse

from kgroup.values import Subscription, TopicPartition

_METADATA_VERSION = 1  # oldest version that carries racks and a controller id
_JOIN_GROUP_VERSION = 5  # first version with group_instance_id

_FACTORIES = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def cluster_metadata(partitions_per_topic: Mapping[str, int]) -> ClusterMetadata:
    """A ClusterMetadata holding the topics, as if a broker had answered Metadata."""
    topic_cls = MetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    v = _METADATA_VERSION
    response = MetadataResponse(
        version=v,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="localhost", port=9092, rack=None,
                                                         version=v)],
        controller_id=0,
        topics=[
            topic_cls(
                error_code=0,
                name=topic,
                is_internal=False,
                partitions=[
                    partition_cls(error_code=0, partition_index=p, leader_id=0, replica_nodes=[0],
                                  isr_nodes=[0], version=v)
                    for p in range(count)
                ],
                version=v,
            )
            for topic, count in partitions_per_topic.items()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def _by_topic(partitions) -> list:
    grouped = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return sorted((topic, sorted(ps)) for topic, ps in grouped.items())


def _member_metadata(strategy: str, sub: Subscription) -> ConsumerProtocolSubscription:
    # The eager sticky assignor reads owned partitions from its user data;
    # cooperative-sticky from the v1+ owned_partitions field (v2 adds the generation).
    if strategy == "sticky" and sub.owned_partitions:
        user_data = StickyAssignorUserData(_by_topic(sub.owned_partitions), sub.generation_id)
        return ConsumerProtocolSubscription(version=0, topics=list(sub.topics), user_data=user_data)
    if strategy == "cooperative-sticky":
        owned = [
            ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
            for t, ps in _by_topic(sub.owned_partitions)
        ]
        return ConsumerProtocolSubscription(
            version=2, topics=list(sub.topics), user_data=b"", owned_partitions=owned,
            generation_id=sub.generation_id,
        )
    return ConsumerProtocolSubscription(version=0, topics=list(sub.topics), user_data=b"")


def join_group_members(strategy: str, subscriptions: Mapping[str, Subscription]) -> list:
    """The member list kafka-python's leader hands its assignor."""
    member_cls = JoinGroupResponse.JoinGroupResponseMember
    return [
        member_cls(
            member_id=member_id,
            group_instance_id=sub.group_instance_id,
            metadata=_member_metadata(strategy, sub),
            version=_JOIN_GROUP_VERSION,
        )
        for member_id, sub in subscriptions.items()
    ]


def new_assignor(strategy: str):
    """A fresh kafka-python assignor (the sticky ones keep per-instance state)."""
    return _FACTORIES[strategy]()


def as_partitions(result: Mapping) -> dict[str, list]:
    """kafka-python's ``{member: ConsumerProtocolAssignment}`` as TopicPartition lists."""
    return {member: [TopicPartition(*tp) for tp in a.partitions()] for member, a in result.items()}
