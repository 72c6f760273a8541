"""The broker-side Group owns its invariants (project issue 10).

Scenarios named ``test_kafka_*`` are ported from Kafka's ClassicGroupTest
(group-coordinator, org.apache.kafka.coordinator.group.classic); where Kafka
throws IllegalStateException / IllegalArgumentException, Group raises the typed
GroupInvariantViolation.  The rest check what this refactoring added: read-only
state, dirty members <-> records, load through Group.add / Group.restore, the
checkers themselves, and the narrow interfaces of the offset and admin handlers.
"""
from __future__ import annotations

import pytest
from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.coordinator.admin import AdminHandler
from kgroup.core.coordinator.group import Group, Member
from kgroup.core.coordinator.offsets import OffsetHandler
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord, MemberTombstone
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.coordinator_common.records import GroupTombstone, OffsetCommitRecord, OffsetTombstone
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, JoinGroupProtocol, OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit,
)
from kgroup.errors import IllegalStateTransition, KGroupError
from kgroup.values import TopicPartition

S = GroupState
E = ErrorCode
PROTOCOL_TYPE = "consumer"
ROUNDROBIN = (JoinGroupProtocol("roundrobin", b""),)
RANGE_ROUNDROBIN = (JoinGroupProtocol("range", b""), JoinGroupProtocol("roundrobin", b""))


def member(member_id: str = "memberId", instance_id=None, protocols=ROUNDROBIN, group_id: str = "groupId",
           rebalance_timeout_ms: int = 60_000, session_timeout_ms: int = 10_000) -> Member:
    return Member(group_id, member_id, instance_id, "clientId", "clientHost", session_timeout_ms,
                  rebalance_timeout_ms, protocols)


@pytest.fixture
def group() -> Group:
    return Group("groupId")


# -- Kafka ClassicGroupTest -------------------------------------------------------


def test_kafka_select_protocol_raises_if_no_members(group):
    """Kafka ClassicGroupTest.testSelectProtocolRaisesIfNoMembers."""
    with pytest.raises(GroupInvariantViolation, match="no protocol to select"):
        group.select_protocol()


def test_kafka_init_next_generation(group):
    """Kafka ClassicGroupTest.testInitNextGeneration."""
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(), "join", protocol_type=PROTOCOL_TYPE)
    assert group.generation_id == 0 and group.protocol_name is None
    group.init_next_generation()
    assert group.generation_id == 1 and group.protocol_name == "roundrobin"
    assert group.state is S.COMPLETING_REBALANCE


def test_kafka_init_next_generation_empty_group(group):
    """Kafka ClassicGroupTest.testInitNextGenerationEmptyGroup."""
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    assert group.generation_id == 1 and group.protocol_name is None and group.state is S.EMPTY


def test_kafka_update_member(group):
    """Kafka ClassicGroupTest.testUpdateMember."""
    group.transition_to(S.PREPARING_REBALANCE)  # where a member rejoins (assert_invariants checks states too)
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    group.update_member(m, RANGE_ROUNDROBIN, session_timeout_ms=20_000, rebalance_timeout_ms=120_000,
                        join_key="join")
    assert group.rebalance_timeout_ms() == 120_000
    assert m.session_timeout_ms == 20_000 and m.protocols == RANGE_ROUNDROBIN
    assert group.supported_protocols["range"] == 1 and group.num_awaiting_join == 1
    group.assert_invariants()


def test_kafka_replace_group_instance_with_non_existing_member(group):
    """Kafka ClassicGroupTest.testReplaceGroupInstanceWithNonExistingMember."""
    with pytest.raises(GroupInvariantViolation):
        group.replace_static_member("groupInstanceId", "memberId", member("newMemberId", "groupInstanceId"))


def test_kafka_replace_group_instance(group):
    """Kafka ClassicGroupTest.testReplaceGroupInstance: the new id is leader and static member; the
    old incarnation's parked JoinGroup and SyncGroup are handed back to be fenced."""
    old = member(instance_id="groupInstanceId")
    group.add(old, "old-join", protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.transition_to(S.COMPLETING_REBALANCE)
    group.park_sync(old, "old-sync")
    assert group.leader_id == "memberId" and group.static_members["groupInstanceId"] == "memberId"
    replacement = member("newMemberId", "groupInstanceId")
    detached = group.replace_static_member("groupInstanceId", "memberId", replacement)
    assert detached is old
    assert group.leader_id == "newMemberId" and group.static_members["groupInstanceId"] == "newMemberId"
    assert group.num_awaiting_join == 0
    assert group.take_join_key(old) == "old-join" and group.take_sync_key(old) == "old-sync"
    assert old.join_key is None and old.sync_key is None
    group.assert_invariants()


def test_kafka_complete_join_future(group):
    """Kafka ClassicGroupTest.testCompleteJoinFuture (take_join_key is completeJoinFuture)."""
    m = member()
    group.add(m, "join", protocol_type=PROTOCOL_TYPE)
    assert group.has_all_members_joined()
    assert group.take_join_key(m) == "join"
    assert m.join_key is None and group.num_awaiting_join == 0


def test_kafka_not_complete_join_future(group):
    """Kafka ClassicGroupTest.testNotCompleteJoinFuture."""
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    assert group.take_join_key(m) is None and m.join_key is None and group.num_awaiting_join == 0


def test_kafka_complete_sync_future(group):
    """Kafka ClassicGroupTest.testCompleteSyncFuture."""
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    assert group.park_sync(m, "sync") is None
    assert group.take_sync_key(m) == "sync"
    assert m.sync_key is None and group.num_awaiting_join == 0


def test_kafka_not_complete_sync_future(group):
    """Kafka ClassicGroupTest.testNotCompleteSyncFuture."""
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    assert group.take_sync_key(m) is None and m.sync_key is None


def test_kafka_cannot_add_pending_member_if_stable(group):
    """Kafka ClassicGroupTest.testCannotAddPendingMemberIfStable (a member id cannot also be pending)."""
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="cannot be pending"):
        group.add_pending_member("memberId")


def test_kafka_removal_from_pending_after_member_is_stable(group):
    """Kafka ClassicGroupTest.testRemovalFromPendingAfterMemberIsStable."""
    group.add_pending_member("memberId")
    assert "memberId" not in group.members and "memberId" in group.pending_members
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    assert "memberId" in group.members and "memberId" not in group.pending_members


def test_kafka_removal_from_pending_when_member_is_removed(group):
    """Kafka ClassicGroupTest.testRemovalFromPendingWhenMemberIsRemoved."""
    group.add_pending_member("memberId")
    assert group.remove("memberId") is None
    assert "memberId" not in group.members and "memberId" not in group.pending_members


def test_kafka_cannot_add_static_member_if_already_present(group):
    """Kafka ClassicGroupTest.testCannotAddStaticMemberIfAlreadyPresent, plus a second member id
    claiming the same instance id (one instance id must map to one member)."""
    group.transition_to(S.PREPARING_REBALANCE)
    m = member(instance_id="groupInstanceId")
    group.add(m, protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="already in the group"):
        group.add(m, protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="static member 'groupInstanceId'"):
        group.add(member("other", instance_id="groupInstanceId"), protocol_type=PROTOCOL_TYPE)
    assert list(group.members) == ["memberId"]
    group.assert_invariants()


def test_kafka_cannot_remove_pending_sync_of_unknown_member(group):
    """Kafka ClassicGroupTest.testCannotRemovePendingSyncOfUnknownMember."""
    with pytest.raises(GroupInvariantViolation):
        group.remove_pending_sync_member("memberId")


def test_kafka_can_add_and_remove_pending_sync_member(group):
    """Kafka ClassicGroupTest.testCanAddAndRemovePendingSyncMember (await_syncs adds every member)."""
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    group.await_syncs()
    assert set(group.pending_sync_members) == {"memberId"}
    group.remove_pending_sync_member("memberId")
    assert not group.pending_sync_members and group.has_received_sync_from_all_members()


def test_kafka_removal_from_pending_sync_when_member_is_removed(group):
    """Kafka ClassicGroupTest.testRemovalFromPendingSyncWhenMemberIsRemoved."""
    group.add(member(instance_id="groupInstanceId"), protocol_type=PROTOCOL_TYPE)
    group.await_syncs()
    group.remove("memberId")
    assert not group.pending_sync_members


def test_kafka_new_generation_clears_pending_sync_members(group):
    """Kafka ClassicGroupTest.testNewGenerationClearsPendingSyncMembers."""
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.await_syncs()
    assert set(group.pending_sync_members) == {"memberId"}
    group.park_join(m, "join")
    group.init_next_generation()
    assert not group.pending_sync_members


def test_kafka_elect_new_joined_leader(group):
    """Kafka ClassicGroupTest.testElectNewJoinedLeader: the leader did not rejoin, a joined member leads."""
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    assert group.leader_id == "memberId"
    group.add(member("new-leader"), "join")
    group.add(member("new-member"))
    group.elect_joined_leader()
    assert group.leader_id == "new-leader"


def test_kafka_maybe_elect_new_joined_leader_choose_existing(group):
    """Kafka ClassicGroupTest.testMaybeElectNewJoinedLeaderChooseExisting."""
    group.add(member(), "join", protocol_type=PROTOCOL_TYPE)
    group.add(member("new-member"))
    group.elect_joined_leader()
    assert group.leader_id == "memberId"


# -- kgroup: refusals ---------------------------------------------------------------


def test_add_refuses_another_protocol_type_and_unshared_protocols(group):
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="protocol type"):
        group.add(member("b"), protocol_type="connect")
    with pytest.raises(GroupInvariantViolation, match="supported by every member"):
        group.add(member("c", protocols=(JoinGroupProtocol("range", b""),)), protocol_type=PROTOCOL_TYPE)
    assert list(group.members) == ["memberId"]
    group.assert_invariants()


def test_the_first_member_needs_a_protocol_type(group):
    with pytest.raises(GroupInvariantViolation):
        group.add(member())
    assert not group.members and group.protocol_type is None


def test_a_new_generation_needs_a_joined_leader(group):
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.elect_joined_leader()  # nobody rejoined: no leader
    with pytest.raises(GroupInvariantViolation, match="leader"):
        group.init_next_generation()
    assert group.generation_id == 0 and group.state is S.PREPARING_REBALANCE


def test_init_next_generation_outside_a_rebalance_is_an_illegal_transition(group):
    group.add(member(), "join", protocol_type=PROTOCOL_TYPE)
    with pytest.raises(IllegalStateTransition, match="Empty to CompletingRebalance"):
        group.init_next_generation()


def test_a_group_with_members_cannot_be_deleted(group):
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="cannot be deleted"):
        group.delete()
    assert group.state is S.EMPTY


def test_changes_to_a_member_not_in_the_group_are_refused(group):
    stranger = member()
    with pytest.raises(GroupInvariantViolation, match="not in the group"):
        group.park_join(stranger, "join")
    with pytest.raises(GroupInvariantViolation, match="not in the group"):
        group.update_member(stranger, ROUNDROBIN, 10_000, 60_000, "join")
    assert group.num_awaiting_join == 0


def test_state_is_read_only_from_outside(group):
    m = member()
    group.add(m, protocol_type=PROTOCOL_TYPE)
    with pytest.raises(AttributeError):
        m.assignment = b"x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        m.join_key = "join"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        group.generation_id = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        group.leader_id = None  # type: ignore[misc]
    assert m.assignment == b"" and group.generation_id == 0 and group.leader_id == "memberId"


def test_invariant_violation_is_a_typed_error_naming_group_and_rule():
    error = GroupInvariantViolation("g", "two members share a group instance id")
    assert isinstance(error, KGroupError)
    assert error.group_id == "g" and "two members share" in str(error) and "'g'" in str(error)


# -- kgroup: dirty members <-> records ------------------------------------------------


def test_take_records_writes_each_change_once():
    changes: list[str] = []
    group = Group("g", on_change=changes.append)
    assert changes == ["g"]  # a new group has a header to write
    group.transition_to(S.PREPARING_REBALANCE)
    a = member("a", group_id="g")
    group.add(a, "join", protocol_type=PROTOCOL_TYPE)
    group.add(member("b", group_id="g"))
    assert changes == ["g"]  # reported once until the records are taken
    records = group.take_records()
    assert [type(r) for r in records] == [GroupMetadataRecord, MemberMetadataRecord, MemberMetadataRecord]
    assert group.take_records() == []
    group.remove("b")
    assert changes == ["g", "g"]
    records = group.take_records()
    # The header changed too? No: the leader is still "a".
    assert records == [MemberTombstone("g", "b")]
    group.assert_invariants()


def test_an_assignment_change_is_recorded_only_when_it_changes():
    group = Group("g")
    group.add(member("a", group_id="g"), "join", protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation()
    group.take_records()
    group.assign({"a": b"a-0"})
    assert [r.assignment for r in group.take_records() if isinstance(r, MemberMetadataRecord)] == [b"a-0"]
    group.assign({"a": b"a-0"})
    assert group.take_records() == []


def test_delete_returns_offset_and_group_tombstones():
    group = Group("g")
    tp = TopicPartition("t", 0)
    assert group.commit_offset(tp, OffsetAndMetadata(5)) == OffsetCommitRecord("g", tp, OffsetAndMetadata(5))
    group.add_pending_member("p")
    assert group.delete() == [OffsetTombstone("g", tp), GroupTombstone("g")]
    assert group.state is S.DEAD and not group.offsets and not group.pending_members
    assert group.take_records() == []
    with pytest.raises(GroupInvariantViolation):
        group.commit_offset(tp, OffsetAndMetadata(6))
    group.assert_invariants()


def test_restore_refuses_a_leader_that_is_not_a_loaded_member():
    header = GroupMetadataRecord("g", "Stable", 3, PROTOCOL_TYPE, "roundrobin", "gone")
    a = member("a", group_id="g")
    group = Group("g", initial=S.STABLE)
    group.add(a, protocol_type=PROTOCOL_TYPE)
    with pytest.raises(GroupInvariantViolation, match="leader 'gone'"):
        group.restore(header, {"a": a.record("g")}, {})


# -- the checkers catch what they claim to catch --------------------------------------


def test_group_assert_invariants_catches_a_drifted_counter(group):
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(), "join", protocol_type=PROTOCOL_TYPE)
    group.assert_invariants()
    group._num_awaiting_join += 1  # simulate a bookkeeping bug
    with pytest.raises(GroupInvariantViolation, match="awaiting-join count 2 but 1"):
        group.assert_invariants()


def test_group_assert_invariants_catches_an_unrecorded_change(group):
    group.transition_to(S.PREPARING_REBALANCE)
    group.add(member(), protocol_type=PROTOCOL_TYPE)
    group.take_records()
    group.record_book._dirty_members.clear()
    from kgroup.core.coordinator.group import _set
    _set(group.members["memberId"], "assignment", b"changed behind the group's back")
    with pytest.raises(GroupInvariantViolation, match="not marked for a record"):
        group.assert_invariants()


def test_coordinator_assert_invariants_catches_a_member_that_can_never_expire():
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    c1 = Client(d, "c1")
    make_stable(d, c1)
    d.coordinator.assert_invariants()
    d.coordinator._context.timer.cancel(("session", "g", c1.member_id))  # simulate a lost session timer
    with pytest.raises(GroupInvariantViolation, match="can never expire"):
        d.coordinator.assert_invariants()


# -- load replays through Group.add --------------------------------------------------


def test_load_replays_members_through_group_add_and_rejects_two_members_for_one_instance_id():
    """Records naming two live members for one group.instance.id describe no state a coordinator can
    reach; Group.add refuses the second instead of silently keeping one of them."""
    header = GroupMetadataRecord("g", "Stable", 1, PROTOCOL_TYPE, "roundrobin", "a")
    a = member("a", instance_id="i", group_id="g").record("g")
    b = member("b", instance_id="i", group_id="g").record("g")
    with pytest.raises(GroupInvariantViolation, match="static member 'i'"):
        GroupCoordinator.load([header, a, b], 0)
    loaded = GroupCoordinator.load([header, a], 0)
    loaded.assert_invariants()
    assert loaded.group_state("g") is S.STABLE


# -- composition: the handlers see only what they are given ---------------------------


def test_offset_handler_works_on_its_narrow_interface():
    groups: dict[str, Group] = {}
    emitted: list = []
    heard: list = []

    def create(group_id: str) -> Group:
        groups[group_id] = Group(group_id)
        return groups[group_id]

    def heard_from(m: Member, now_ms: int) -> None:
        heard.append((m.member_id, now_ms))

    offsets = OffsetHandler(groups, create, heard_from, emitted.append)
    tp = TopicPartition("t", 0)
    simple = OffsetCommitRequest("g", (PartitionOffsetCommit(tp, OffsetAndMetadata(7)),))
    response = offsets.commit(simple, 123)
    assert [p.error_code for p in response.partitions] == [E.NONE]
    assert emitted == [OffsetCommitRecord("g", tp, OffsetAndMetadata(7))] and "g" in groups and heard == []

    group = groups["g"]
    group.add(member("m", group_id="g"), protocol_type=PROTOCOL_TYPE)
    group.transition_to(S.PREPARING_REBALANCE)
    group.park_join(group.members["m"], "join")
    group.init_next_generation()
    group.transition_to(S.STABLE)
    request = OffsetCommitRequest("g", (PartitionOffsetCommit(tp, OffsetAndMetadata(8)),), generation_id=1,
                                  member_id="m")
    assert [p.error_code for p in offsets.commit(request, 456).partitions] == [E.NONE]
    assert heard == [("m", 456)]


def test_admin_handler_cancels_timers_through_its_hook_before_deleting():
    group = Group("g")
    group.add_pending_member("p")
    cancelled: list = []
    emitted: list = []
    admin = AdminHandler({"g": group}, lambda g: cancelled.append(set(g.pending_members)), emitted.append)
    response = admin.delete(DeleteGroupsRequest(("g", "missing")))
    assert [r.error_code for r in response.results] == [E.NONE, E.GROUP_ID_NOT_FOUND]
    assert cancelled == [{"p"}] and emitted == [GroupTombstone("g")] and group.state is S.DEAD


def test_coordinator_owns_its_handlers_instead_of_mixing_them_in():
    from kgroup.core.coordinator.coordinator import GroupCoordinator as Coordinator

    assert Coordinator.__mro__ == (Coordinator, object)
    coordinator = Coordinator()
    assert isinstance(coordinator._offsets, OffsetHandler) and isinstance(coordinator._admin, AdminHandler)
    assert not hasattr(coordinator, "_now_ms")
