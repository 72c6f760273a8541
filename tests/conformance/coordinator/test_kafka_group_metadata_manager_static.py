"""Kafka GroupMetadataManagerTest (group-coordinator, trunk): classic-group static membership
(KIP-345, KIP-814).

One test per Kafka test, named after it (parametrized where Kafka's is).  Kafka
v9 requests are "supportSkippingAssignment = true"; v8 stands for false.
"""
from __future__ import annotations

import pytest
from coordinator_kafka_gmm_harness import DEFAULT_PROTOCOLS, SUPERSET, Ctx

from kgroup.core.coordinator import GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import JoinGroupProtocol

E = ErrorCode
S = GroupState
RANGE = DEFAULT_PROTOCOLS
ROUNDROBIN = (JoinGroupProtocol("roundrobin", b"rr-metadata"),)
LEADER, FOLLOWER = "leader-instance-id", "follower-instance-id"
NEW = "new-member-instance-id"


def _member_ids(response):
    return {m.member_id for m in response.members}


def _stable_single_static_member(ctx, protocols=RANGE, **kw):
    key = ctx.join(instance_id="group-instance-id", protocols=protocols, **kw)
    ctx.sleep(ctx.delay_ms)
    response = ctx.result(key)
    assert response.error_code is E.NONE and ctx.group().generation_id == 1
    assert ctx.state() is S.COMPLETING_REBALANCE
    # Kafka: "Simulate successful sync group phase".
    assert ctx.result(ctx.sync(response.member_id, 1)).error_code is E.NONE
    return response.member_id


def test_testStaticMemberJoinAsFirstMember():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id")
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE


def test_testStaticMemberRejoinWithExplicitUnknownMemberId():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id", session_ms=5_000, rebalance_ms=5_000)
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE
    stale = ctx.join_request(member_id="unknown-member-id", instance_id="group-instance-id")
    assert ctx.call(stale).error_code is E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("api_version", [9, 8])
def test_testReplaceStaticMemberInStableStateNoError(api_version):
    ctx = Ctx()
    ctx.create_group()
    old_id = _stable_single_static_member(ctx)
    response = ctx.call(ctx.join_request(instance_id="group-instance-id", protocols=SUPERSET,
                                         rebalance_ms=7_000, session_ms=4_500, api_version=api_version))
    new_id = ctx.group().static_members["group-instance-id"]
    assert response.error_code is E.NONE and response.member_id == new_id != old_id
    assert response.generation_id == 1 and response.protocol_name == "range"
    if api_version >= 9:
        assert response.skip_assignment and response.leader == new_id
        assert [(m.member_id, m.group_instance_id, m.metadata) for m in response.members] == [
            (new_id, "group-instance-id", b"range-metadata")]
    else:
        assert not response.skip_assignment and response.leader == old_id and response.members == ()
    member = ctx.group().members[new_id]
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (7_000, 4_500)
    assert member.protocols == SUPERSET
    assert len(ctx.group().members) == 1 and ctx.group().generation_id == 1 and ctx.state() is S.STABLE


def test_testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance():
    ctx = Ctx()
    ctx.create_group()
    _stable_single_static_member(ctx, protocols=SUPERSET)
    response = ctx.call(ctx.join_request(instance_id="group-instance-id", protocols=ROUNDROBIN))
    assert response.error_code is E.NONE
    assert len(ctx.group().members) == 1 and ctx.group().generation_id == 2
    assert ctx.state() is S.COMPLETING_REBALANCE


@pytest.mark.parametrize("api_version", [9, 8])
def test_testReplaceStaticMemberInStableStateSucceeds(api_version):
    ctx = Ctx()
    ctx.create_group()
    old_id = _stable_single_static_member(ctx)
    response = ctx.call(ctx.join_request(instance_id="group-instance-id", protocols=SUPERSET,
                                         rebalance_ms=7_000, session_ms=6_000, api_version=api_version))
    new_id = response.member_id
    assert response.leader == (new_id if api_version >= 9 else old_id)
    assert _member_ids(response) == ({new_id} if api_version >= 9 else set())
    assert response.skip_assignment is (api_version >= 9)
    member = ctx.group().members[ctx.group().static_members["group-instance-id"]]
    assert member.member_id == new_id != old_id
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (7_000, 6_000)
    assert member.protocols == SUPERSET
    assert ctx.state() is S.STABLE and ctx.group().generation_id == 1


def test_testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id")
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE and ctx.state() is S.COMPLETING_REBALANCE
    response = ctx.call(ctx.join_request(instance_id="group-instance-id"))
    assert response.error_code is E.NONE
    assert len(ctx.group().members) == 1 and ctx.group().generation_id == 2
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberFenceDuplicateRejoinedFollower():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    ctx.join(api_version=3)  # a new dynamic member: PreparingRebalance
    assert ctx.state() is S.PREPARING_REBALANCE
    old = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER)
    assert ctx.result(old) is None
    ctx.join(instance_id=FOLLOWER)
    fenced = ctx.result(old)
    assert fenced.error_code is E.FENCED_INSTANCE_ID and fenced.member_id == r.follower_id
    assert fenced.generation_id == -1 and fenced.protocol_name is None and fenced.leader == ""
    assert ctx.state() is S.PREPARING_REBALANCE


def test_testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    leader = ctx.join(member_id=r.leader_id, instance_id=LEADER, rebalance_ms=10_000)
    assert ctx.result(leader) is None and ctx.state() is S.PREPARING_REBALANCE
    old_follower = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, rebalance_ms=10_000)
    joined_leader, joined_follower = ctx.result(leader), ctx.result(old_follower)
    assert joined_leader.generation_id == 2 and joined_leader.leader == r.leader_id
    assert _member_ids(joined_leader) == {r.leader_id, r.follower_id}
    assert joined_follower.member_id == r.follower_id and joined_follower.members == ()
    assert ctx.state() is S.COMPLETING_REBALANCE
    old_sync = ctx.sync(r.follower_id, 2, instance_id=FOLLOWER)
    assert ctx.result(old_sync) is None
    duplicate = ctx.join(instance_id=FOLLOWER, rebalance_ms=10_000)
    assert ctx.state() is S.PREPARING_REBALANCE and ctx.result(duplicate) is None
    assert ctx.result(old_sync).error_code is E.FENCED_INSTANCE_ID
    ctx.sleep(10_000)
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 3
    new = ctx.result(duplicate)
    assert list(ctx.group().members) == [new.member_id] and new.leader == new.member_id


def test_testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    leader = ctx.join(member_id=r.leader_id, instance_id=LEADER, rebalance_ms=10_000)
    assert ctx.result(leader) is None and ctx.state() is S.PREPARING_REBALANCE
    duplicate = ctx.join(instance_id=FOLLOWER, rebalance_ms=10_000)
    old_follower = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, rebalance_ms=10_000)
    joined_leader, joined_duplicate = ctx.result(leader), ctx.result(duplicate)
    assert joined_leader.error_code is E.NONE and joined_leader.generation_id == 2
    assert _member_ids(joined_leader) == {r.leader_id, joined_duplicate.member_id}
    assert joined_duplicate.error_code is E.NONE and joined_duplicate.leader == r.leader_id
    assert joined_duplicate.members == ()
    fenced = ctx.result(old_follower)
    assert fenced.error_code is E.FENCED_INSTANCE_ID and fenced.member_id == r.follower_id
    assert fenced.generation_id == -1 and ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberRejoinWithKnownMemberId():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id", api_version=3)
    ctx.sleep(ctx.delay_ms)
    joined = ctx.result(key)
    rejoin = ctx.call(ctx.join_request(member_id=joined.member_id, instance_id="group-instance-id"))
    assert rejoin.error_code is E.NONE and ctx.state() is S.COMPLETING_REBALANCE
    sync = ctx.result(ctx.sync(joined.member_id, joined.generation_id, instance_id="group-instance-id"))
    assert sync.error_code is E.NONE and ctx.state() is S.STABLE


@pytest.mark.parametrize("api_version", [9, 8])
def test_testStaticMemberRejoinWithLeaderIdAndUnknownMemberId(api_version):
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(instance_id=LEADER, protocols=SUPERSET, api_version=api_version))
    assert response.error_code is E.NONE and response.generation_id == r.generation_id
    assert response.leader == (response.member_id if api_version >= 9 else r.leader_id)
    assert _member_ids(response) == ({response.member_id, r.follower_id} if api_version >= 9 else set())
    assert response.skip_assignment is (api_version >= 9) and ctx.state() is S.STABLE
    stale_join = ctx.call(ctx.join_request(member_id=r.leader_id, instance_id=LEADER, protocols=SUPERSET))
    assert stale_join.error_code is E.FENCED_INSTANCE_ID
    stale_sync = ctx.result(ctx.sync(r.leader_id, r.generation_id, instance_id=LEADER))
    assert stale_sync.error_code is E.FENCED_INSTANCE_ID
    assert ctx.result(ctx.sync(r.leader_id, r.generation_id)).error_code is E.UNKNOWN_MEMBER_ID


def test_testStaticMemberRejoinWithLeaderIdAndKnownMemberId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    key = ctx.join(member_id=r.leader_id, instance_id=LEADER, rebalance_ms=10_000)
    ctx.sleep(10_000)
    response = ctx.result(key)
    assert r.follower_id not in ctx.group().members
    assert response.error_code is E.NONE and response.generation_id == r.generation_id + 1
    assert response.member_id == response.leader == r.leader_id
    assert _member_ids(response) == {r.leader_id} and ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    key = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, protocols=ROUNDROBIN, rebalance_ms=10_000,
                   session_ms=15_000, api_version=3)
    assert ctx.result(key) is None
    ctx.sleep(10_000)
    response = ctx.result(key)
    assert response.error_code is E.NONE and LEADER in ctx.group().static_members
    assert ctx.group().leader_id == r.follower_id == response.leader == response.member_id
    assert response.generation_id == r.generation_id + 1 and response.protocol_name == "roundrobin"
    assert _member_ids(response) == {r.leader_id, r.follower_id} and ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    assert ctx.group().select_protocol() != "roundrobin"
    key = ctx.join(instance_id=FOLLOWER, protocols=ROUNDROBIN, rebalance_ms=10_000, session_ms=15_000,
                   api_version=3)
    assert ctx.result(key) is None and ctx.group().select_protocol() == "roundrobin"
    ctx.sleep(10_000)
    response = ctx.result(key)
    assert response.error_code is E.NONE and LEADER in ctx.group().static_members
    assert ctx.group().leader_id == response.member_id == response.leader != r.follower_id
    assert response.generation_id == r.generation_id + 1 and response.protocol_name == "roundrobin"
    assert len(response.members) == 2 and ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    selected = ctx.group().select_protocol()
    protocols = (JoinGroupProtocol(selected, b"new-metadata"),)
    response = ctx.call(ctx.join_request(instance_id=FOLLOWER, protocols=protocols))
    assert response.error_code is E.NONE and response.generation_id == r.generation_id
    assert response.leader == r.leader_id and response.protocol_name == "range"
    assert not response.skip_assignment and response.members == () and ctx.state() is S.STABLE
    new_id = response.member_id
    assert new_id != r.follower_id
    stale = ctx.call(ctx.join_request(member_id=r.follower_id, instance_id=FOLLOWER, protocols=protocols))
    assert stale.error_code is E.FENCED_INSTANCE_ID
    stale_sync = ctx.result(ctx.sync(r.follower_id, r.generation_id, instance_id=FOLLOWER))
    assert stale_sync.error_code is E.FENCED_INSTANCE_ID
    sync = ctx.result(ctx.sync(new_id, r.generation_id, instance_id=FOLLOWER))
    assert sync.error_code is E.NONE and sync.assignment == r.follower_assignment


def test_testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    request = dict(protocols=SUPERSET, rebalance_ms=10_000, session_ms=5_000)
    leader = ctx.join(member_id=r.leader_id, instance_id=LEADER, **request)
    assert ctx.result(leader) is None
    follower = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, **request)
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == 2
    joined_leader, joined_follower = ctx.result(leader), ctx.result(follower)
    assert joined_leader.leader == r.leader_id and _member_ids(joined_leader) == {r.leader_id, r.follower_id}
    assert joined_follower.leader == r.leader_id and joined_follower.members == ()
    follower = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, protocols=RANGE, rebalance_ms=10_000,
                        session_ms=5_000)
    assert ctx.result(follower) is None and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(5_000)
    response = ctx.result(follower)
    assert response.error_code is E.NONE and response.generation_id == r.generation_id + 2
    assert response.member_id == response.leader == r.follower_id
    assert _member_ids(response) == {r.follower_id} and ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberRejoinAsFollowerWithUnknownMemberId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(instance_id=FOLLOWER, protocols=SUPERSET))
    assert LEADER in ctx.group().static_members
    assert response.error_code is E.NONE and response.generation_id == r.generation_id
    assert response.leader == r.leader_id and response.members == () and not response.skip_assignment
    assert ctx.state() is S.STABLE and response.member_id != r.follower_id
    sync = ctx.result(ctx.sync(response.member_id, r.generation_id, instance_id=FOLLOWER))
    assert sync.error_code is E.NONE and sync.assignment == r.follower_assignment


def test_testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(member_id=r.follower_id, instance_id=FOLLOWER, protocols=SUPERSET))
    assert response.error_code is E.NONE and response.generation_id == r.generation_id
    assert response.member_id == r.follower_id and response.leader == r.leader_id
    assert response.members == () and ctx.state() is S.STABLE


def test_testStaticMemberRejoinAsFollowerWithMismatchedInstanceId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(member_id=r.follower_id, instance_id=LEADER, protocols=SUPERSET))
    assert response.error_code is E.FENCED_INSTANCE_ID


def test_testStaticMemberRejoinAsLeaderWithMismatchedInstanceId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(member_id=r.leader_id, instance_id=FOLLOWER, protocols=SUPERSET))
    assert response.error_code is E.FENCED_INSTANCE_ID


def test_testStaticMemberSyncAsLeaderWithInvalidMemberId():
    ctx = Ctx()
    ctx.create_group()
    ctx.static_members_join_and_rebalance()
    response = ctx.result(ctx.sync("invalid-member-id", 1, instance_id=FOLLOWER))
    assert response.error_code is E.FENCED_INSTANCE_ID


def test_testGetDifferentStaticMemberIdAfterEachRejoin():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    last = r.leader_id
    for _ in range(5):
        response = ctx.call(ctx.join_request(instance_id=LEADER, protocols=SUPERSET))
        assert response.error_code is E.NONE
        assert ctx.group().static_members[LEADER] == response.member_id != last
        last = response.member_id


def test_testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    response = ctx.call(ctx.join_request(member_id=r.leader_id, instance_id="unknown-instance-id",
                                         protocols=SUPERSET))
    assert response.error_code is E.UNKNOWN_MEMBER_ID


def test_testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    new = ctx.join(instance_id=NEW, protocols=SUPERSET, rebalance_ms=10_000, session_ms=15_000)
    assert ctx.result(new) is None and ctx.state() is S.PREPARING_REBALANCE
    leader = ctx.join(member_id=r.leader_id, instance_id=LEADER, protocols=SUPERSET, rebalance_ms=10_000,
                      session_ms=15_000)
    assert ctx.result(leader) is None
    ctx.sleep(10_000)
    joined_leader, joined_new = ctx.result(leader), ctx.result(new)
    assert joined_leader.error_code is E.NONE and joined_leader.generation_id == r.generation_id + 1
    assert joined_leader.member_id == joined_leader.leader == r.leader_id
    assert {m.group_instance_id for m in joined_leader.members} == {LEADER, FOLLOWER, NEW}
    assert joined_new.leader == r.leader_id and joined_new.members == ()
    assert ctx.state() is S.COMPLETING_REBALANCE


def test_testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    new = ctx.join(instance_id=NEW, protocols=SUPERSET, rebalance_ms=10_000, session_ms=15_000)
    assert ctx.result(new) is None
    follower = ctx.join(member_id=r.follower_id, instance_id=FOLLOWER, protocols=SUPERSET,
                        rebalance_ms=10_000, session_ms=15_000)
    assert ctx.result(follower) is None
    ctx.sleep(10_000)
    joined_follower, joined_new = ctx.result(follower), ctx.result(new)
    assert joined_follower.error_code is E.NONE and joined_new.error_code is E.NONE
    # The leader did not rejoin: a member that did becomes the leader.
    new_leader = joined_follower.leader
    assert new_leader == joined_new.leader and new_leader != r.leader_id
    assert new_leader in {joined_follower.member_id, joined_new.member_id}
    leader_response = joined_follower if joined_follower.member_id == new_leader else joined_new
    assert {m.group_instance_id for m in leader_response.members} == {LEADER, FOLLOWER, NEW}
    assert ctx.state() is S.COMPLETING_REBALANCE and ctx.group().generation_id == r.generation_id + 1


def test_testStaticMemberReJoinWithIllegalStateAsUnknownMember():
    # Kafka forces an Empty group that still maps the instance id and expects an IllegalStateException.
    # kgroup cannot reach that state: an Empty group has no static members, so the join starts a
    # fresh membership.
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance()
    ctx.leave((r.leader_id, LEADER), (r.follower_id, FOLLOWER))
    assert ctx.state() is S.EMPTY and not ctx.group().static_members
    key = ctx.join(instance_id=FOLLOWER, protocols=SUPERSET)
    assert ctx.result(key) is None and ctx.state() is S.PREPARING_REBALANCE
