"""The records of a KIP-848 consumer group.

After Kafka's ConsumerGroupMetadata / PartitionMetadata / TargetAssignmentMetadata (merged into one
header), ConsumerGroupMemberMetadata and CurrentMemberAssignment (merged into one member record)
and ConsumerGroupTargetAssignmentMember, and ConsumerGroupRegularExpression (a subscribed regex
and the topics it resolved to, KIP-848's regex subscriptions).  Offsets and the group tombstone are
shared with classic groups (:mod:`kgroup.core.coordinator_common.records`); the coordinator replays them all
(:func:`kgroup.core.coordinator.records.replay`).
"""
from __future__ import annotations

from typing import Union

import attrs

from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.coordinator_common.records import GroupTombstone, OffsetCommitRecord, OffsetTombstone
from kgroup.values import TopicPartition


@attrs.frozen
class ConsumerGroupMetadataRecord:
    """A consumer group's epochs and the partition counts of its subscribed topics."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    #: (topic, partition count) of every subscribed topic that exists, sorted.
    subscription_metadata: tuple[tuple[str, int], ...]


@attrs.frozen
class ConsumerGroupMemberRecord:
    """A consumer group member: subscription and current assignment."""

    group_id: str
    member: ConsumerGroupMember


@attrs.frozen
class ConsumerGroupTargetAssignmentRecord:
    group_id: str
    member_id: str
    partitions: frozenset[TopicPartition]


@attrs.frozen
class ConsumerGroupMemberTombstone:
    """The member and its target assignment are gone."""

    group_id: str
    member_id: str


@attrs.frozen
class ResolvedTopicRegex:
    """Kafka's ResolvedRegularExpression: the topics a regex matched, and when it was resolved."""

    topics: frozenset[str]
    resolved_at_ms: int


@attrs.frozen
class ConsumerGroupRegularExpressionRecord:
    """Kafka's ConsumerGroupRegularExpression record: a subscribed regex resolved against the topics."""

    group_id: str
    regex: str
    resolved: ResolvedTopicRegex


@attrs.frozen
class ConsumerGroupRegularExpressionTombstone:
    """No member subscribes to ``regex`` any more: its resolution is dropped."""

    group_id: str
    regex: str


#: Every record a consumer group writes.
ConsumerGroupRecord = Union[
    ConsumerGroupMetadataRecord, ConsumerGroupMemberRecord, ConsumerGroupTargetAssignmentRecord,
    ConsumerGroupMemberTombstone, ConsumerGroupRegularExpressionRecord,
    ConsumerGroupRegularExpressionTombstone, OffsetCommitRecord, OffsetTombstone, GroupTombstone,
]


@attrs.frozen
class PersistedConsumerGroup:
    header: ConsumerGroupMetadataRecord
    members: dict[str, ConsumerGroupMember]
    target_assignment: dict[str, frozenset[TopicPartition]]
    #: Regex -> its resolution (every regex some member subscribes to, once resolved).
    resolved_regexes: dict[str, ResolvedTopicRegex] = attrs.field(factory=dict)
