"""Kafka GroupMetadataManagerTest (group-coordinator, trunk): classic-group SyncGroup, Heartbeat,
session and sync timeouts.  One test per Kafka test, named after it."""
from __future__ import annotations

import pytest
from coordinator_kafka_gmm_harness import SUPERSET, Ctx

from kgroup.core.coordinator import GroupState
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
S = GroupState
LEADER, FOLLOWER = "leader-instance-id", "follower-instance-id"


@pytest.mark.parametrize("protocol_type, protocol_name, code, expected_type, expected_name", [
    pytest.param("protocolType", None, E.INCONSISTENT_GROUP_PROTOCOL, None, None,
                 id="testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent"),
    pytest.param(None, "protocolName", E.INCONSISTENT_GROUP_PROTOCOL, None, None,
                 id="testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent"),
    pytest.param(None, None, E.NONE, "consumer", "range",
                 id="testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided"),
    pytest.param("consumer", "range", E.NONE, "consumer", "range",
                 id="testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent"),
])
def test_testSyncGroupProtocolTypeAndNameWith(protocol_type, protocol_name, code, expected_type,
                                              expected_name):
    ctx = Ctx()
    ctx.create_group()
    leader = ctx.join(instance_id=LEADER, protocols=SUPERSET)
    follower = ctx.join(instance_id=FOLLOWER, protocols=SUPERSET)
    ctx.sleep(10_000)
    leader_id, follower_id = ctx.result(leader).member_id, ctx.result(follower).member_id
    generation = ctx.result(leader).generation_id
    for member_id in (leader_id, follower_id):
        response = ctx.result(ctx.sync(member_id, generation, protocol_type=protocol_type,
                                       protocol_name=protocol_name, assignments={leader_id: b""}))
        assert response.error_code is code
        assert (response.protocol_type, response.protocol_name) == (expected_type, expected_name)


def test_testSyncGroupFromUnknownGroup():
    ctx = Ctx()
    assert ctx.result(ctx.sync("member-id", 1)).error_code is E.UNKNOWN_MEMBER_ID


def test_testSyncGroupFromUnknownMember():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id=LEADER)
    ctx.sleep(ctx.delay_ms)
    joined = ctx.result(key)
    synced = ctx.result(ctx.sync(joined.member_id, joined.generation_id, assignments={joined.member_id: b""}))
    assert synced.error_code is E.NONE and synced.assignment == b""
    unknown = ctx.result(ctx.sync("unknown-member-id", joined.generation_id))
    assert unknown.error_code is E.UNKNOWN_MEMBER_ID and unknown.assignment == b""


def test_testSyncGroupFromIllegalGeneration():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id=LEADER)
    ctx.sleep(ctx.delay_ms)
    joined = ctx.result(key)
    assert ctx.result(ctx.sync(joined.member_id, joined.generation_id + 1)).error_code is E.ILLEGAL_GENERATION


def _leader_and_follower_in_generation_2(ctx):
    leader_id = ctx.join_dynamic_and_complete_rebalance().member_id
    follower = ctx.join(rebalance_ms=10_000, session_ms=5_000, api_version=3)
    leader = ctx.join(member_id=leader_id, rebalance_ms=10_000, session_ms=5_000)
    joined_leader, joined_follower = ctx.result(leader), ctx.result(follower)
    assert joined_leader.error_code is E.NONE and joined_follower.error_code is E.NONE
    assert joined_leader.generation_id == joined_follower.generation_id
    assert joined_leader.leader == joined_follower.leader == leader_id
    assert ctx.state() is S.COMPLETING_REBALANCE
    return leader_id, joined_follower.member_id, joined_leader.generation_id


def test_testLeaderFailureInSyncGroup():
    ctx = Ctx()
    ctx.create_group()
    _, follower_id, generation = _leader_and_follower_in_generation_2(ctx)
    follower_sync = ctx.sync(follower_id, generation)
    assert ctx.result(follower_sync) is None
    ctx.sleep(10_000)
    assert ctx.result(follower_sync).error_code is E.REBALANCE_IN_PROGRESS
    assert list(ctx.group().members) == [follower_id] and ctx.state() is S.PREPARING_REBALANCE


def test_testSyncGroupFollowerAfterLeader():
    ctx = Ctx()
    ctx.create_group()
    leader_id, follower_id, generation = _leader_and_follower_in_generation_2(ctx)
    assignments = {leader_id: b"\x00", follower_id: b"\x01"}
    leader_sync = ctx.result(ctx.sync(leader_id, generation, assignments=assignments))
    assert leader_sync.error_code is E.NONE and leader_sync.assignment == b"\x00"
    follower_sync = ctx.result(ctx.sync(follower_id, generation))
    assert follower_sync.error_code is E.NONE and follower_sync.assignment == b"\x01"
    assert ctx.state() is S.STABLE


def test_testSyncGroupLeaderAfterFollower():
    ctx = Ctx()
    ctx.create_group()
    leader_id, follower_id, generation = _leader_and_follower_in_generation_2(ctx)
    follower_sync = ctx.sync(follower_id, generation)
    assert ctx.result(follower_sync) is None
    assignments = {leader_id: b"\x00", follower_id: b"\x01"}
    leader_sync = ctx.result(ctx.sync(leader_id, generation, assignments=assignments))
    assert leader_sync.error_code is E.NONE and leader_sync.assignment == b"\x00"
    assert ctx.result(follower_sync).error_code is E.NONE and ctx.result(follower_sync).assignment == b"\x01"
    assert ctx.state() is S.STABLE


def test_testSyncGroupEmptyAssignment():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.NONE


def test_testStaticMemberHeartbeatLeaderWithInvalidMemberId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    assert ctx.result(ctx.sync(r.leader_id, r.generation_id, instance_id=LEADER)).error_code is E.NONE
    assert ctx.heartbeat(r.leader_id, r.generation_id) is E.NONE
    assert ctx.heartbeat("invalid-member-id", r.generation_id, instance_id=LEADER) is E.FENCED_INSTANCE_ID


def test_testHeartbeatUnknownGroup():
    ctx = Ctx()
    assert ctx.heartbeat("member-id", -1) is E.UNKNOWN_MEMBER_ID


def test_testHeartbeatDeadGroup():
    ctx = Ctx()
    ctx.create_group()
    assert ctx.delete("group-id") == [E.NONE]
    assert ctx.heartbeat("member-id", -1) is E.COORDINATOR_NOT_AVAILABLE


def test_testHeartbeatUnknownMemberExistingGroup():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.heartbeat("unknown-member-id", joined.generation_id) is E.UNKNOWN_MEMBER_ID


def test_testHeartbeatDuringPreparingRebalance():
    ctx = Ctx()
    ctx.create_group()
    member_id = ctx.call(ctx.join_request()).member_id
    ctx.join(member_id=member_id)
    assert ctx.state() is S.PREPARING_REBALANCE
    assert ctx.heartbeat(member_id, 0) is E.REBALANCE_IN_PROGRESS


def test_testHeartbeatDuringCompletingRebalance():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_join()
    assert joined.generation_id == 1 and ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.NONE


def test_testHeartbeatIllegalGeneration():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.heartbeat(joined.member_id, joined.generation_id + 1) is E.ILLEGAL_GENERATION


def test_testValidHeartbeat():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance()
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.NONE


def test_testClassicGroupMemberSessionTimeout():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance(session_ms=5_000, rebalance_ms=10_000)
    ctx.sleep(5_000)
    assert not ctx.group().members and ctx.state() is S.EMPTY
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.UNKNOWN_MEMBER_ID


def test_testClassicGroupMemberHeartbeatMaintainsSession():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance(session_ms=5_000, rebalance_ms=10_000)
    for _ in range(2):
        ctx.sleep(2_500)
        assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.NONE


def test_testClassicGroupMemberSessionTimeoutDuringRebalance():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_rebalance(session_ms=5_000, rebalance_ms=10_000)
    other = ctx.join(rebalance_ms=10_000, session_ms=5_000, api_version=3)
    assert ctx.result(other) is None and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(2_500)
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.REBALANCE_IN_PROGRESS
    ctx.sleep(5_000)
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.UNKNOWN_MEMBER_ID
    ctx.sleep(2_500)
    assert ctx.result(other).error_code is E.NONE
    assert len(ctx.group().members) == 1 and ctx.group().generation_id == 2
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_testHeartbeatDuringRebalanceCausesRebalanceInProgress():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_join(rebalance_ms=10_000, session_ms=5_000)
    assert joined.generation_id == 1 and ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.result(ctx.join(rebalance_ms=10_000, session_ms=5_000, api_version=3)) is None
    assert ctx.heartbeat(joined.member_id, joined.generation_id) is E.REBALANCE_IN_PROGRESS


# -- pending-sync expiry (classicGroupSyncKey) ---------------------------------------------------------


def test_testRebalanceTimesOutWhenSyncRequestIsNotReceived():
    ctx = Ctx()
    responses = ctx.join_with_n_members(3, rebalance_ms=5_000, session_ms=5_000)
    ctx.sleep(2_500)
    assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.NONE] * 3
    ctx.sleep(2_500)
    assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.UNKNOWN_MEMBER_ID] * 3
    assert ctx.state() is S.EMPTY


def test_testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers():
    ctx = Ctx()
    responses = ctx.join_with_n_members(3, rebalance_ms=5_000, session_ms=5_000)
    ctx.sleep(2_500)
    assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.NONE] * 3
    assert ctx.result(ctx.sync(responses[0].member_id, 1)).error_code is E.NONE and ctx.state() is S.STABLE
    assert ctx.heartbeat(responses[0].member_id, 1) is E.NONE
    ctx.sleep(2_500)
    assert ctx.heartbeat(responses[0].member_id, 1) is E.REBALANCE_IN_PROGRESS
    assert [ctx.heartbeat(r.member_id, 1) for r in responses[1:]] == [E.UNKNOWN_MEMBER_ID] * 2
    assert ctx.state() is S.PREPARING_REBALANCE


def test_testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders():
    ctx = Ctx()
    responses = ctx.join_with_n_members(3, rebalance_ms=5_000, session_ms=5_000)
    ctx.sleep(2_500)
    assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.NONE] * 3
    syncs = [ctx.sync(r.member_id, 1) for r in responses[1:]]
    assert all(ctx.result(k) is None for k in syncs)
    ctx.sleep(2_500)
    assert [ctx.result(k).error_code for k in syncs] == [E.REBALANCE_IN_PROGRESS] * 2
    assert ctx.heartbeat(responses[0].member_id, 1) is E.UNKNOWN_MEMBER_ID
    assert [ctx.heartbeat(r.member_id, 1) for r in responses[1:]] == [E.REBALANCE_IN_PROGRESS] * 2
    assert ctx.state() is S.PREPARING_REBALANCE


def test_testRebalanceDoesNotTimeOutWhenAllSyncAreReceived():
    ctx = Ctx()
    responses = ctx.join_with_n_members(3, rebalance_ms=5_000, session_ms=5_000)
    leader_id = responses[0].member_id
    ctx.sleep(2_500)
    assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.NONE] * 3
    # Kafka sends them in member order, the leader first.
    keys = [ctx.sync(r.member_id, 1) for r in responses]
    assert responses[0].leader == leader_id
    assert [ctx.result(k).error_code for k in keys] == [E.NONE] * 3
    for _ in range(2):
        ctx.sleep(2_500)
        assert [ctx.heartbeat(r.member_id, r.generation_id) for r in responses] == [E.NONE] * 3
    assert ctx.state() is S.STABLE
