"""Kafka GroupMetadataManagerTest (group-coordinator, trunk): classic-group LeaveGroup, DescribeGroups,
ListGroups and DeleteGroups scenarios.  One test per Kafka test, named after it."""
from __future__ import annotations

from coordinator_kafka_gmm_harness import SUPERSET, Ctx, setup_group_with_pending_member

from kgroup.core.coordinator import GroupCoordinator, GroupState
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import JoinGroupProtocol, ListGroupsRequest

E = ErrorCode
S = GroupState
LEADER, FOLLOWER = "leader-instance-id", "follower-instance-id"


def _members(response):
    return [(m.member_id, m.group_instance_id, m.error_code) for m in response.members]


# -- DescribeGroups --------------------------------------------------------------------------------------


def _loaded_single_member_group(state: str) -> Ctx:
    """Kafka replays a GroupMetadataValue with one member; here the same records are loaded."""
    records = [
        GroupMetadataRecord("group-id", state, 1, "consumer", "range", "member-id"),
        MemberMetadataRecord("group-id", "member-id", "group-instance-id", "client-id", "client-host",
                             5_000, 10_000, (JoinGroupProtocol("range", b"\x00\x01\x02"),), b"\x00"),
    ]
    ctx = Ctx()
    ctx.coordinator = GroupCoordinator.load(records, 0, ctx.config)
    return ctx


def test_testDescribeGroupStable():
    ctx = _loaded_single_member_group("Stable")
    [group] = ctx.describe("group-id")
    assert (group.error_code, group.group_id, group.group_state) == (E.NONE, "group-id", "Stable")
    assert (group.protocol_type, group.protocol_data) == ("consumer", "range")
    [member] = group.members
    assert (member.member_id, member.group_instance_id, member.client_id, member.client_host) == (
        "member-id", "group-instance-id", "client-id", "client-host")
    assert (member.member_metadata, member.member_assignment) == (b"\x00\x01\x02", b"\x00")


def test_testDescribeGroupRebalancing():
    ctx = _loaded_single_member_group("Stable")
    # Kafka calls prepareRebalance; a new member's join does the same here.
    ctx.join(api_version=3)
    [group] = ctx.describe("group-id")
    assert group.group_state == "PreparingRebalance"
    assert (group.protocol_type, group.protocol_data) == ("consumer", "")
    member = next(m for m in group.members if m.member_id == "member-id")
    assert (member.member_metadata, member.member_assignment) == (b"", b"\x00")


def test_testDescribeGroupsGroupIdNotFoundException():
    ctx = Ctx()
    [group] = ctx.describe("group-id")
    assert (group.error_code, group.group_state, group.members) == (E.NONE, "Dead", ())


# -- ListGroups -------------------------------------------------------------------------------------------


def test_testListGroups():
    # Only the classic part of Kafka's test: every group listed, filtered by state (case-insensitive).
    ctx = Ctx()
    ctx.create_group("classic-group-id")
    ctx.join_dynamic_and_complete_rebalance("other-group-id")
    assert {(g.group_id, g.group_state) for g in ctx.list_groups()} == {
        ("classic-group-id", "Empty"), ("other-group-id", "Stable")}
    assert [g.group_id for g in ctx.list_groups("empty")] == ["classic-group-id"]
    assert [g.group_id for g in ctx.list_groups("Stable")] == ["other-group-id"]


def test_list_groups_trims_each_state_filter_as_kafka_does():
    """GroupMetadataManager.listGroups lower-cases and trims (Java's String.trim) each state filter; a
    type filter is only lower-cased (Group.GroupType.parse), so a padded type matches nothing."""
    ctx = Ctx()
    ctx.create_group("classic-group-id")
    ctx.join_dynamic_and_complete_rebalance("other-group-id")
    assert [g.group_id for g in ctx.list_groups(" Empty\t")] == ["classic-group-id"]
    assert [g.group_id for g in ctx.list_groups("\x00stable\n")] == ["other-group-id"]
    assert [g.group_id for g in ctx.list_groups("\u00a0Stable")] == []  # not a Java trim character
    assert ctx.call(ListGroupsRequest(types_filter=(" classic",))).groups == ()
    assert len(ctx.call(ListGroupsRequest(types_filter=("Classic",))).groups) == 2


# -- static members stuck in a rebalance -----------------------------------------------------------------


def test_testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember():
    ctx = Ctx()
    ctx.create_group()
    r = ctx.static_members_join_and_rebalance(rebalance_ms=5_000, session_ms=10_000)
    key = ctx.join(protocols=SUPERSET, session_ms=10_000, api_version=3)
    ctx.sleep(5_000)
    response = ctx.result(key)
    assert response.error_code is E.NONE and response.leader == response.member_id
    assert len(response.members) == 3 and response.generation_id == 2
    assert ctx.state() is S.COMPLETING_REBALANCE
    assert set(ctx.group().members) == {r.leader_id, r.follower_id, response.member_id}
    assert set(ctx.group().static_members.values()) == {r.leader_id, r.follower_id}
    leave = ctx.leave((r.follower_id, FOLLOWER))
    assert _members(leave) == [(r.follower_id, FOLLOWER, E.NONE)] and ctx.state() is S.PREPARING_REBALANCE
    ctx.sleep(5_000)
    assert list(ctx.group().members) == [r.leader_id]
    assert ctx.group().generation_id == 2 and ctx.state() is S.PREPARING_REBALANCE


# -- LeaveGroup ------------------------------------------------------------------------------------------


def test_testPendingMembersLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    _, _, pending_id = setup_group_with_pending_member(ctx)
    leave = ctx.leave((pending_id, None))
    assert _members(leave) == [(pending_id, None, E.NONE)]
    assert ctx.state() is S.COMPLETING_REBALANCE and len(ctx.group().members) == 2
    assert not ctx.group().pending_members


def test_testLeaveGroupInvalidGroup():
    ctx = Ctx()
    ctx.create_group()
    # The manager throws UnknownMemberIdException; GroupCoordinatorService.leaveGroup turns that into
    # UNKNOWN_MEMBER_ID per member under a NONE top level, which kgroup's coordinator answers directly
    # (recorded from Kafka 4.4: conformance scenario classic.leave.unknown-group.v3).
    leave = ctx.leave(("member-id", None), group_id="invalid-group-id")
    assert leave.error_code is E.NONE
    assert _members(leave) == [("member-id", None, E.UNKNOWN_MEMBER_ID)]


def test_testLeaveGroupUnknownGroup():
    ctx = Ctx()
    leave = ctx.leave(("member-id", None), group_id="unknown-group-id")
    assert (leave.error_code, _members(leave)) == (E.NONE, [("member-id", None, E.UNKNOWN_MEMBER_ID)])


def test_testLeaveGroupUnknownMemberIdExistingGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.join_dynamic_and_complete_join()
    leave = ctx.leave(("unknown-member-id", None))
    assert leave.error_code is E.NONE
    assert _members(leave) == [("unknown-member-id", None, E.UNKNOWN_MEMBER_ID)]


def test_testLeaveDeadGroup():
    ctx = Ctx()
    ctx.create_group()
    assert ctx.delete("group-id") == [E.NONE]
    leave = ctx.leave(("member-id", None))
    assert leave.error_code is E.COORDINATOR_NOT_AVAILABLE and leave.members == ()


def test_testValidLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    joined = ctx.join_dynamic_and_complete_join()
    leave = ctx.leave((joined.member_id, None))
    assert _members(leave) == [(joined.member_id, None, E.NONE)]
    assert ctx.state() is S.EMPTY and ctx.group().generation_id == 2


def test_testLeaveGroupWithFencedInstanceId():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id")
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE
    leave = ctx.leave(("other-member-id", "group-instance-id"))
    assert _members(leave) == [("other-member-id", "group-instance-id", E.FENCED_INSTANCE_ID)]


def test_testLeaveGroupStaticMemberWithUnknownMemberId():
    ctx = Ctx()
    ctx.create_group()
    key = ctx.join(instance_id="group-instance-id")
    ctx.sleep(ctx.delay_ms)
    assert ctx.result(key).error_code is E.NONE
    leave = ctx.leave(("", "group-instance-id"))
    assert _members(leave) == [("", "group-instance-id", E.NONE)]


def test_testStaticMembersValidBatchLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", LEADER), ("", FOLLOWER))
    assert _members(leave) == [("", LEADER, E.NONE), ("", FOLLOWER, E.NONE)]


def test_testStaticMembersLeaveUnknownGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", LEADER), ("", FOLLOWER), group_id="invalid-group-id")
    # Per member under a NONE top level, as GroupCoordinatorService.leaveGroup answers on the wire.
    assert leave.error_code is E.NONE
    assert _members(leave) == [("", LEADER, E.UNKNOWN_MEMBER_ID), ("", FOLLOWER, E.UNKNOWN_MEMBER_ID)]


def test_testStaticMembersFencedInstanceBatchLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", LEADER), ("invalid-member-id", FOLLOWER))
    assert _members(leave) == [("", LEADER, E.NONE), ("invalid-member-id", FOLLOWER, E.FENCED_INSTANCE_ID)]


def test_testStaticMembersUnknownInstanceBatchLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", "unknown-instance-id"), ("", FOLLOWER))
    assert _members(leave) == [("", "unknown-instance-id", E.UNKNOWN_MEMBER_ID), ("", FOLLOWER, E.NONE)]


def test_testPendingMemberBatchLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    _, _, pending_id = setup_group_with_pending_member(ctx)
    leave = ctx.leave(("", "unknown-instance-id"), (pending_id, None))
    assert _members(leave) == [("", "unknown-instance-id", E.UNKNOWN_MEMBER_ID), (pending_id, None, E.NONE)]


def test_testJoinedMemberPendingMemberBatchLeaveGroup():
    ctx = Ctx()
    ctx.create_group()
    leader_id, follower_id, pending_id = setup_group_with_pending_member(ctx)
    leave = ctx.leave((leader_id, None), (follower_id, None), (pending_id, None))
    assert _members(leave) == [(leader_id, None, E.NONE), (follower_id, None, E.NONE),
                               (pending_id, None, E.NONE)]


def test_testJoinedMemberPendingMemberBatchLeaveGroupWithUnknownMember():
    ctx = Ctx()
    ctx.create_group()
    leader_id, follower_id, pending_id = setup_group_with_pending_member(ctx)
    leave = ctx.leave((leader_id, None), (follower_id, None), (pending_id, None), ("unknown-member-id", None))
    assert _members(leave) == [(leader_id, None, E.NONE), (follower_id, None, E.NONE),
                               (pending_id, None, E.NONE), ("unknown-member-id", None, E.UNKNOWN_MEMBER_ID)]


# -- DeleteGroups ----------------------------------------------------------------------------------------


def test_testClassicGroupDelete():
    from kgroup.core.coordinator_common.records import GroupTombstone
    ctx = Ctx()
    ctx.create_group()
    before = len(ctx.records)
    assert ctx.delete("group-id") == [E.NONE]
    assert GroupTombstone("group-id") in ctx.records[before:]


def test_testClassicGroupMaybeDelete():
    ctx = Ctx()
    ctx.create_group()
    ctx.join(api_version=3)
    assert ctx.state() is S.PREPARING_REBALANCE
    assert ctx.delete("group-id", "invalid-group-id") == [E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND]
