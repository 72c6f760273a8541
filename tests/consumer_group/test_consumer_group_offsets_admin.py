"""Offsets, admin APIs and group-type coexistence for KIP-848 consumer groups on the in-memory coordinator.

Sources: Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch (ConsumerGroupTest
testValidateOffsetCommit, testValidateOffsetFetch), GroupMetadataManager.getOrMaybeCreateConsumerGroup
and classicGroupJoin (a group id keeps its type), consumerGroupDescribe and listGroups.
"""
from __future__ import annotations

from consumer_group_harness import GROUP, Driver, ok, tps

from kgroup.core.consumer_group_messages import ConsumerGroupDescribeRequest
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, JoinGroupProtocol, JoinGroupRequest, ListGroupsRequest,
    OffsetAndMetadata, OffsetCommitRequest, OffsetFetchRequest, PartitionOffsetCommit,
)
from kgroup.values import TopicPartition

E = ErrorCode
FOO0 = TopicPartition("foo", 0)


def commit(d: Driver, member_id: str, epoch: int, offset: int = 5, group_id: str = GROUP, api_version=9):
    request = OffsetCommitRequest(group_id, (PartitionOffsetCommit(FOO0, OffsetAndMetadata(offset)),),
                                  epoch, member_id, api_version=api_version)
    return d.call(request).partitions[0].error_code


def test_validate_offset_commit():
    """ConsumerGroupTest.testValidateOffsetCommit: unknown member, stale epoch, old API version.  The
    member of a new group is at epoch 2 (Kafka 4.4 starts groups at epoch 1: KAFKA-20268)."""
    d = Driver({"foo": 2})
    ok(d.join("m", ["foo"]))
    assert commit(d, "unknown", 2) is E.UNKNOWN_MEMBER_ID
    assert commit(d, "m", 0) is E.STALE_MEMBER_EPOCH
    assert commit(d, "m", 1) is E.STALE_MEMBER_EPOCH
    assert commit(d, "m", 3) is E.STALE_MEMBER_EPOCH
    assert commit(d, "m", 2, api_version=8) is E.UNSUPPORTED_VERSION
    assert commit(d, "m", 2) is E.NONE
    assert d.group().offsets[FOO0].offset == 5
    d.assert_replays()


def test_zombie_member_commit_is_fenced_with_stale_member_epoch():
    """The issue's zombie: a member whose epoch moved on commits with its old epoch."""
    d = Driver({"foo": 2})
    ok(d.join("m1", ["foo"]))
    ok(d.join("m2", ["foo"]))
    ok(d.heartbeat("m1", 2, topic_partitions=tps({"foo": [0, 1]})))
    ok(d.heartbeat("m1", 2, topic_partitions=d.group().members["m1"].assigned_partitions))
    assert d.group().members["m1"].member_epoch == 3
    assert commit(d, "m1", 2) is E.STALE_MEMBER_EPOCH
    assert commit(d, "m1", 3) is E.NONE


def test_simple_commit_to_empty_consumer_group_and_admin_fetch():
    """ConsumerGroupTest.testValidateOffsetCommit (epoch -1 on an empty group) and testValidateOffsetFetch."""
    d = Driver({"foo": 2})
    ok(d.join("m", ["foo"]))
    ok(d.heartbeat("m", -1))
    assert commit(d, "", -1, offset=7) is E.NONE
    fetched = d.call(OffsetFetchRequest(GROUP, (FOO0,)))
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed.offset == 7


def test_validate_offset_fetch():
    """ConsumerGroupTest.testValidateOffsetFetch: OffsetFetch v9 checks the member and its epoch."""
    d = Driver({"foo": 2})
    ok(d.join("m", ["foo"]))
    assert commit(d, "m", 2) is E.NONE
    assert d.call(OffsetFetchRequest(GROUP, (FOO0,), member_id="x", member_epoch=2)).error_code \
        is E.UNKNOWN_MEMBER_ID
    assert d.call(OffsetFetchRequest(GROUP, (FOO0,), member_id="m", member_epoch=1)).error_code \
        is E.STALE_MEMBER_EPOCH
    fetched = d.call(OffsetFetchRequest(GROUP, (FOO0,), member_id="m", member_epoch=2))
    assert fetched.partitions[0].committed.offset == 5


def _join_classic(d: Driver, group_id: str, member_id: str = ""):
    """A classic member joins (v3: no MEMBER_ID_REQUIRED round trip), through the initial delay."""
    responses = d.send(JoinGroupRequest(group_id, member_id, 10_000, 10_000,
                                        protocols=(JoinGroupProtocol("range", b"\x00"),), api_version=3))
    if not responses:
        responses = d.advance(d.config.group_initial_rebalance_delay_ms)
    (response,) = responses
    return response


def test_group_id_keeps_its_type():
    """getOrMaybeCreateConsumerGroup / classicGroupJoin: a non-empty group of one type takes a member of
    the other protocol only through online migration, which needs ConsumerProtocol bytes (these are not:
    b"\x00"); an empty one changes type and keeps its offsets."""
    d = Driver({"foo": 2})
    assert _join_classic(d, "classic").error_code is E.NONE  # v3: joins at once, the group is not empty
    # convertToConsumerGroup: the embedded consumer protocol is malformed, the upgrade is refused.
    assert d.join("m", ["foo"], group_id="classic").error_code is E.GROUP_ID_NOT_FOUND
    ok(d.join("m", ["foo"]))
    # classicGroupJoinToConsumerGroup: deserializeSubscription throws IllegalStateException.
    assert _join_classic(d, GROUP).error_code is E.UNKNOWN_SERVER_ERROR
    # Empty consumer group -> classic group, offsets kept.
    assert commit(d, "m", 2, offset=9) is E.NONE
    ok(d.heartbeat("m", -1))
    assert _join_classic(d, GROUP).error_code is E.NONE
    assert d.coordinator.consumer_group(GROUP) is None
    assert d.call(OffsetFetchRequest(GROUP, (FOO0,))).partitions[0].committed.offset == 9
    d.assert_replays()


def test_empty_classic_group_becomes_consumer_group_with_its_offsets():
    """maybeDeleteEmptyClassicGroup: a consumer heartbeat takes over an empty classic group's id."""
    d = Driver({"foo": 2})
    # A simple commit creates an empty classic group.
    assert commit(d, "", -1, offset=3, group_id="g2") is E.NONE
    ok(d.join("m", ["foo"], group_id="g2"))
    group = d.group("g2")
    assert group.offsets[FOO0].offset == 3
    d.assert_replays()


def test_list_describe_and_delete_both_group_types():
    """listGroups with types (ListGroups v5), describeGroups and consumerGroupDescribe, deleteGroups."""
    d = Driver({"foo": 2})
    ok(d.join("m", ["foo"], client_id="cli"))
    assert _join_classic(d, "classic").error_code is E.NONE
    listed = {g.group_id: (g.group_type, g.group_state) for g in d.call(ListGroupsRequest()).groups}
    assert listed == {GROUP: ("consumer", "Stable"), "classic": ("classic", "CompletingRebalance")}
    assert [g.group_id for g in d.call(ListGroupsRequest(types_filter=("Consumer",))).groups] == [GROUP]
    assert [g.group_id for g in d.call(ListGroupsRequest(types_filter=("classic",))).groups] == ["classic"]

    # The classic DescribeGroups does not describe a consumer group: Kafka's
    # GroupMetadataManager.describeGroups answers it as a missing group, Dead with no members (Kafka 4.4's
    # recorded answer to consumer.describe-groups-on-consumer-group); ConsumerGroupDescribe does.
    (described,) = d.call(DescribeGroupsRequest((GROUP,))).groups
    assert (described.error_code, described.group_id, described.group_state) == (E.NONE, GROUP, "Dead")
    assert (described.protocol_type, described.protocol_data, described.members) == ("", "", ())

    answer = d.call(ConsumerGroupDescribeRequest((GROUP, "classic", "nope")))
    mine, classic, missing = answer.groups
    assert (mine.error_code, mine.group_epoch, mine.assignment_epoch) == (E.NONE, 2, 2)
    assert mine.assignor_name == "uniform"
    (member,) = mine.members
    assert (member.member_id, member.client_id, member.member_epoch) == ("m", "cli", 2)
    assert member.assignment == member.target_assignment == tuple(sorted(tps({"foo": [0, 1]})))
    assert classic.error_code is E.GROUP_ID_NOT_FOUND and missing.error_code is E.GROUP_ID_NOT_FOUND
    # Kafka's consumerGroupDescribe sets no state for them (Kafka 4.4's answer to consumer.describe.v1).
    assert (classic.group_state, missing.group_state) == ("", "")

    assert d.call(DeleteGroupsRequest((GROUP,))).results[0].error_code is E.NON_EMPTY_GROUP
    ok(d.heartbeat("m", -1))
    assert d.call(DeleteGroupsRequest((GROUP,))).results[0].error_code is E.NONE
    assert d.coordinator.consumer_group(GROUP) is None
    d.assert_replays()


def _delete_offsets(d: Driver, *tps_: TopicPartition):
    from kgroup.core.messages import OffsetDeleteRequest
    response = d.call(OffsetDeleteRequest(GROUP, tps_))
    return response.error_code, [(p.topic_partition, p.error_code) for p in response.partitions]


def test_consumer_group_offset_delete():
    """OffsetMetadataManagerTest.testConsumerGroupOffsetDelete: an empty consumer group's offset goes,
    with a tombstone that a coordinator taking over replays."""
    d = Driver({"foo": 2, "bar": 1})
    ok(d.join("m", ["foo"]))
    ok(d.heartbeat("m", -1))
    assert commit(d, "", -1, offset=7) is E.NONE
    assert _delete_offsets(d, FOO0) == (E.NONE, [(FOO0, E.NONE)])
    assert FOO0 not in d.group().offsets
    d.assert_replays()


def test_consumer_group_offset_delete_with_errors():
    """OffsetMetadataManagerTest.testConsumerGroupOffsetDeleteWithErrors: a topic a member subscribes to
    is refused with GROUP_SUBSCRIBED_TO_TOPIC (the group may have members: ConsumerGroup.validateOffsetDelete
    accepts any state); another topic's offset, stored or not, is deleted."""
    d = Driver({"foo": 2, "bar": 1})
    ok(d.join("m", ["foo"]))
    assert commit(d, "m", 2) is E.NONE
    bar0 = TopicPartition("bar", 0)
    assert _delete_offsets(d, bar0, FOO0) == (E.NONE, [(bar0, E.NONE), (FOO0, E.GROUP_SUBSCRIBED_TO_TOPIC)])
    assert d.group().offsets[FOO0].offset == 5
    assert _delete_offsets(Driver({"foo": 1}), FOO0) == (E.GROUP_ID_NOT_FOUND, [])  # no such group
