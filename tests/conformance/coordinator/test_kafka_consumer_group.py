"""Kafka's ConsumerGroupTest (group-coordinator, org.apache.kafka.coordinator.group.modern.consumer, trunk
of October 2024), ported to kgroup's KIP-848 group (kgroup.core.consumer_group.group.ConsumerGroup).

Kafka's tests build a ConsumerGroup and call its methods; so do most ports, on kgroup's ConsumerGroup
(``ConsumerGroup(group_id, emit)``).  Where Kafka tests a method kgroup has elsewhere (the member a
heartbeat is for, ListGroups' filters, the upgrade of a classic group), the port goes through that code
or through the coordinator's requests and says so.

Epochs: a kgroup group starts at group and assignment epoch 1 (Kafka 4.4, KAFKA-20268; Kafka's trunk
of October 2024 started at 0), so the ports that check epochs or states add 1 to Kafka's epochs.
``testValidateOffsetCommit`` and ``testValidateOffsetFetch`` are ported in
tests/consumer_group/test_consumer_group_offsets_admin.py.
"""
from __future__ import annotations

import attrs
import pytest

from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.consumer_group.heartbeat_checks import HeartbeatRefused, heartbeat_member
from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord,
    ConsumerGroupTargetAssignmentRecord,
)
from kgroup.core.consumer_group_messages import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DescribedConsumerGroup,
    DescribedConsumerGroupMember,
)
from kgroup.core.coordinator import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.coordinator.migration import consumer_group_from_classic
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, JoinGroupProtocol, ListGroupsRequest, OffsetAndMetadata, PartitionOffsetCommit,
    TxnOffsetCommitRequest,
)
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import encode_assignment, encode_subscription

from coordinator_kafka_gmm_harness import Ctx

E = ErrorCode
CG = ConsumerGroupState
GROUP = "group-foo"


def tps(spec) -> frozenset[TopicPartition]:
    """``{"foo": [1, 2]}`` -> the partitions (Kafka's mkAssignment)."""
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


def new_group(group_id: str = "foo", observer=None) -> tuple[ConsumerGroup, list]:
    records: list = []
    return ConsumerGroup(group_id, records.append, observer), records


def join_request(member_id: str, member_epoch: int) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id="foo", member_id=member_id, member_epoch=member_epoch,
                                         rebalance_timeout_ms=5000, subscribed_topic_names=(),
                                         topic_partitions=())


def loaded_ctx(members, *, topics=None, group_epoch: int = 1, targets=None) -> Ctx:
    """A coordinator holding consumer group ``GROUP`` as Kafka's tests replay it (ConsumerGroupBuilder)."""
    records: list = [ConsumerGroupMetadataRecord(GROUP, group_epoch, group_epoch, ())]
    records += [ConsumerGroupMemberRecord(GROUP, m) for m in members]
    records += [ConsumerGroupTargetAssignmentRecord(GROUP, mid, parts)
                for mid, parts in (targets or {}).items()]
    return Ctx(topics=topics or {}, records=records)


# -- members ------------------------------------------------------------------------------------


def test_testGetOrCreateMember():
    """Kafka's getOrMaybeCreateMember is, in kgroup, the member a heartbeat is for
    (heartbeat_checks.heartbeat_member, Kafka's getOrMaybeSubscribeDynamicConsumerGroupMember): a joining
    heartbeat (epoch 0) creates it, a later one finds it, an unknown member is UNKNOWN_MEMBER_ID."""
    group, _ = new_group()
    member, replaced = heartbeat_member(group, join_request("member-id", 0), "member-id", frozenset())
    assert member.member_id == "member-id" and replaced is None
    group.update_member(member)
    again, _ = heartbeat_member(group, join_request("member-id", 0), "member-id", frozenset())
    assert again is group.members["member-id"]
    with pytest.raises(HeartbeatRefused) as refused:
        heartbeat_member(group, join_request("does-not-exist", 1), "does-not-exist", frozenset())
    assert refused.value.code is E.UNKNOWN_MEMBER_ID


def test_testUpdateMember():
    group, _ = new_group()
    member = ConsumerGroupMember("member", subscribed_topic_names=["foo", "bar"])
    group.update_member(member)
    assert group.members["member"] == member


def test_testNoStaticMember():
    group, _ = new_group()
    group.update_member(ConsumerGroupMember("member"))
    assert group.static_member("instance-id") is None


def test_testGetStaticMemberByInstanceId():
    group, _ = new_group()
    member = ConsumerGroupMember("member", subscribed_topic_names=["foo", "bar"], instance_id="instance")
    group.update_member(member)
    assert group.static_member("instance") == member
    assert group.members["member"] == member
    assert group.static_members["instance"] == "member"


def test_testRemoveMember():
    group, _ = new_group()
    group.update_member(ConsumerGroupMember("member"))
    assert "member" in group.members
    group.remove_member("member")
    assert "member" not in group.members


def test_testRemoveStaticMember():
    group, _ = new_group()
    group.update_member(ConsumerGroupMember("member", subscribed_topic_names=["foo", "bar"],
                                            instance_id="instance"))
    assert "member" in group.members
    group.remove_member("member")
    assert "member" not in group.members
    assert group.static_member("instance") is None and "instance" not in group.static_members


# -- partition epochs ------------------------------------------------------------------------------


def _member_at_epoch_10_owning_foo_and_revoking_bar():
    """Kafka's set-up of the partition-epoch tests: foo 1-3 assigned, bar 4-6 pending revocation."""
    group, _ = new_group()
    member = ConsumerGroupMember("member", member_epoch=10, assigned_partitions=tps({"foo": [1, 2, 3]}),
                                 partitions_pending_revocation=tps({"bar": [4, 5, 6]}))
    group.update_member(member)
    for tp in tps({"foo": [1, 2, 3], "bar": [4, 5, 6]}):
        assert group.partition_epoch(tp) == 10
    return group, member


def test_testUpdatingMemberUpdatesPartitionEpoch():
    group, member = _member_at_epoch_10_owning_foo_and_revoking_bar()
    for tp in tps({"zar": [7, 8, 9]}):
        assert group.partition_epoch(tp) == -1

    member = attrs.evolve(member, member_epoch=11, assigned_partitions=tps({"bar": [1, 2, 3]}),
                          partitions_pending_revocation=tps({"zar": [4, 5, 6]}))
    group.update_member(member)
    for tp in tps({"bar": [1, 2, 3], "zar": [4, 5, 6]}):
        assert group.partition_epoch(tp) == 11
    for tp in tps({"foo": [7, 8, 9]}):
        assert group.partition_epoch(tp) == -1


def test_testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsReassignedBeforeBeingRevoked():
    group, _ = new_group()
    member = ConsumerGroupMember("member", member_epoch=10, partitions_pending_revocation=tps({"foo": [1]}))
    group.update_member(member)
    assert group.partition_epoch(TopicPartition("foo", 1)) == 10
    member = attrs.evolve(member, member_epoch=11, assigned_partitions=tps({"foo": [1]}),
                          partitions_pending_revocation=frozenset())
    group.update_member(member)
    assert group.partition_epoch(TopicPartition("foo", 1)) == 11


def test_testUpdatingMemberUpdatesPartitionEpochWhenPartitionIsNotReleased():
    """Kafka's IllegalStateException is kgroup's GroupInvariantViolation (the "never two owners" rule)."""
    group, _ = new_group()
    group.update_member(ConsumerGroupMember("m1", member_epoch=10, assigned_partitions=tps({"foo": [1]})))
    m2 = ConsumerGroupMember("m2", member_epoch=10, assigned_partitions=tps({"foo": [1]}))
    # m2 cannot acquire foo-1: m1 still owns it.
    with pytest.raises(GroupInvariantViolation):
        group.update_member(m2)


def test_testAddPartitionEpochs():
    """Kafka calls addPartitionEpochs directly; kgroup records partition epochs only through members,
    so a partition already held at epoch 10 is claimed at epoch 11 by another member: refused
    (GroupInvariantViolation for Kafka's IllegalStateException) and the epoch stays 10."""
    group, _ = new_group()
    group.update_member(ConsumerGroupMember("m1", member_epoch=10, assigned_partitions=tps({"foo": [1]})))
    with pytest.raises(GroupInvariantViolation):
        group.update_member(ConsumerGroupMember("m2", member_epoch=11, assigned_partitions=tps({"foo": [1]})))
    assert group.partition_epoch(TopicPartition("foo", 1)) == 10
    assert group.partition_owner(TopicPartition("foo", 1)) == "m1"


def test_testDeletingMemberRemovesPartitionEpoch():
    group, member = _member_at_epoch_10_owning_foo_and_revoking_bar()
    group.remove_member("member")
    for tp in tps({"foo": [1, 2, 3, 7, 8, 9], "bar": [1, 2, 3, 4, 5, 6], "zar": [4, 5, 6]}):
        assert group.partition_epoch(tp) == -1


def test_testWaitingOnUnreleasedPartition():
    group, _ = new_group()
    group.set_target_assignment(group.assignment_epoch,
                                {"member-1": tps({"foo": [1, 2, 3], "zar": [7, 8, 9]})})
    member1 = ConsumerGroupMember("member-1", member_epoch=10, state=MemberState.UNRELEASED_PARTITIONS,
                                  assigned_partitions=tps({"foo": [1, 2, 3]}),
                                  partitions_pending_revocation=tps({"bar": [4, 5, 6]}))
    group.update_member(member1)
    assert not group.waiting_on_unreleased_partition(member1)
    group.update_member(ConsumerGroupMember("member-2", member_epoch=10,
                                            partitions_pending_revocation=tps({"zar": [7]})))
    assert group.waiting_on_unreleased_partition(member1)


# -- states -----------------------------------------------------------------------------------------


def test_testGroupState():
    """Kafka's epochs plus one (KAFKA-20268): the group starts at epoch 1."""
    group, _ = new_group()
    assert group.state is CG.EMPTY

    member1 = ConsumerGroupMember("member1", member_epoch=2, previous_member_epoch=1,
                                  state=MemberState.STABLE)
    group.update_member(member1)
    group.set_epochs(2, {})
    assert group.state is CG.ASSIGNING

    member2 = ConsumerGroupMember("member2", member_epoch=2, previous_member_epoch=1,
                                  state=MemberState.STABLE)
    group.update_member(member2)
    group.set_epochs(3, {})
    assert group.state is CG.ASSIGNING

    group.set_target_assignment(3, {})
    assert group.state is CG.RECONCILING

    member1 = attrs.evolve(member1, member_epoch=3, previous_member_epoch=2)
    group.update_member(member1)
    assert group.state is CG.RECONCILING

    # Member 2 is not stable, so the group stays Reconciling.
    member2 = attrs.evolve(member2, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=3,
                           previous_member_epoch=2)
    group.update_member(member2)
    assert group.state is CG.RECONCILING

    group.update_member(attrs.evolve(member2, state=MemberState.STABLE))
    assert group.state is CG.STABLE

    group.remove_member("member1")
    group.remove_member("member2")
    assert group.state is CG.EMPTY


def test_testStateTransitionMetrics():
    """Kafka checks its metrics shard sees each state transition once, and none when the group is
    created; kgroup's analogue is the group's transition observer.  Epochs plus one (KAFKA-20268)."""
    seen: list = []
    group, _ = new_group("group-id", observer=lambda name, old, new: seen.append((old, new)))
    assert group.state is CG.EMPTY and seen == []

    group.update_member(ConsumerGroupMember("member", member_epoch=2, previous_member_epoch=1))
    assert group.state is CG.RECONCILING and seen == [(CG.EMPTY, CG.RECONCILING)]

    group.set_epochs(2, {})
    assert group.state is CG.ASSIGNING and seen[-1] == (CG.RECONCILING, CG.ASSIGNING)

    group.set_target_assignment(2, {})
    assert group.state is CG.STABLE and seen[-1] == (CG.ASSIGNING, CG.STABLE)

    group.remove_member("member")
    assert group.state is CG.EMPTY and seen[-1] == (CG.STABLE, CG.EMPTY)
    assert len(seen) == 4


def test_testValidateDeleteGroup():
    """Kafka's validateDeleteGroup throws GroupNotEmptyException unless the group is Empty; kgroup's
    ConsumerGroup.delete refuses a group with members (GroupInvariantViolation) and the coordinator
    answers DeleteGroups NON_EMPTY_GROUP.  Epochs plus one (KAFKA-20268)."""
    group, _ = new_group()
    assert group.state is CG.EMPTY
    group.update_member(ConsumerGroupMember("member1", member_epoch=2, previous_member_epoch=1))
    assert group.state is CG.RECONCILING
    with pytest.raises(GroupInvariantViolation):
        group.delete()
    group.set_epochs(2, {})
    assert group.state is CG.ASSIGNING
    with pytest.raises(GroupInvariantViolation):
        group.delete()
    group.set_target_assignment(2, {})
    assert group.state is CG.STABLE
    with pytest.raises(GroupInvariantViolation):
        group.delete()
    # Through the coordinator: the same group is refused, an empty one is deleted.
    ctx = loaded_ctx([ConsumerGroupMember("member1", member_epoch=1, previous_member_epoch=0)])
    assert ctx.delete(GROUP) == [E.NON_EMPTY_GROUP]
    empty, _ = new_group()
    empty.delete()
    assert empty.state is CG.DEAD


def test_testGroupTypeFromString():
    """Kafka's Group.GroupType.parse ("classic", "Consumer" case-insensitively, anything else UNKNOWN)
    serves ListGroups' type filter (GroupMetadataManager.listGroups); ported through ListGroups."""
    ctx = loaded_ctx([ConsumerGroupMember("member1", member_epoch=1)])
    assert [g.group_id for g in ctx.call(ListGroupsRequest(types_filter=("Consumer",))).groups] == [GROUP]
    assert ctx.call(ListGroupsRequest(types_filter=("classic",))).groups == ()
    assert ctx.call(ListGroupsRequest(types_filter=("Invalid",))).groups == ()


def test_testAsListedGroup():
    """Kafka reads the listed state at two committed offsets (timeline snapshots, not modelled); the
    port lists the group before and after a member joins.  The member's epoch is the group's, 1
    (KAFKA-20268), so the group is Stable as in Kafka."""
    ctx = loaded_ctx([])
    assert [(g.group_id, g.group_state) for g in ctx.call(ListGroupsRequest()).groups] == [(GROUP, "Empty")]
    ctx = loaded_ctx([ConsumerGroupMember("member1", member_epoch=1, subscribed_topic_names=["foo"])])
    listed = ctx.call(ListGroupsRequest()).groups
    assert [(g.group_id, g.group_state, g.group_type) for g in listed] == [(GROUP, "Stable", "consumer")]


def test_testIsInStatesCaseInsensitive():
    """Kafka's isInStates compares lower-case names (listGroups lower-cases the filter); snapshots are
    not modelled, so the port lists the group by state through ListGroups."""
    ctx = loaded_ctx([])
    assert [g.group_id for g in ctx.call(ListGroupsRequest(states_filter=("empty",))).groups] == [GROUP]
    assert [g.group_id for g in ctx.call(ListGroupsRequest(states_filter=("Empty",))).groups] == [GROUP]
    ctx = loaded_ctx([ConsumerGroupMember("member1", member_epoch=1, subscribed_topic_names=["foo"])])
    assert [g.group_id for g in ctx.call(ListGroupsRequest(states_filter=("stable",))).groups] == [GROUP]
    assert ctx.call(ListGroupsRequest(states_filter=("empty",))).groups == ()


# -- assignors and subscriptions --------------------------------------------------------------------


def test_testPreferredServerAssignor():
    """kgroup's preferred_assignor takes the configured default for "no preference" (Kafka: empty
    Optional).  Kafka's computePreferredServerAssignor(old, new) is the same count over the members a
    change would leave; kgroup computes it over that member list when it builds the target
    (target_assignment), so the port checks the group's answer once each change is applied."""
    none = "<default>"
    group, _ = new_group()
    member1 = ConsumerGroupMember("member1", server_assignor="range")
    member2 = ConsumerGroupMember("member2", server_assignor="range")
    member3 = ConsumerGroupMember("member3", server_assignor="uniform")
    assert group.preferred_assignor(none) == none

    group.update_member(member1)
    assert group.preferred_assignor(none) == "range"
    group.remove_member("member1")
    assert group.preferred_assignor(none) == none
    group.update_member(member1)

    group.update_member(member2)
    assert group.preferred_assignor(none) == "range"
    group.update_member(member3)
    assert group.preferred_assignor(none) == "range"

    # Members drop their assignors one by one.  With one "range" and one "uniform" left Kafka may
    # answer either; kgroup breaks the tie by name, so "range".
    group.update_member(ConsumerGroupMember("member1"))
    assert group.preferred_assignor(none) == "range"
    group.update_member(ConsumerGroupMember("member2"))
    assert group.preferred_assignor(none) == "uniform"
    group.update_member(ConsumerGroupMember("member3"))
    assert group.preferred_assignor(none) == none


def test_testUpdateSubscriptionMetadata():
    """Kafka's computeSubscriptionMetadata(computeSubscribedTopicNames(old, new)): the subscribed topics
    a change would leave, with their partition counts.  kgroup's subscribed_topics_with
    (subscription_changes) computes the topics for a member's update; a member's removal is computed
    as its update to no subscription (kgroup removes a leaving member, then recomputes from the group).
    The partition counts are then the topics' (the manager's lookup), shown as Kafka's maps."""
    from kgroup.core.consumer_group.subscription_changes import subscribed_topics_with

    image = {"foo": 1, "bar": 2, "zar": 3}

    def metadata(topics) -> dict:
        return {topic: image[topic] for topic in topics if topic in image}

    member1 = ConsumerGroupMember("member1", subscribed_topic_names=["foo"])
    member2 = ConsumerGroupMember("member2", subscribed_topic_names=["bar"])
    member3 = ConsumerGroupMember("member3", subscribed_topic_names=["zar"])
    group, _ = new_group("group-foo")

    def with_change(old, new) -> dict:
        return metadata(subscribed_topics_with(group, old, new, group.resolved_regexes))

    def without(member) -> dict:
        return with_change(member, attrs.evolve(member, subscribed_topic_names=()))

    assert metadata(group.subscribed_topics()) == {}
    assert with_change(None, member1) == {"foo": 1}
    group.update_member(member1)
    assert metadata(group.subscribed_topics()) == {"foo": 1}
    assert without(member1) == {}
    assert with_change(None, member2) == {"foo": 1, "bar": 2}
    group.update_member(member2)
    assert metadata(group.subscribed_topics()) == {"foo": 1, "bar": 2}
    assert without(member2) == {"foo": 1}
    assert without(member1) == {"bar": 2}
    assert with_change(None, member3) == {"foo": 1, "bar": 2, "zar": 3}
    group.update_member(member3)
    assert metadata(group.subscribed_topics()) == {"foo": 1, "bar": 2, "zar": 3}

    # Kafka's computeSubscribedTopicNames(removed members): kgroup removes them, then recomputes.
    def after_removing(*members) -> dict:
        copy, _ = new_group("group-foo")
        for member in (member1, member2, member3):
            copy.update_member(member)
        for member in members:
            copy.remove_member(member.member_id)
        return metadata(copy.subscribed_topics())

    assert after_removing(member1, member2, member3) == {}
    assert after_removing(member2, member3) == {"foo": 1}
    assert after_removing(member1) == {"bar": 2, "zar": 3}
    assert after_removing() == {"foo": 1, "bar": 2, "zar": 3}


def _subscription_type(group: ConsumerGroup) -> str:
    """Kafka's ModernGroup.subscriptionType over the group's per-topic subscriber counts: homogeneous
    when every subscribed topic is subscribed by every member."""
    members = len(group.members)
    counts = group.topic_subscriber_counts
    return "HOMOGENEOUS" if all(count == members for count in counts.values()) else "HETEROGENEOUS"


def test_testUpdateSubscribedTopicNamesAndSubscriptionType():
    """kgroup keeps the subscriber count per topic (Kafka's subscribedTopicNames map); its uniform
    assignor picks its path from the members' subscriptions itself, so the subscription type is derived
    here from the counts by Kafka's rule."""
    member1 = ConsumerGroupMember("member1", subscribed_topic_names=["foo"])
    member2 = ConsumerGroupMember("member2", subscribed_topic_names=["bar", "foo"])
    member3 = ConsumerGroupMember("member3", subscribed_topic_names=["bar", "foo"])
    group, _ = new_group("group-foo")
    assert dict(group.topic_subscriber_counts) == {}
    assert _subscription_type(group) == "HOMOGENEOUS"
    group.update_member(member1)
    assert dict(group.topic_subscriber_counts) == {"foo": 1}
    assert _subscription_type(group) == "HOMOGENEOUS"
    group.update_member(member2)
    assert dict(group.topic_subscriber_counts) == {"foo": 2, "bar": 1}
    assert _subscription_type(group) == "HETEROGENEOUS"
    group.update_member(member3)
    assert dict(group.topic_subscriber_counts) == {"foo": 3, "bar": 2}
    assert _subscription_type(group) == "HETEROGENEOUS"
    group.remove_member("member1")
    assert dict(group.topic_subscriber_counts) == {"foo": 2, "bar": 2}
    assert _subscription_type(group) == "HOMOGENEOUS"
    group.update_member(ConsumerGroupMember("member2", subscribed_topic_names=["bar", "foo", "zar"]))
    assert dict(group.topic_subscriber_counts) == {"foo": 2, "bar": 2, "zar": 1}
    assert _subscription_type(group) == "HETEROGENEOUS"


def test_testIsSubscribedToTopic():
    group, _ = new_group("group-foo")
    group.update_member(ConsumerGroupMember("member1", subscribed_topic_names=["foo"]))
    group.update_member(ConsumerGroupMember("member2", subscribed_topic_names=["bar"]))
    assert group.subscribed_topics() == {"foo", "bar"}
    group.remove_member("member1")
    assert "foo" not in group.subscribed_topics()
    group.remove_member("member2")
    assert "bar" not in group.subscribed_topics()


# -- offsets, describe -------------------------------------------------------------------------------


def test_testValidateTransactionalOffsetCommit():
    """Kafka's validateOffsetCommit with isTransactional, as OffsetMetadataManager's TxnOffsetCommit path
    answers it (a stale member epoch is ILLEGAL_GENERATION there); ported through TxnOffsetCommit.  Kafka
    parametrizes it over the OffsetCommit versions, which the transactional check ignores."""
    def txn_commit(ctx: Ctx, member_id: str, generation_id: int) -> ErrorCode:
        commit = PartitionOffsetCommit(TopicPartition("foo", 0), OffsetAndMetadata(100))
        response = ctx.call(TxnOffsetCommitRequest("txn", GROUP, 1, 0, (commit,), generation_id=generation_id,
                                                   member_id=member_id))
        return response.partitions[0].error_code

    ctx = loaded_ctx([])
    # An admin client's commit (no member id, epoch -1) passes only while the group is empty.
    assert txn_commit(ctx, "", -1) is E.NONE
    assert txn_commit(ctx, "member-id", 0) is E.UNKNOWN_MEMBER_ID
    ctx = loaded_ctx([ConsumerGroupMember("member-id")])
    assert txn_commit(ctx, "", -1) is E.UNKNOWN_MEMBER_ID
    assert txn_commit(ctx, "member-id", 10) is E.ILLEGAL_GENERATION
    assert txn_commit(ctx, "member-id", 0) is E.NONE


def test_testAsDescribedGroup():
    """Members at the group's epoch, 1 (KAFKA-20268; Kafka's 0), so the group is Stable as in Kafka."""
    ctx = loaded_ctx([ConsumerGroupMember("member1", member_epoch=1, subscribed_topic_names=["foo"],
                                          server_assignor="assignorName"),
                      ConsumerGroupMember("member2", member_epoch=1)])
    (described,) = ctx.call(ConsumerGroupDescribeRequest((GROUP,))).groups
    assert described == DescribedConsumerGroup(
        E.NONE, GROUP, group_state="Stable", group_epoch=1, assignment_epoch=1, assignor_name="assignorName",
        members=(DescribedConsumerGroupMember("member1", None, None, 1, "", "", ("foo",)),
                 DescribedConsumerGroupMember("member2", None, None, 1, "", "", ())))


# -- classic members (online migration) -------------------------------------------------------------


def _classic(*protocol_names: str) -> ClassicMemberMetadata:
    return ClassicMemberMetadata(45_000, tuple(JoinGroupProtocol(name, b"") for name in protocol_names))


def test_testClassicMembersSupportedProtocols():
    group, _ = new_group()
    member1 = ConsumerGroupMember("member-1", classic_member_metadata=_classic("range"))
    group.update_member(member1)
    member2 = ConsumerGroupMember("member-2", classic_member_metadata=_classic("roundrobin", "range"))
    group.update_member(member2)
    assert group.classic_members_supported_protocols == {"range": 2, "roundrobin": 1}
    assert group.supports_classic_protocols(CONSUMER_PROTOCOL_TYPE, ("range", "sticky"))
    assert not group.supports_classic_protocols(CONSUMER_PROTOCOL_TYPE, ("sticky", "roundrobin"))

    group.update_member(attrs.evolve(member2, classic_member_metadata=_classic("range")))
    assert group.classic_members_supported_protocols == {"range": 2}

    group.update_member(attrs.evolve(member1, classic_member_metadata=_classic("roundrobin", "range")))
    group.update_member(attrs.evolve(member2, classic_member_metadata=_classic("roundrobin", "range")))
    assert group.classic_members_supported_protocols == {"range": 2, "roundrobin": 2}
    assert group.supports_classic_protocols(CONSUMER_PROTOCOL_TYPE, ("sticky", "roundrobin"))


def test_testNumClassicProtocolMembers():
    group, _ = new_group()
    member1 = ConsumerGroupMember("member-1", classic_member_metadata=_classic("range"))
    group.update_member(member1)
    assert group.classic_member_count == 1

    group.update_member(ConsumerGroupMember("member-2"))
    assert group.classic_member_count == 1
    assert not group.all_members_use_classic_protocol_except("member-1")
    assert group.all_members_use_classic_protocol_except("member-2")

    group.remove_member("member-1")
    group.update_member(ConsumerGroupMember("member-3"))
    assert group.classic_member_count == 0
    assert not group.all_members_use_classic_protocol_except("member-2")

    group.remove_member("member-2")
    group.update_member(ConsumerGroupMember("member-2", classic_member_metadata=_classic("range")))
    assert group.classic_member_count == 1


def test_testCreateGroupTombstoneRecordsWithReplacedMember():
    """Kafka writes the tombstones of a consumer group whose static member-2 is being replaced by
    new-member-2 (the downgrade on a static replacement): member-1's and new-member-2's.  kgroup replaces
    the static member first (replace_static_member, in the same heartbeat) and then writes the group's
    tombstones; its member tombstone covers Kafka's current-assignment, target and subscription
    tombstones, and the classic group's header written after them replaces Kafka's epoch, target-epoch
    and subscription-metadata tombstones."""
    group, _ = new_group("group")
    group.update_member(ConsumerGroupMember("member-1", classic_member_metadata=_classic("range")))
    group.update_member(ConsumerGroupMember("member-2", instance_id="instance-id-2"))
    group.replace_static_member("member-2", ConsumerGroupMember("new-member-2", instance_id="instance-id-2"))
    assert sorted(group.tombstone_records(), key=lambda r: r.member_id) == [
        ConsumerGroupMemberTombstone("group", "member-1"),
        ConsumerGroupMemberTombstone("group", "new-member-2")]


def test_testFromClassicGroup():
    """ConsumerGroup.fromClassicGroup is kgroup's migration.consumer_group_from_classic; the classic group
    (Stable, generation 10, one member) is replayed from its records as Kafka's tests build it."""
    member_id = "member-id"
    owned = [TopicPartition("foo", 0), TopicPartition("bar", 0)]
    subscription = encode_subscription(Subscription(["foo", "bar"], owned_partitions=owned))
    protocols = (JoinGroupProtocol("range", subscription),)
    records = [
        GroupMetadataRecord(group_id="group-id", state="Stable", generation_id=10,
                            protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name="range", leader_id=member_id),
        MemberMetadataRecord(group_id="group-id", member_id=member_id, group_instance_id=None,
                             client_id="client-id", client_host="client-host", session_timeout_ms=5000,
                             rebalance_timeout_ms=500, protocols=protocols,
                             assignment=encode_assignment(Assignment(owned))),
    ]
    ctx = Ctx(topics={"foo": 1, "bar": 1}, records=records)
    persisted = consumer_group_from_classic(ctx.group("group-id"), ctx.config, ctx.topics.get)
    group, _ = new_group("group-id")
    group.restore(persisted, {})

    assert group.group_id == "group-id"
    assert group.group_epoch == 10
    assert group.state is CG.STABLE
    assert group.preferred_assignor("<default>") == "<default>"
    assert dict(group.members) == {member_id: ConsumerGroupMember(
        member_id, member_epoch=10, previous_member_epoch=10, state=MemberState.STABLE, instance_id=None,
        rack_id=None, rebalance_timeout_ms=500, client_id="client-id", client_host="client-host",
        subscribed_topic_names=["foo", "bar"], assigned_partitions=owned,
        classic_member_metadata=ClassicMemberMetadata(5000, protocols))}
