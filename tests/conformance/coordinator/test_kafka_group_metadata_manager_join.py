"""Kafka GroupMetadataManagerTest (group-coordinator, trunk): classic-group JoinGroup scenarios.

One test per Kafka test, named after it.  Where Kafka sets a state directly
(``group.transitionTo``) the port reaches it through requests.
"""
from __future__ import annotations

from coordinator_kafka_gmm_harness import (DEFAULT_PROTOCOLS, GROUP, SUPERSET, Ctx,
                                           setup_group_with_pending_member)

from kgroup.core.coordinator import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import JoinGroupProtocol

E = ErrorCode
S = GroupState
ROUNDROBIN = (JoinGroupProtocol("roundrobin", b"rr"),)


def _codes(ctx, keys):
    return [None if ctx.result(k) is None else ctx.result(k).error_code for k in keys]


# -- group.max.size -----------------------------------------------------------------------------------


def test_testJoinGroupShouldReceiveErrorIfGroupOverMaxSize():
    ctx = Ctx(max_size=10)
    ctx.create_group()
    keys = [ctx.join(api_version=3) for _ in range(10)]
    assert _codes(ctx, keys) == [None] * 10
    assert ctx.call(ctx.join_request(api_version=3)).error_code is E.GROUP_MAX_SIZE_REACHED


def test_testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember():
    ctx = Ctx(max_size=10, initial_delay_ms=50)
    ctx.create_group()
    ids = [ctx.call(ctx.join_request()).member_id for _ in range(11)]
    assert len(set(ids)) == 11 and ctx.state() is S.EMPTY and len(ctx.group().pending_members) == 11
    second = [ctx.join(member_id=mid) for mid in ids]
    ctx.sleep(50)
    ctx.sleep(50)
    assert _codes(ctx, second) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    assert len(ctx.group().members) == 10 and not ctx.group().pending_members
    assert ctx.state() is S.COMPLETING_REBALANCE
    third = [ctx.join(member_id=mid) for mid in ids]
    assert _codes(ctx, third) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]


def test_testDynamicMembersJoinGroupWithMaxSizeAndNotRequiredKnownMember():
    ctx = Ctx(max_size=10, initial_delay_ms=50)
    ctx.create_group()
    first = [ctx.join(api_version=3) for _ in range(11)]
    assert len(ctx.group().members) == 10 and ctx.group().num_awaiting_join == 10
    assert ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(50)
    ctx.sleep(50)
    assert _codes(ctx, first) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    ids = [ctx.result(k).member_id for k in first]
    second = [ctx.join(member_id=mid, api_version=3) for mid in ids]
    assert _codes(ctx, second) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    assert len(ctx.group().members) == 10 and ctx.group().num_awaiting_join == 0
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMembersJoinGroupWithMaxSize():
    ctx = Ctx(max_size=10, initial_delay_ms=50)
    ctx.create_group()
    instances = [f"instance-id-{i}" for i in range(11)]
    first = [ctx.join(instance_id=i) for i in instances]
    assert len(ctx.group().members) == 10 and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(50)
    ctx.sleep(50)
    assert _codes(ctx, first) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    ids = [ctx.result(k).member_id for k in first]
    second = [ctx.join(member_id=mid, instance_id=i) for mid, i in zip(ids, instances)]
    assert _codes(ctx, second) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    assert len(ctx.group().members) == 10 and ctx.state() is S.COMPLETING_REBALANCE


def test_testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing():
    ctx = Ctx(max_size=10, initial_delay_ms=50)
    ctx.create_group()
    ids = [ctx.call(ctx.join_request()).member_id for _ in range(11)]
    for mid in ids:
        ctx.join(member_id=mid)
    assert len(ctx.group().members) == 10 and ctx.group().num_awaiting_join == 10
    assert ctx.state() is S.PREPARING_REBALANCE
    third = [ctx.join(member_id=mid) for mid in ids]
    ctx.sleep(50)
    ctx.sleep(50)
    assert _codes(ctx, third) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED]
    assert len(ctx.group().members) == 10 and ctx.state() is S.COMPLETING_REBALANCE


def test_testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize():
    # Kafka adds 12 members to a Stable group directly; here 12 members form the group under a
    # larger limit and a coordinator loaded with limit 10 rebalances it (GroupMetadataManager replay).
    big = Ctx(max_size=100, initial_delay_ms=50)
    responses = big.join_with_n_members(12, rebalance_ms=10_000, session_ms=600_000)
    ids = [r.member_id for r in responses]
    leader = responses[0].leader
    assert big.result(big.sync(leader, 1)).error_code is E.NONE
    from kgroup.core.coordinator import GroupCoordinator
    ctx = Ctx(max_size=10, initial_delay_ms=50)
    ctx.coordinator = GroupCoordinator.load(big.records, 0, ctx.config)
    assert ctx.state() is S.PREPARING_REBALANCE
    keys = [ctx.join(member_id=mid, rebalance_ms=10_000, session_ms=600_000) for mid in ids]
    ctx.sleep(10_000 + 1)
    assert _codes(ctx, keys) == [E.NONE] * 10 + [E.GROUP_MAX_SIZE_REACHED] * 2
    assert all(mid not in ctx.group().members for mid in ids[10:])


# -- join validation -----------------------------------------------------------------------------------


def test_testJoinGroupUnknownMemberNewGroup():
    ctx = Ctx()
    assert ctx.call(ctx.join_request(member_id="member-id")).error_code is E.UNKNOWN_MEMBER_ID
    static = ctx.join_request(member_id="member-id", instance_id="group-instance-id")
    assert ctx.call(static).error_code is E.UNKNOWN_MEMBER_ID


def test_testClassicGroupJoinInconsistentProtocolType():
    ctx = Ctx()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join()
    other = ctx.join_request(protocol_type="connect", api_version=3)
    assert ctx.call(other).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_testJoinGroupWithEmptyProtocolType():
    ctx = Ctx()
    ctx.create_group()
    empty_type = ctx.join_request(protocol_type="", api_version=3)
    assert ctx.call(empty_type).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    static = ctx.join_request(protocol_type="", instance_id="group-instance-id")
    assert ctx.call(static).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_testJoinGroupWithEmptyGroupProtocol():
    ctx = Ctx()
    ctx.create_group()
    assert ctx.call(ctx.join_request(protocols=(), api_version=3)).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_testJoinGroupInconsistentGroupProtocol():
    ctx = Ctx()
    ctx.create_group()
    first = ctx.join(api_version=3)
    assert ctx.result(first) is None
    other = ctx.join_request(protocols=ROUNDROBIN, api_version=3)
    assert ctx.call(other).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(first).error_code is E.NONE


def test_testJoinGroupSecondJoinInconsistentProtocol():
    ctx = Ctx()
    ctx.create_group()
    first = ctx.call(ctx.join_request())
    assert first.error_code is E.MEMBER_ID_REQUIRED
    empty = ctx.join_request(member_id=first.member_id, protocols=())
    assert ctx.call(empty).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    key = ctx.join(member_id=first.member_id)
    assert ctx.result(key) is None
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE


def test_testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs():
    ctx = Ctx()
    response = ctx.call(ctx.join_request(member_id="member-id"))
    assert response.error_code is E.UNKNOWN_MEMBER_ID and response.protocol_type is None


def test_testJoinGroupReturnsTheProtocolType():
    ctx = Ctx()
    ctx.create_group()
    leader, member = ctx.join(api_version=3), ctx.join(api_version=3)
    assert ctx.result(leader) is None and ctx.result(member) is None
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(leader).protocol_type == ctx.result(member).protocol_type == "consumer"


def test_testJoinGroupUnknownConsumerExistingGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join(session_ms=5_000, rebalance_ms=5_000)
    assert ctx.call(ctx.join_request(member_id="other-member-id")).error_code is E.UNKNOWN_MEMBER_ID


def test_testJoinGroupUnknownConsumerNewDeadGroup():
    # Kafka sets the group Dead; here it is deleted, and a new member may reuse the id (documented).
    ctx = Ctx()
    ctx.create_group()
    assert ctx.delete(GROUP) == [E.NONE]
    assert ctx.result(ctx.join(api_version=3)) is None
    assert ctx.state() is S.PREPARING_REBALANCE


def test_testExistingMemberJoinDeadGroup():
    # Kafka: a known member joining a Dead group gets COORDINATOR_NOT_AVAILABLE.  A group can only
    # be deleted when Empty, so the member is gone by then; kgroup answers the stale id the same.
    ctx = Ctx()
    ctx.create_group()
    response = ctx.join_dynamic_and_complete_join()
    mid = response.member_id
    ctx.leave((mid, None))
    ctx.sleep(ctx.delay_ms)
    assert ctx.state() is S.EMPTY
    assert ctx.delete(GROUP) == [E.NONE]
    assert ctx.call(ctx.join_request(member_id=mid)).error_code is E.COORDINATOR_NOT_AVAILABLE


# -- initial rebalance delay ----------------------------------------------------------------------------


def test_testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(api_version=3)
    ctx.sleep(ctx.delay_ms // 2)
    assert ctx.result(key) is None
    ctx.sleep(ctx.delay_ms // 2 + 1)
    assert ctx.result(key).error_code is E.NONE


def test_testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance():
    ctx = Ctx()
    ctx.create_group()
    request = ctx.join_request(rebalance_ms=ctx.delay_ms * 3, api_version=3)
    first = ctx.send(request)
    ctx.sleep(ctx.delay_ms - 1)
    second = ctx.send(request)
    ctx.sleep(2)
    ctx.sleep(ctx.delay_ms // 2 + 1)
    assert ctx.result(first) is None and ctx.result(second) is None
    ctx.sleep(ctx.delay_ms // 2)
    assert ctx.result(first).error_code is E.NONE and ctx.result(second).error_code is E.NONE


def test_testDelayRebalanceUptoRebalanceTimeout():
    ctx = Ctx()
    ctx.create_group()
    request = ctx.join_request(rebalance_ms=ctx.delay_ms * 2, api_version=3)
    first, second = ctx.send(request), ctx.send(request)
    ctx.sleep(ctx.delay_ms + 1)
    third = ctx.send(request)
    ctx.sleep(ctx.delay_ms - 1)
    assert _codes(ctx, [first, second, third]) == [None, None, None]
    ctx.sleep(1)
    assert _codes(ctx, [first, second, third]) == [E.NONE] * 3


# -- membership during joins ---------------------------------------------------------------------------


def test_testJoinGroupReplaceStaticMember():
    ctx = Ctx()
    ctx.create_group()
    request = ctx.join_request(instance_id="group-instance-id", session_ms=5_000)
    old = ctx.send(request)
    assert ctx.result(old) is None and ctx.group().num_awaiting_join == 1
    new = ctx.send(request)
    assert ctx.result(new) is None and ctx.result(old).error_code is E.FENCED_INSTANCE_ID
    assert ctx.group().num_awaiting_join == 1 and len(ctx.group().members) == 1
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(new).error_code is E.NONE
    assert ctx.group().num_awaiting_join == 0 and len(ctx.group().members) == 1


def test_testHeartbeatExpirationShouldRemovePendingMember():
    ctx = Ctx()
    ctx.create_group()
    assert ctx.call(ctx.join_request(session_ms=1_000)).error_code is E.MEMBER_ID_REQUIRED
    assert len(ctx.group().pending_members) == 1
    ctx.sleep(1_000)
    assert not ctx.group().pending_members


def test_testHeartbeatExpirationShouldRemoveMember():
    ctx = Ctx(initial_delay_ms=600_000)
    ctx.create_group()
    key = ctx.join(api_version=3)
    assert ctx.result(key) is None and len(ctx.group().members) == 1
    ctx.sleep(300_000)
    assert ctx.result(key).error_code is E.UNKNOWN_MEMBER_ID
    assert not ctx.group().members


def test_testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException():
    # Kafka throws IllegalStateException, which the broker answers UNKNOWN_SERVER_ERROR.
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.call(ctx.join_request()).member_id
    response = ctx.call(ctx.join_request(member_id=mid, instance_id="group-instance-id"))
    assert response.error_code is E.UNKNOWN_SERVER_ERROR
    assert mid in ctx.group().pending_members and not ctx.group().static_members


def test_testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance():
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.join_dynamic_and_complete_join().member_id
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 1
    key = ctx.join(member_id=mid, protocols=SUPERSET)
    assert ctx.result(key).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 2
    assert ctx.group().members[mid].protocols == SUPERSET


def test_testJoinGroupAsExistingLeaderTriggersRebalanceInStableState():
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.join_dynamic_and_complete_rebalance().member_id
    key = ctx.join(member_id=mid)
    assert ctx.result(key).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 2


def _leader_and_member_in_generation_2(ctx, protocols=DEFAULT_PROTOCOLS):
    leader_id = ctx.join_dynamic_and_complete_join(protocols=protocols).member_id
    member = ctx.join(protocols=protocols, api_version=3)
    assert ctx.result(member) is None
    leader = ctx.join(member_id=leader_id, protocols=protocols)
    assert ctx.result(leader).error_code is E.NONE and ctx.result(member).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 2
    ctx.result(ctx.sync(leader_id, 2))
    assert ctx.state() is S.STABLE
    return leader_id, ctx.result(member).member_id


def test_testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState():
    ctx = Ctx()
    ctx.create_group()
    leader_id, member_id = _leader_and_member_in_generation_2(ctx)
    member = ctx.join(member_id=member_id, protocols=SUPERSET)
    assert ctx.result(member) is None
    leader = ctx.join(member_id=leader_id)
    assert ctx.result(leader).error_code is E.NONE and ctx.result(member).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 3


def test_testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState():
    ctx = Ctx()
    ctx.create_group()
    _, member_id = _leader_and_member_in_generation_2(ctx)
    response = ctx.call(ctx.join_request(member_id=member_id))
    assert response.error_code is E.NONE and response.generation_id == 2
    assert ctx.state() is S.STABLE


def test_testJoinGroupExistingMemberInEmptyState():
    # Kafka forces the group Empty while the member is still in it; kgroup cannot reach that state
    # (an Empty group has no members), so the member has left and its id is unknown: the same answer.
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.join_dynamic_and_complete_join().member_id
    ctx.leave((mid, None))
    ctx.sleep(ctx.delay_ms)
    assert ctx.state() is S.EMPTY
    response = ctx.call(ctx.join_request(member_id=mid))
    assert response.error_code is E.UNKNOWN_MEMBER_ID and response.generation_id == -1


def test_testCompleteJoinRemoveNotYetRejoinedDynamicMembers():
    ctx = Ctx()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join(session_ms=1_000, rebalance_ms=1_000)
    key = ctx.join(session_ms=1_000, rebalance_ms=1_000, api_version=3)
    assert ctx.result(key) is None and len(ctx.group().members) == 2
    assert ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(1_000)
    response = ctx.result(key)
    assert response.error_code is E.NONE and list(ctx.group().members) == [response.member_id]
    assert ctx.group().generation_id == 2


def test_testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase():
    ctx = Ctx()
    ctx.create_group()
    request = dict(session_ms=30_000, rebalance_ms=10_000)
    first_key = ctx.join(instance_id="first-instance-id", **request)
    ctx.sleep(ctx.delay_ms)
    first_id = ctx.result(first_key).member_id
    second_key = ctx.join(instance_id="second-instance-id", **request)
    assert ctx.result(second_key) is None
    first_key = ctx.join(member_id=first_id, instance_id="first-instance-id", **request)
    assert ctx.result(first_key).error_code is E.NONE and ctx.result(second_key).error_code is E.NONE
    assert ctx.group().generation_id == 2
    second_id = ctx.result(second_key).member_id
    # Kafka calls prepareRebalance directly; here a third static member's join triggers it and leaves.
    third = ctx.join(instance_id="third-instance-id", **request)
    ctx.leave(("", "third-instance-id"))
    assert ctx.result(third).error_code is E.UNKNOWN_MEMBER_ID
    assert ctx.state() is S.PREPARING_REBALANCE and ctx.group().num_awaiting_join == 0
    ctx.sleep(10_000)
    assert ctx.coordinator.get_timer() - ctx.now_ms <= 10_000
    ctx.sleep(10_000)
    assert ctx.state() is S.PREPARING_REBALANCE and len(ctx.group().members) == 2
    first_key = ctx.join(member_id=first_id, instance_id="first-instance-id", **request)
    assert ctx.result(first_key) is None
    second_key = ctx.join(member_id=second_id, instance_id="second-instance-id", **request)
    assert ctx.result(first_key).error_code is E.NONE and ctx.result(second_key).error_code is E.NONE
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 3


# -- new-member join timeout ------------------------------------------------------------------------------


def test_testNewMemberJoinExpiration():
    ctx = Ctx()
    ctx.create_group()
    first = ctx.join_dynamic_and_complete_join(session_ms=5_000 + 300_000, rebalance_ms=600_000)
    assert first.leader == first.member_id
    assert not any(m.is_new for m in ctx.group().members.values())
    second = ctx.join(session_ms=5_000, rebalance_ms=5_000, api_version=3)
    assert ctx.result(second) is None and len(ctx.group().members) == 2
    new = [m for m in ctx.group().members.values() if m.is_new]
    assert len(new) == 1 and new[0].member_id != first.member_id
    ctx.sleep(300_000)
    assert ctx.result(second).error_code is E.UNKNOWN_MEMBER_ID
    assert list(ctx.group().members) == [first.member_id]


def test_testNewMemberTimeoutCompletion():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(session_ms=300_000 + 5_000, api_version=3)
    ctx.sleep(ctx.delay_ms)
    response = ctx.result(key)
    assert response.error_code is E.NONE and ctx.group().generation_id == 1
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert not any(m.is_new for m in ctx.group().members.values())
    assert ctx.result(ctx.sync(response.member_id, 1)).error_code is E.NONE
    # The new-member timeout is no longer in effect...
    ctx.sleep(300_000)
    assert len(ctx.group().members) == 1
    # ...the session timeout is.
    ctx.sleep(5_000)
    assert not ctx.group().members and ctx.state() is S.EMPTY and ctx.group().generation_id == 2


def test_testNewMemberFailureAfterJoinGroupCompletion():
    ctx = Ctx()
    ctx.create_group()
    request = dict(session_ms=5_000, rebalance_ms=10_000, api_version=3)
    key = ctx.join(**request)
    ctx.sleep(ctx.delay_ms)
    joined = ctx.result(key)
    assert joined.member_id == joined.leader and joined.generation_id == 1
    assert ctx.result(ctx.sync(joined.member_id, 1)).error_code is E.NONE and ctx.state() is S.STABLE
    other = ctx.join(**request)
    rejoin = ctx.join(member_id=joined.member_id, **request)
    assert ctx.result(rejoin).error_code is E.NONE and ctx.result(other).error_code is E.NONE
    # Kafka's verifySessionExpiration: after the join, new members expire like any member.
    ctx.sleep(5_000)
    assert not ctx.group().members and ctx.state() is S.EMPTY


# -- pending members ------------------------------------------------------------------------------------


def test_testJoinGroupCompletionWhenPendingMemberJoins():
    ctx = Ctx()
    ctx.create_group()
    _, _, pending_id = setup_group_with_pending_member(ctx)
    response = ctx.call(ctx.join_request(member_id=pending_id, rebalance_ms=10_000, session_ms=5_000))
    assert response.error_code is E.NONE and ctx.state() is S.COMPLETING_REBALANCE
    assert len(ctx.group().members) == 3 and not ctx.group().pending_members


def test_testJoinGroupCompletionWhenPendingMemberTimesOut():
    ctx = Ctx()
    ctx.create_group()
    setup_group_with_pending_member(ctx)
    ctx.sleep(2_500)
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert len(ctx.group().members) == 2 and not ctx.group().pending_members


def test_testGenerationIdIncrementsOnRebalance():
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.join_dynamic_and_complete_rebalance().member_id
    response = ctx.call(ctx.join_request(member_id=mid))
    assert response.error_code is E.NONE and response.generation_id == 2


def test_testJoinGroupFromUnchangedLeaderShouldRebalance():
    ctx = Ctx()
    ctx.create_group()
    mid = ctx.join_dynamic_and_complete_rebalance().member_id
    response = ctx.call(ctx.join_request(member_id=mid))
    assert response.generation_id == 2 and ctx.state() is S.COMPLETING_REBALANCE


def test_testJoinGroupFromUnchangedFollowerDoesNotRebalance():
    ctx = Ctx()
    ctx.create_group()
    _, member_id = _leader_and_member_in_generation_2(ctx)
    response = ctx.call(ctx.join_request(member_id=member_id))
    assert response.error_code is E.NONE and response.generation_id == 2 and ctx.state() is S.STABLE


def test_testRebalanceCompletesBeforeMemberJoins():
    ctx = Ctx()
    ctx.create_group()
    request = dict(rebalance_ms=10_000, session_ms=5_000)
    key = ctx.join(instance_id="leader-instance-id", **request)
    ctx.sleep(ctx.delay_ms)
    first_id = ctx.result(key).member_id
    assert ctx.result(key).generation_id == 1 and ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.result(ctx.sync(first_id, 1)).error_code is E.NONE and ctx.state() is S.STABLE
    second = ctx.join(rebalance_ms=10_000, session_ms=2_500, api_version=3)
    assert ctx.result(second) is None and ctx.state() is S.PREPARING_REBALANCE
    for _ in range(2):
        ctx.sleep(2_500)
        assert ctx.heartbeat(first_id, 1) is E.REBALANCE_IN_PROGRESS
    ctx.sleep(8_000)
    other_id = ctx.result(second).member_id
    assert ctx.result(second).error_code is E.NONE and len(ctx.group().members) == 2
    assert ctx.group().generation_id == 2 and ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.result(ctx.sync(other_id, 2)).error_code is E.NONE and ctx.state() is S.STABLE
    # The static member that did not rejoin is still in the group, one generation behind.
    assert ctx.heartbeat(first_id, 1) is E.ILLEGAL_GENERATION
    expected = [E.NONE, E.NONE, E.REBALANCE_IN_PROGRESS]
    for code in expected:
        ctx.sleep(2_000)
        assert ctx.heartbeat(other_id, 2) is code
    assert len(ctx.group().members) == 1 and ctx.state() is S.PREPARING_REBALANCE
    rejoin = ctx.call(ctx.join_request(member_id=other_id, rebalance_ms=10_000, session_ms=2_500))
    assert rejoin.error_code is E.NONE and rejoin.generation_id == 3 and ctx.state() is S.COMPLETING_REBALANCE
    assert ctx.result(ctx.sync(other_id, 3)).error_code is E.NONE and ctx.state() is S.STABLE
    for _ in range(20):
        ctx.sleep(2_000)
        assert ctx.heartbeat(other_id, 3) is E.NONE


def test_testSecondMemberPartiallyJoinAndTimeout():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="leader-instance-id", rebalance_ms=10_000, session_ms=5_000)
    ctx.sleep(ctx.delay_ms)
    first_id = ctx.result(key).member_id
    assert ctx.result(ctx.sync(first_id, 1)).error_code is E.NONE and ctx.state() is S.STABLE
    pending = ctx.call(ctx.join_request(rebalance_ms=10_000, session_ms=5_000))
    assert pending.error_code is E.MEMBER_ID_REQUIRED and len(ctx.group().pending_members) == 1
    assert ctx.state() is S.STABLE
    for _ in range(2):
        ctx.sleep(2_500)
        assert ctx.heartbeat(first_id, 1) is E.NONE
    assert list(ctx.group().members) == [first_id] and not ctx.group().pending_members
    assert ctx.group().generation_id == 1 and ctx.state() is S.STABLE
