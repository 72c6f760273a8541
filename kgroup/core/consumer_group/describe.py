"""The ConsumerGroupDescribe answer (split from the manager): Kafka's consumerGroupDescribe over the
groups the manager owns, one described group per requested id."""
from __future__ import annotations

from typing import AbstractSet, Callable

from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.heartbeat_checks import HeartbeatRefused
from kgroup.core.consumer_group_messages import (
    MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER,
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, DescribedConsumerGroup,
    DescribedConsumerGroupMember,
)
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

__all__ = ["describe_consumer_groups"]

E = ErrorCode


def describe_consumer_groups(req: ConsumerGroupDescribeRequest,
                             existing_group: Callable[[str], ConsumerGroup],
                             default_assignor: str,
                             topic_exists: Callable[[str], bool]) -> ConsumerGroupDescribeResponse:
    """``existing_group`` raises HeartbeatRefused for an id that is no live consumer group (its code
    and message are the described group's); ``default_assignor`` is named when no member asks for one;
    ``topic_exists`` tells the topics the metadata holds."""
    return ConsumerGroupDescribeResponse(
        tuple(_describe_one(group_id, existing_group, default_assignor, topic_exists)
              for group_id in req.group_ids))


def _existing_topics(partitions: AbstractSet[TopicPartition],
                     topic_exists: Callable[[str], bool]) -> frozenset[TopicPartition]:
    """Kafka's ConsumerGroupMember.topicPartitionsFromMap: a topic missing from the metadata image (deleted)
    is left out of a described assignment."""
    exists: dict[str, bool] = {}
    return frozenset(tp for tp in partitions
                     if exists.setdefault(tp.topic, topic_exists(tp.topic)))


def _describe_one(group_id: str, existing_group: Callable[[str], ConsumerGroup],
                  default_assignor: str, topic_exists: Callable[[str], bool]) -> DescribedConsumerGroup:
    if not group_id:
        return DescribedConsumerGroup(E.INVALID_GROUP_ID, group_id, "Group id can't be empty.")
    try:
        group = existing_group(group_id)
    except HeartbeatRefused as refused:
        # Kafka's consumerGroupDescribe sets only the error here: the group state stays "" (Kafka 4.4's
        # recorded answers to consumer.describe.v0 / v1).
        return DescribedConsumerGroup(refused.code, group_id, refused.message)
    members = tuple(
        DescribedConsumerGroupMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            m.subscribed_topic_names, m.subscribed_topic_regex,
            _existing_topics(m.assigned_partitions, topic_exists),
            _existing_topics(group.target_of(m.member_id), topic_exists),
            # KIP-1099: which protocol the member speaks (Kafka's asConsumerGroupDescribeMember).
            MEMBER_TYPE_CLASSIC if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER)
        for m in group.members.values())
    return DescribedConsumerGroup(
        E.NONE, group_id, group_state=group.state.value, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(default_assignor), members=members)
