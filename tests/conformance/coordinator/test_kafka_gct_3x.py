"""Kafka GroupCoordinatorTest.scala (core, 3.x): classic-group behaviour that the trunk
GroupMetadataManagerTest does not cover (request validation done by the 3.x coordinator itself,
offsets through the coordinator, ListGroups / DescribeGroups / DeleteGroups).  One test per
Kafka test, named after it.  Defaults follow the Scala test: initial delay 50 ms, session and
rebalance timeouts 500 ms.
"""
from __future__ import annotations

from coordinator_kafka_gmm_harness import SUPERSET, Ctx

from kgroup.core.coordinator import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import JoinGroupRequest

E = ErrorCode
S = GroupState
GROUP = "groupId"
LEADER, FOLLOWER = "leader", "follower"


def _ctx(**kw) -> Ctx:
    return Ctx(initial_delay_ms=50, min_session_ms=10, max_session_ms=600_000, **kw)


def _dynamic_join(ctx: Ctx, group_id: str = GROUP, **kw):
    """GroupCoordinatorTest.dynamicJoinGroup: MEMBER_ID_REQUIRED round, join, advance the initial delay."""
    first = ctx.call(ctx.join_request(group_id=group_id, **kw))
    assert first.error_code is E.MEMBER_ID_REQUIRED
    key = ctx.join(group_id=group_id, member_id=first.member_id, **kw)
    ctx.sleep(51)
    return ctx.result(key)


def _stable_single_member(ctx: Ctx, group_id: str = GROUP, **kw):
    joined = _dynamic_join(ctx, group_id, **kw)
    assert ctx.result(ctx.sync(joined.member_id, joined.generation_id, group_id=group_id,
                               assignments={joined.member_id: b""})).error_code is E.NONE
    return joined


def test_testJoinGroupSessionTimeoutTooSmall():
    ctx = _ctx()
    assert ctx.call(ctx.join_request(group_id=GROUP, session_ms=9)).error_code is E.INVALID_SESSION_TIMEOUT


def test_testJoinGroupSessionTimeoutTooLarge():
    ctx = _ctx()
    too_large = ctx.join_request(group_id=GROUP, session_ms=600_001)
    assert ctx.call(too_large).error_code is E.INVALID_SESSION_TIMEOUT


def test_testInvalidGroupId():
    ctx = _ctx()
    assert ctx.call(JoinGroupRequest("", session_timeout_ms=500)).error_code is E.INVALID_GROUP_ID


def test_testValidJoinGroup():
    ctx = _ctx()
    assert _dynamic_join(ctx).error_code is E.NONE


def test_testSyncDeadGroup():
    ctx = _ctx()
    ctx.create_group(GROUP)
    assert ctx.delete(GROUP) == [E.NONE]
    assert ctx.result(ctx.sync("member", 1, group_id=GROUP)).error_code is E.COORDINATOR_NOT_AVAILABLE


def test_testNewMemberFailureAfterSyncGroupCompletion():
    ctx = _ctx()
    first = _stable_single_member(ctx)
    assert first.leader == first.member_id
    other = ctx.join(group_id=GROUP, api_version=3)
    rejoin = ctx.join(group_id=GROUP, member_id=first.member_id)
    assert ctx.result(rejoin).error_code is E.NONE and ctx.result(other).error_code is E.NONE
    generation, second_id = ctx.result(rejoin).generation_id, ctx.result(other).member_id
    follower_sync = ctx.sync(second_id, generation, group_id=GROUP)
    leader_sync = ctx.sync(first.member_id, generation, group_id=GROUP,
                           assignments={first.member_id: b"", second_id: b""})
    assert ctx.result(leader_sync).error_code is E.NONE and ctx.result(follower_sync).error_code is E.NONE
    ctx.sleep(500 + 1)
    assert ctx.state(GROUP) is S.EMPTY and not ctx.group(GROUP).members


def test_testOffsetCommitDeadGroup():
    ctx = _ctx()
    ctx.create_group("deadGroupId")
    assert ctx.delete("deadGroupId") == [E.NONE]
    assert ctx.commit("deadGroupId", member_id="memberId", generation_id=1) is E.COORDINATOR_NOT_AVAILABLE


def test_staticMemberCommitOffsetWithInvalidMemberId():
    ctx = _ctx()
    r = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, group_id=GROUP, rebalance_ms=500,
                                              session_ms=500)
    assert ctx.commit(GROUP, member_id=r.leader_id, generation_id=r.generation_id) is E.NONE
    code = ctx.commit(GROUP, member_id="invalid-member", generation_id=r.generation_id, instance_id=LEADER)
    assert code is E.FENCED_INSTANCE_ID


def _group_stuck_in_rebalance_due_to_nonjoined_static_member(ctx: Ctx):
    """GroupCoordinatorTest.groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember."""
    r = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, group_id=GROUP, rebalance_ms=500,
                                              session_ms=1_000)
    dynamic = ctx.join(group_id=GROUP, protocols=SUPERSET, session_ms=1_000, api_version=3)
    ctx.sleep(500 + 1)
    joined = ctx.result(dynamic)
    assert joined.error_code is E.NONE and joined.leader == joined.member_id
    assert len(joined.members) == 3 and joined.generation_id == 2
    assert ctx.state(GROUP) is S.COMPLETING_REBALANCE
    leave = ctx.leave((r.follower_id, None), group_id=GROUP)
    assert leave.members[0].error_code is E.NONE and ctx.state(GROUP) is S.PREPARING_REBALANCE
    ctx.sleep(500 + 1)
    assert list(ctx.group(GROUP).members) == [r.leader_id]
    assert ctx.group(GROUP).generation_id == 2 and ctx.state(GROUP) is S.PREPARING_REBALANCE
    return r


def test_testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout():
    ctx = _ctx()
    _group_stuck_in_rebalance_due_to_nonjoined_static_member(ctx)
    ctx.sleep(500 + 1)
    group = ctx.group(GROUP)
    assert not group.members and group.leader_id is None
    assert group.generation_id == 3 and ctx.state(GROUP) is S.EMPTY


def test_testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout():
    ctx = _ctx()
    _group_stuck_in_rebalance_due_to_nonjoined_static_member(ctx)
    response = ctx.call(ctx.join_request(group_id=GROUP, instance_id=LEADER))
    assert response.error_code is E.NONE and response.generation_id == 3
    assert {m.group_instance_id for m in response.members} == {LEADER}
    assert list(ctx.group(GROUP).members) == [response.member_id]
    assert ctx.group(GROUP).leader_id is not None and ctx.state(GROUP) is S.COMPLETING_REBALANCE


def test_testCommitMaintainsSession():
    ctx = _ctx()
    joined = _stable_single_member(ctx, session_ms=500)
    ctx.sleep(250)
    assert ctx.commit(GROUP, member_id=joined.member_id, generation_id=joined.generation_id) is E.NONE
    ctx.sleep(250 + 1)
    assert ctx.heartbeat(joined.member_id, joined.generation_id, group_id=GROUP) is E.NONE


def test_testCommitOffsetFromUnknownGroup():
    ctx = _ctx()
    assert ctx.commit(GROUP, member_id="memberId", generation_id=1) is E.ILLEGAL_GENERATION


def test_testCommitOffsetWithDefaultGeneration():
    ctx = _ctx()
    assert ctx.commit(GROUP) is E.NONE


def test_testCommitOffsetsAfterGroupIsEmpty():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    assert ctx.leave((joined.member_id, None), group_id=GROUP).members[0].error_code is E.NONE
    assert ctx.commit(GROUP, offset=0) is E.NONE
    fetched = ctx.fetch(GROUP)
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed.offset == 0


def test_testFetchOffsets():
    from kgroup.core.messages import OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit
    from kgroup.values import TopicPartition
    ctx = _ctx()
    tp = TopicPartition("topic", 0)
    committed = OffsetAndMetadata(97, "some metadata", 15)
    response = ctx.call(OffsetCommitRequest(GROUP, (PartitionOffsetCommit(tp, committed),)))
    assert response.partitions[0].error_code is E.NONE
    from kgroup.core.messages import OffsetFetchRequest
    fetched = ctx.call(OffsetFetchRequest(GROUP, (tp,)))
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed == committed


def test_testCommitAndFetchOffsetsWithEmptyGroup():
    ctx = _ctx()
    assert ctx.commit("", offset=0) is E.NONE
    fetched = ctx.fetch("")
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed.offset == 0
    [described] = ctx.describe("")
    assert described.error_code is E.NONE and described.group_state == "Empty"
    assert ctx.delete("") == [E.NONE]
    fetched = ctx.fetch("")
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed is None


def test_testFetchOffsetForUnknownPartition():
    ctx = _ctx()
    fetched = ctx.fetch(GROUP)
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed is None


def test_testFetchAllOffsets():
    ctx = _ctx()
    assert ctx.fetch(GROUP, partitions=None).partitions == ()
    for partition, offset in ((0, 15), (1, 16), (2, 17)):
        assert ctx.commit(GROUP, offset=offset, partition=partition) is E.NONE
    fetched = ctx.fetch(GROUP, partitions=None)
    assert fetched.error_code is E.NONE
    offsets = {p.topic_partition.partition: p.committed.offset for p in fetched.partitions}
    assert offsets == {0: 15, 1: 16, 2: 17}


def test_testCommitOffsetInCompletingRebalance():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    code = ctx.commit(GROUP, member_id=joined.member_id, generation_id=joined.generation_id)
    assert code is E.REBALANCE_IN_PROGRESS


def test_testCommitOffsetInCompletingRebalanceFromUnknownMemberId():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    assert ctx.commit(GROUP, member_id="", generation_id=joined.generation_id) is E.UNKNOWN_MEMBER_ID


def test_testCommitOffsetInCompletingRebalanceFromIllegalGeneration():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    code = ctx.commit(GROUP, member_id=joined.member_id, generation_id=joined.generation_id + 1)
    assert code is E.ILLEGAL_GENERATION


def test_testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId():
    ctx = _ctx()
    assert ctx.commit(GROUP, instance_id="instance-id") is E.NONE
    assert ctx.commit(GROUP, member_id="unknown") is E.NONE


def test_testSingleLeaveDeadGroup():
    ctx = _ctx()
    ctx.create_group("deadGroupId")
    assert ctx.delete("deadGroupId") == [E.NONE]
    assert ctx.leave(("memberId", None), group_id="deadGroupId").error_code is E.COORDINATOR_NOT_AVAILABLE


def test_testBatchLeaveDeadGroup():
    ctx = _ctx()
    ctx.create_group("deadGroupId")
    assert ctx.delete("deadGroupId") == [E.NONE]
    leave = ctx.leave(("memberId", None), ("memberId", None), group_id="deadGroupId")
    assert leave.error_code is E.COORDINATOR_NOT_AVAILABLE


def test_testListGroupsIncludesStableGroups():
    ctx = _ctx()
    _stable_single_member(ctx)
    assert [(g.group_id, g.protocol_type, g.group_state) for g in ctx.list_groups()] == [
        (GROUP, "consumer", "Stable")]


def test_testListGroupsIncludesRebalancingGroups():
    ctx = _ctx()
    _dynamic_join(ctx)
    assert [(g.group_id, g.group_state) for g in ctx.list_groups()] == [(GROUP, "CompletingRebalance")]


def test_testListGroupsWithStates():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    assert [g.group_id for g in ctx.list_groups("CompletingRebalance")] == [GROUP]
    assert ctx.list_groups("Stable", "Empty") == ()
    ctx.result(ctx.sync(joined.member_id, joined.generation_id, group_id=GROUP))
    assert [g.group_id for g in ctx.list_groups("Stable")] == [GROUP]
    ctx.leave((joined.member_id, None), group_id=GROUP)
    assert [g.group_id for g in ctx.list_groups("Empty")] == [GROUP]
    assert ctx.list_groups("Dead") == ()


def test_testDescribeGroupInactiveGroup():
    ctx = _ctx()
    [group] = ctx.describe(GROUP)
    assert (group.error_code, group.group_state) == (E.NONE, "Dead")
    assert (group.protocol_type, group.members) == ("", ())


def test_testDescribeGroupStableForDynamicMember():
    ctx = _ctx()
    joined = _stable_single_member(ctx)
    [group] = ctx.describe(GROUP)
    assert (group.protocol_type, group.protocol_data) == ("consumer", "range")
    assert [m.member_id for m in group.members] == [joined.member_id]


def test_testDescribeGroupStableForStaticMember():
    ctx = _ctx()
    key = ctx.join(group_id=GROUP, instance_id=LEADER)
    ctx.sleep(51)
    joined = ctx.result(key)
    ctx.result(ctx.sync(joined.member_id, joined.generation_id, group_id=GROUP))
    [group] = ctx.describe(GROUP)
    assert (group.protocol_type, group.protocol_data) == ("consumer", "range")
    assert [(m.member_id, m.group_instance_id) for m in group.members] == [(joined.member_id, LEADER)]


def test_testDescribeGroupRebalancing():
    # 3.x also blanked assignments outside Stable; Kafka 4.x (and kgroup) show the stored one,
    # which is empty in a first generation, so this scenario holds for both.
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    [group] = ctx.describe(GROUP)
    assert (group.protocol_type, group.protocol_data) == ("consumer", "")
    assert group.group_state == "CompletingRebalance"
    assert joined.member_id in [m.member_id for m in group.members]
    assert all(m.member_metadata == b"" and m.member_assignment == b"" for m in group.members)


def test_testDeleteNonEmptyGroup():
    ctx = _ctx()
    _dynamic_join(ctx)
    assert ctx.delete(GROUP) == [E.NON_EMPTY_GROUP]


def test_testDeleteGroupWithInvalidGroupId():
    # 3.x answered INVALID_GROUP_ID for "" here; Kafka 4.x (and kgroup) accept the empty group id
    # for DeleteGroups: no such group.
    ctx = _ctx()
    assert ctx.delete("") == [E.GROUP_ID_NOT_FOUND]


def test_testDeleteEmptyGroup():
    ctx = _ctx()
    joined = _dynamic_join(ctx)
    ctx.leave((joined.member_id, None), group_id=GROUP)
    assert ctx.delete(GROUP) == [E.NONE]
    assert ctx.describe(GROUP)[0].group_state == "Dead"


def test_testDeleteEmptyGroupWithStoredOffsets():
    from kgroup.core.coordinator_common.records import GroupTombstone, OffsetTombstone
    ctx = _ctx()
    joined = _stable_single_member(ctx)
    assert ctx.commit(GROUP, member_id=joined.member_id, generation_id=joined.generation_id) is E.NONE
    ctx.leave((joined.member_id, None), group_id=GROUP)
    before = len(ctx.records)
    assert ctx.delete(GROUP) == [E.NONE]
    new = ctx.records[before:]
    assert any(isinstance(r, OffsetTombstone) for r in new) and GroupTombstone(GROUP) in new
    assert ctx.describe(GROUP)[0].group_state == "Dead"


def test_testCompleteHeartbeatWithMemberAlreadyRemoved():
    ctx = _ctx()
    r = ctx.static_members_join_and_rebalance(LEADER, FOLLOWER, group_id=GROUP, rebalance_ms=500,
                                              session_ms=500)
    assert ctx.heartbeat(r.leader_id, r.generation_id, group_id=GROUP) is E.NONE
    ctx.leave(("", LEADER), group_id=GROUP)
    # The removed member's session deadline is gone: firing timers later does nothing for it.
    assert ctx.coordinator.session_deadline_ms(GROUP, r.leader_id) is None
    ctx.sleep(1)
    assert r.leader_id not in ctx.group(GROUP).members


# -- OffsetDelete (GroupCoordinator.handleDeleteOffsets; OffsetMetadataManager.deleteOffsets in 4.x) --


def _commit_topics(ctx: Ctx, joined, *topics: str) -> None:
    from kgroup.core.messages import OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit
    from kgroup.values import TopicPartition
    commits = tuple(PartitionOffsetCommit(TopicPartition(t, 0), OffsetAndMetadata(37)) for t in topics)
    response = ctx.call(OffsetCommitRequest(GROUP, commits, generation_id=joined.generation_id,
                                            member_id=joined.member_id))
    assert [p.error_code for p in response.partitions] == [E.NONE] * len(topics)


def _delete_offsets(ctx: Ctx, *topics: str):
    from kgroup.core.messages import OffsetDeleteRequest
    from kgroup.values import TopicPartition
    response = ctx.call(OffsetDeleteRequest(GROUP, tuple(TopicPartition(t, 0) for t in topics)))
    return response.error_code, {p.topic_partition.topic: p.error_code for p in response.partitions}


def _committed(ctx: Ctx, *topics: str) -> dict:
    from kgroup.core.messages import OffsetFetchRequest
    from kgroup.values import TopicPartition
    fetched = ctx.call(OffsetFetchRequest(GROUP, tuple(TopicPartition(t, 0) for t in topics)))
    return {p.topic_partition.topic: (p.committed.offset if p.committed else -1) for p in fetched.partitions}


def test_testDeleteOffsetOfNonExistingGroup():
    assert _delete_offsets(_ctx(), "foo") == (E.GROUP_ID_NOT_FOUND, {})


def test_testDeleteOffsetOfNonEmptyNonConsumerGroup():
    ctx = _ctx()
    _dynamic_join(ctx, protocol_type="My Protocol")
    assert _delete_offsets(ctx, "foo") == (E.NON_EMPTY_GROUP, {})


def test_testDeleteOffsetOfEmptyNonConsumerGroup():
    ctx = _ctx()
    joined = _stable_single_member(ctx, protocol_type="My Protocol")
    _commit_topics(ctx, joined, "foo", "bar")
    ctx.leave((joined.member_id, None), group_id=GROUP)
    assert ctx.state(GROUP) is S.EMPTY
    assert _delete_offsets(ctx, "foo") == (E.NONE, {"foo": E.NONE})
    assert _committed(ctx, "foo", "bar") == {"foo": -1, "bar": 37}


def test_testDeleteOffsetOfConsumerGroupWithUnparsableProtocol():
    """The members' metadata is not ConsumerProtocol bytes: the group counts as subscribed to everything."""
    ctx = _ctx()
    joined = _stable_single_member(ctx)
    _commit_topics(ctx, joined, "foo")
    assert _delete_offsets(ctx, "foo") == (E.NONE, {"foo": E.GROUP_SUBSCRIBED_TO_TOPIC})
    assert _committed(ctx, "foo") == {"foo": 37}


def test_testDeleteOffsetOfDeadConsumerGroup():
    ctx = _ctx()
    ctx.create_group(GROUP)
    assert ctx.delete(GROUP) == [E.NONE]
    assert _delete_offsets(ctx, "foo") == (E.GROUP_ID_NOT_FOUND, {})


def test_testDeleteOffsetOfEmptyConsumerGroup():
    ctx = _ctx()
    joined = _stable_single_member(ctx)
    _commit_topics(ctx, joined, "foo", "bar")
    ctx.leave((joined.member_id, None), group_id=GROUP)
    assert ctx.state(GROUP) is S.EMPTY
    before = len(ctx.records)
    assert _delete_offsets(ctx, "foo") == (E.NONE, {"foo": E.NONE})
    assert _committed(ctx, "foo", "bar") == {"foo": -1, "bar": 37}
    from kgroup.core.coordinator_common.records import OffsetTombstone
    from kgroup.values import TopicPartition
    assert ctx.records[before:] == [OffsetTombstone(GROUP, TopicPartition("foo", 0))]


def test_testDeleteOffsetOfStableConsumerGroup():
    from kgroup.core.messages import JoinGroupProtocol
    from kgroup.values import Subscription
    from kgroup.wire.consumer_protocol import encode_subscription
    ctx = _ctx()
    protocols = (JoinGroupProtocol("protocol", encode_subscription(Subscription(["bar"]))),)
    joined = _stable_single_member(ctx, protocols=protocols)
    _commit_topics(ctx, joined, "foo", "bar")
    assert ctx.state(GROUP) is S.STABLE
    assert _delete_offsets(ctx, "foo", "bar") == (E.NONE, {"foo": E.NONE, "bar": E.GROUP_SUBSCRIBED_TO_TOPIC})
    assert _committed(ctx, "foo", "bar") == {"foo": -1, "bar": 37}
    # What a coordinator that takes the group over loads: the deleted offset stays deleted.
    from kgroup.core.coordinator import GroupCoordinator
    loaded = GroupCoordinator.load(ctx.records, ctx.now_ms, ctx.config)
    assert loaded.persisted_view().offsets == ctx.coordinator.persisted_view().offsets
