"""Online migration between the two group types (KIP-848; Kafka's group.consumer.migration.policy).

Pure conversions, after Kafka's ConsumerGroup.fromClassicGroup / ClassicGroup.fromConsumerGroup and
GroupMetadataManager.validateOnlineUpgrade: what a classic group is as a consumer group, and what a
consumer group of classic members is as a classic group.  The managers apply them
(:class:`~kgroup.core.coordinator.classic_group_manager.ClassicGroupManager` and
:class:`~kgroup.core.consumer_group.manager.ConsumerGroupManager`) and write the records.
"""
from __future__ import annotations

from typing import Callable, Optional

import attrs

from kgroup.core.consumer_group.context import GroupConversionRefused
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import ConsumerGroupMetadataRecord, PersistedConsumerGroup
from kgroup.core.coordinator.classic_member import Member
from kgroup.core.coordinator.group import Group
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.messages import CONSUMER_PROTOCOL_TYPE
from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import Assignment, TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription, encode_assignment, \
    subscription_version

#: topic -> partition count, None when the topic does not exist.
PartitionCount = Callable[[str], Optional[int]]


def consumer_group_from_classic(group: Group, config: GroupCoordinatorConfig,
                                partition_count: PartitionCount) -> PersistedConsumerGroup:
    """The non-empty classic ``group`` as a consumer group, or GroupConversionRefused.

    Kafka's validateOnlineUpgrade, then ConsumerGroup.fromClassicGroup: the group epoch and the
    assignment epoch are the generation; every member is Stable at that epoch with its last assignment
    (partitions of topics that no longer exist dropped) as both its assigned partitions and its
    target; the subscription metadata is left empty, so the heartbeat that converts bumps the epoch.
    """
    group_id = group.group_id
    if not config.consumer_group_migration_policy.upgrade_enabled:
        raise GroupConversionRefused(f"Cannot upgrade classic group {group_id} to consumer group because "
                                     "the online upgrade is disabled.")
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise GroupConversionRefused(f"Group {group_id} is not a consumer group: it does not use the "
                                     "consumer embedded protocol.")
    if len(group.members) > config.consumer_group_max_size:
        raise GroupConversionRefused(f"Cannot upgrade classic group {group_id} to consumer group because "
                                     "the group size exceeds the consumer group maximum size.")
    generation = group.generation_id
    members: dict[str, ConsumerGroupMember] = {}
    target: dict[str, frozenset[TopicPartition]] = {}
    for member in group.members.values():
        try:
            assigned = decode_assignment(member.assignment).partitions
            subscription = decode_subscription(member.metadata_for(group.protocol_name))
        except InvalidProtocolMetadata:
            raise GroupConversionRefused(f"Cannot upgrade the classic group {group_id} to consumer group "
                                         "because the embedded consumer protocol is malformed.") from None
        partitions = frozenset(tp for tp in assigned if partition_count(tp.topic) is not None)
        members[member.member_id] = ConsumerGroupMember(
            member.member_id, member_epoch=generation, previous_member_epoch=generation,
            state=MemberState.STABLE, instance_id=member.group_instance_id, rack_id=subscription.rack_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms, client_id=member.client_id,
            client_host=member.client_host, subscribed_topic_names=subscription.topics,
            assigned_partitions=partitions,
            classic_member_metadata=ClassicMemberMetadata(member.session_timeout_ms, member.protocols))
        target[member.member_id] = partitions
    header = ConsumerGroupMetadataRecord(group_id, generation, generation, ())
    return PersistedConsumerGroup(header, members, target)


def classic_group_from_consumer(
        consumer_group: ConsumerGroup,
        leaving_member_id: Optional[str]) -> tuple[GroupMetadataRecord, list[MemberMetadataRecord]]:
    """Kafka's ClassicGroup.fromConsumerGroup: the header and member records of the classic group that
    replaces ``consumer_group`` once ``leaving_member_id`` (its last consumer-protocol member) is gone.

    The group is Stable at the group epoch as generation; its protocol is the members' vote; each
    member's assignment is its target assignment, encoded with the ConsumerProtocol version of the
    member's subscription for that protocol; the leader is the first member.
    """
    group_id = consumer_group.group_id
    probe = Group(group_id)  # votes the protocol as the classic group will
    classic_members = []
    for member in consumer_group.members.values():
        classic = member.classic_member_metadata
        if member.member_id == leaving_member_id or classic is None:
            continue
        classic_member = Member(group_id, member.member_id, member.instance_id, member.client_id,
                                member.client_host, classic.session_timeout_ms, member.rebalance_timeout_ms,
                                classic.supported_protocols)
        probe.add(classic_member, protocol_type=CONSUMER_PROTOCOL_TYPE)
        classic_members.append(classic_member)
    protocol_name = probe.select_protocol()
    records = []
    for classic_member in classic_members:
        version = min(subscription_version(classic_member.metadata_for(protocol_name)), 3)
        partitions = tuple(sorted(consumer_group.target_of(classic_member.member_id)))
        assignment = encode_assignment(Assignment(partitions), version=version)
        records.append(attrs.evolve(classic_member.record(group_id), assignment=assignment))
    header = GroupMetadataRecord(group_id=group_id, state=GroupState.STABLE.value,
                                 generation_id=consumer_group.group_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE,
                                 protocol_name=protocol_name, leader_id=classic_members[0].member_id)
    return header, records
