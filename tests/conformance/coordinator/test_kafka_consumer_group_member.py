"""Kafka's ConsumerGroupMemberTest (group-coordinator, org.apache.kafka.coordinator.group.modern.consumer,
trunk of October 2024), ported to kgroup's ConsumerGroupMember (kgroup.core.consumer_group.member).

kgroup's member is a frozen value built in one call, so Kafka's Builder is its constructor and
``attrs.evolve``.  Kafka's Builder.maybeUpdate* are what a heartbeat does with the fields it carries
(null: unchanged); asConsumerGroupDescribeMember is the ConsumerGroupDescribe answer; both are ported
through the coordinator's requests.  Kafka's member is keyed by topic ids, kgroup's by topic names.
"""
from __future__ import annotations


from kgroup.core.consumer_group.member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMetadataRecord, ConsumerGroupTargetAssignmentRecord,
)
from kgroup.core.consumer_group_messages import (
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DescribedConsumerGroupMember,
)
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import JoinGroupProtocol
from kgroup.values import Subscription, TopicPartition
from kgroup.wire.consumer_protocol import encode_subscription

from coordinator_kafka_gmm_harness import Ctx

E = ErrorCode
GROUP = "grp"


def tps(spec) -> frozenset[TopicPartition]:
    """``{"foo": [1, 2]}`` -> the partitions (Kafka's mkAssignment)."""
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


def test_testNewMember():
    protocols = (JoinGroupProtocol("range", bytes([1, 2, 3])),)
    member = ConsumerGroupMember(
        "member-id", member_epoch=10, previous_member_epoch=9, instance_id="instance-id", rack_id="rack-id",
        rebalance_timeout_ms=5000, client_id="client-id", client_host="hostname",
        subscribed_topic_names=["foo", "bar"], subscribed_topic_regex="regex", server_assignor="range",
        assigned_partitions=tps({"t1": [1, 2, 3]}), partitions_pending_revocation=tps({"t2": [4, 5, 6]}),
        classic_member_metadata=ClassicMemberMetadata(45_000, protocols))
    assert member.member_id == "member-id"
    assert member.member_epoch == 10 and member.previous_member_epoch == 9
    assert member.instance_id == "instance-id" and member.rack_id == "rack-id"
    assert member.client_id == "client-id" and member.client_host == "hostname"
    assert set(member.subscribed_topic_names) == {"bar", "foo"}
    assert member.subscribed_topic_regex == "regex"
    assert member.server_assignor == "range"
    assert member.assigned_partitions == tps({"t1": [1, 2, 3]})
    assert member.partitions_pending_revocation == tps({"t2": [4, 5, 6]})
    assert member.classic_member_metadata == ClassicMemberMetadata(45_000, protocols)
    assert member.classic_member_metadata.supported_protocols == protocols


def test_testUpdateMember():
    """Builder.maybeUpdate*(empty) keeps a field, maybeUpdate*(value) sets it: what a heartbeat does with
    the fields it leaves null or sends.  The instance id is the static member's key in a heartbeat (a
    different one is another member), so only the other fields change here."""
    config = GroupCoordinatorConfig(consumer_group_assignors=("range", "uniform"))
    coordinator = GroupCoordinator.load([], 0, config, topic_metadata={}.get)
    keys = iter(range(100))

    def heartbeat(**fields):
        request = ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id="member-id",
                                                instance_id="instance-id", client_id="client-id",
                                                client_host="hostname", **fields)
        (delivery,) = coordinator.handle(next(keys), request, 0).deliveries
        assert delivery.response.error_code is E.NONE, delivery.response
        return coordinator.consumer_group(GROUP).members["member-id"]

    member = heartbeat(member_epoch=0, rack_id="rack-id", rebalance_timeout_ms=5000, server_assignor="range",
                       subscribed_topic_names=("foo", "bar"), subscribed_topic_regex="regex",
                       topic_partitions=())
    # This is a no-op.
    assert heartbeat(member_epoch=member.member_epoch) == member

    updated = heartbeat(member_epoch=member.member_epoch, rack_id="new-rack-id", server_assignor="uniform",
                        subscribed_topic_names=("zar",), subscribed_topic_regex="new-regex",
                        rebalance_timeout_ms=6000)
    assert updated.rack_id == "new-rack-id"
    assert updated.subscribed_topic_names == ("zar",)
    assert updated.subscribed_topic_regex == "new-regex"
    assert updated.server_assignor == "uniform"
    assert updated.rebalance_timeout_ms == 6000
    assert updated.instance_id == "instance-id"


def _describe_ctx(member: ConsumerGroupMember, topics: dict, target=None) -> Ctx:
    records = [ConsumerGroupMetadataRecord(GROUP, member.member_epoch, member.member_epoch, ()),
               ConsumerGroupMemberRecord(GROUP, member)]
    if target is not None:
        records.append(ConsumerGroupTargetAssignmentRecord(GROUP, member.member_id, target))
    return Ctx(topics=topics, records=records)


def _described_member(ctx: Ctx) -> DescribedConsumerGroupMember:
    (group,) = ctx.call(ConsumerGroupDescribeRequest((GROUP,))).groups
    assert group.error_code is E.NONE
    (described,) = group.members
    return described


def test_testAsConsumerGroupDescribeMember():
    """Described: the assigned partitions (not those pending revocation) and the target."""
    topics = {"topic1": 3, "topic2": 3, "topic3": 3, "topic4": 3}
    member = ConsumerGroupMember(
        "member-uuid", member_epoch=10, previous_member_epoch=9, state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions=tps({"topic1": [0, 1, 2]}),
        partitions_pending_revocation=tps({"topic2": [3, 4, 5]}),
        client_id="clientId", instance_id="instanceId", rack_id="rackId", client_host="clientHost",
        subscribed_topic_names=["topic1", "topic2"], subscribed_topic_regex="topic.*")
    ctx = _describe_ctx(member, topics, target=tps({"topic4": [0, 1, 2]}))
    assert _described_member(ctx) == DescribedConsumerGroupMember(
        "member-uuid", "instanceId", "rackId", 10, "clientId", "clientHost", ("topic1", "topic2"), "topic.*",
        assignment=tps({"topic1": [0, 1, 2]}), target_assignment=tps({"topic4": [0, 1, 2]}))


def test_testAsConsumerGroupDescribeWithTargetAssignmentNull():
    ctx = _describe_ctx(ConsumerGroupMember("member-uuid", member_epoch=1), {})
    assert _described_member(ctx).target_assignment == ()


def test_testAsConsumerGroupDescribeWithTopicNameNotFound():
    """Partitions of a topic the metadata does not hold (deleted) are left out of the described
    assignment, as Kafka's topicPartitionsFromMap skips a topic id missing from the image."""
    member = ConsumerGroupMember("member-uuid", member_epoch=1, assigned_partitions=tps({"gone": [0, 1, 2]}))
    ctx = _describe_ctx(member, {"foo": 3}, target=tps({"gone": [0, 1, 2]}))
    described = _described_member(ctx)
    assert described == DescribedConsumerGroupMember("member-uuid", None, None, 1, "", "", ())


def test_testClassicProtocolListFromJoinRequestProtocolCollection():
    """Kafka converts a JoinGroup's protocols into the member's ClassicProtocol list (name and metadata);
    ported through a classic member's JoinGroup into a consumer group, whose classic metadata keeps them."""
    consumer = ConsumerGroupMember("consumer-member", member_epoch=1, subscribed_topic_names=["foo"])
    ctx = Ctx(topics={"foo": 1}, records=[ConsumerGroupMetadataRecord(GROUP, 1, 1, (("foo", 1),)),
                                          ConsumerGroupMemberRecord(GROUP, consumer)])
    metadata = encode_subscription(Subscription(["foo"]))
    protocols = (JoinGroupProtocol("range", metadata),)
    first = ctx.call(ctx.join_request(group_id=GROUP, protocols=protocols))
    assert first.error_code is E.MEMBER_ID_REQUIRED
    ctx.send(ctx.join_request(group_id=GROUP, member_id=first.member_id, protocols=protocols))
    joined = ctx.consumer_group(GROUP).members[first.member_id]
    assert joined.classic_member_metadata.supported_protocols == protocols
    assert joined.classic_member_metadata.protocol_names == ("range",)
