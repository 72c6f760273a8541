"""Every error code the coordinator answers with, each reached by a request that produces it."""
from __future__ import annotations

import pytest
from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
    LeaveGroupRequest, MemberIdentity, OffsetAndMetadata, OffsetCommitRequest, PartitionOffsetCommit,
    SyncGroupRequest,
)
from kgroup.errors import ConfigError, IllegalStateTransition
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)


def test_member_id_required_round_trip_and_old_versions_join_directly():
    d = Driver(NO_DELAY)
    c = Client(d, "c1")
    response = d.request(c.join_request())
    assert response.error_code is E.MEMBER_ID_REQUIRED and response.member_id == "c1-1"
    assert d.coordinator.group_state("g") is S.EMPTY  # a pending member does not start a rebalance
    old = Client(d, "old", group_id="h")
    assert d.request(old.join_request(api_version=3)) is None  # parked in the join, no round trip
    d.fire()
    assert len(d.responses) == 2 and d.coordinator.group_state("h") is S.COMPLETING_REBALANCE


def test_pending_member_expires_after_its_session_timeout():
    d = Driver(NO_DELAY)
    c = Client(d, "c1", session_timeout_ms=10_000)
    member_id = d.request(c.join_request()).member_id
    d.advance(10_000)
    response = d.request(c.join_request(member_id=member_id))
    assert response.error_code is E.UNKNOWN_MEMBER_ID


def test_pending_member_holds_back_the_join_until_it_expires():
    d = Driver(NO_DELAY)
    c1, c2, c3 = Client(d, "c1"), Client(d, "c2", session_timeout_ms=10_000), Client(d, "c3")
    make_stable(d, c1)
    assert d.request(c2.join_request()).error_code is E.MEMBER_ID_REQUIRED  # c2 never comes back
    c3.join()
    c1.join()
    assert c1.poll_join() is None  # c2 is still pending
    d.advance(10_000)
    assert c1.poll_join().generation_id == 2 and len(c1.leader_members) == 2


def test_invalid_group_id():
    d = Driver()
    assert d.request(JoinGroupRequest("")).error_code is E.INVALID_GROUP_ID
    assert d.request(HeartbeatRequest("", 1, "m")).error_code is E.INVALID_GROUP_ID
    assert d.request(SyncGroupRequest("", 1, "m")).error_code is E.INVALID_GROUP_ID
    # Kafka's GroupCoordinatorService accepts the empty group id for DeleteGroups (backwards
    # compatibility): there is no such group.
    assert d.request(DeleteGroupsRequest(("",))).results[0].error_code is E.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("session_timeout_ms", [5_999, 1_800_001])
def test_invalid_session_timeout(session_timeout_ms):
    d = Driver()
    c = Client(d, "c1", session_timeout_ms=session_timeout_ms)
    assert d.request(c.join_request()).error_code is E.INVALID_SESSION_TIMEOUT
    assert d.coordinator.group_ids() == []


def test_inconsistent_group_protocol():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", protocols=("range", "roundrobin"))
    make_stable(d, c1)
    wrong_name = Client(d, "c2", protocols=("sticky",))
    assert d.request(wrong_name.join_request()).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    wrong_type = Client(d, "c3")
    connect = wrong_type.join_request(protocol_type="connect")
    assert d.request(connect).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    no_protocols = Client(d, "c4", group_id="fresh", protocols=())
    assert d.request(no_protocols.join_request()).error_code is E.INCONSISTENT_GROUP_PROTOCOL
    sticky = SyncGroupRequest("g", c1.generation_id, c1.member_id, protocol_name="sticky")
    assert d.request(sticky).error_code is E.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_is_chosen_by_vote_among_protocols_everyone_supports():
    d = Driver(NO_DELAY)
    a = Client(d, "a", protocols=("sticky", "range", "roundrobin"))
    b = Client(d, "b", protocols=("roundrobin", "range"))
    c = Client(d, "c", protocols=("roundrobin", "range", "sticky"))
    make_stable(d, a, b, c)
    assert a.poll_join().protocol_name == "roundrobin"  # sticky is not supported by b


def test_unknown_member_id():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    assert d.request(HeartbeatRequest("g", 0, "nobody")).error_code is E.UNKNOWN_MEMBER_ID
    assert d.request(c1.join_request(member_id="ghost")).error_code is E.UNKNOWN_MEMBER_ID  # no such group
    make_stable(d, c1)
    assert d.request(c1.join_request(member_id="ghost")).error_code is E.UNKNOWN_MEMBER_ID
    assert d.request(SyncGroupRequest("g", 1, "ghost")).error_code is E.UNKNOWN_MEMBER_ID
    assert d.request(HeartbeatRequest("g", 1, "ghost")).error_code is E.UNKNOWN_MEMBER_ID
    leave = d.request(LeaveGroupRequest("g", (MemberIdentity("ghost"),)))
    assert leave.members[0].error_code is E.UNKNOWN_MEMBER_ID


def test_illegal_generation():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    assert d.request(HeartbeatRequest("g", 7, c1.member_id)).error_code is E.ILLEGAL_GENERATION
    assert d.request(SyncGroupRequest("g", 7, c1.member_id)).error_code is E.ILLEGAL_GENERATION
    commit = OffsetCommitRequest("g", (PartitionOffsetCommit(TopicPartition("t", 0), OffsetAndMetadata(5)),),
                                 generation_id=0, member_id=c1.member_id)
    assert d.request(commit).partitions[0].error_code is E.ILLEGAL_GENERATION


def test_rebalance_in_progress():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1)
    c2.join()  # PreparingRebalance
    assert c1.heartbeat().error_code is E.REBALANCE_IN_PROGRESS
    assert c1.sync().error_code is E.REBALANCE_IN_PROGRESS
    c1.join()  # CompletingRebalance, generation 2
    c1.poll_join()
    commit = OffsetCommitRequest("g", (PartitionOffsetCommit(TopicPartition("t", 0), OffsetAndMetadata(5)),),
                                 generation_id=2, member_id=c1.member_id)
    assert d.request(commit).partitions[0].error_code is E.REBALANCE_IN_PROGRESS


def test_parked_sync_fails_when_a_member_leaves_during_completing_rebalance():
    d = Driver(NO_DELAY)
    c1, c2, c3 = Client(d, "c1"), Client(d, "c2"), Client(d, "c3")
    for c in (c1, c2, c3):
        c.join()
    d.fire()
    for c in (c1, c2, c3):
        c.poll_join()
    assert c2.sync() is None
    assert c3.leave().members[0].error_code is E.NONE
    assert c2.poll_sync().error_code is E.REBALANCE_IN_PROGRESS
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE


def test_group_max_size_reached():
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=2))
    c1, c2, c3 = Client(d, "c1"), Client(d, "c2"), Client(d, "c3")
    make_stable(d, c1, c2)
    response = c3.join()
    assert response.error_code is E.GROUP_MAX_SIZE_REACHED
    assert d.coordinator.group_state("g") is S.STABLE
    # Already-known members may still rejoin a full group.
    assert c2.join().error_code is E.NONE


def test_group_max_size_reached_for_a_pending_member_in_preparing_rebalance():
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=1))
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    first = d.request(c1.join_request()).member_id
    second = d.request(c2.join_request()).member_id  # both pending while the group is Empty
    assert d.request(c1.join_request(member_id=first)) is None
    assert d.request(c2.join_request(member_id=second)).error_code is E.GROUP_MAX_SIZE_REACHED


def test_coordinator_not_available_for_a_dead_group():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    member_id, generation = c1.member_id, c1.generation_id
    assert c1.leave().members[0].error_code is E.NONE
    assert d.coordinator.group_state("g") is S.EMPTY
    assert d.request(DeleteGroupsRequest(("g",))).results[0].error_code is E.NONE
    assert d.coordinator.group_state("g") is S.DEAD
    assert d.request(HeartbeatRequest("g", generation, member_id)).error_code is E.COORDINATOR_NOT_AVAILABLE
    assert d.request(c1.join_request(member_id=member_id)).error_code is E.COORDINATOR_NOT_AVAILABLE
    assert d.request(SyncGroupRequest("g", generation, member_id)).error_code is E.COORDINATOR_NOT_AVAILABLE
    # A new member may create the group again.
    c1.member_id = ""
    c1.join()
    d.fire()
    assert c1.poll_join().generation_id == 1


def test_delete_groups_errors():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    results = d.request(DeleteGroupsRequest(("g", "missing"))).results
    assert [r.error_code for r in results] == [E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND]


def test_unsupported_request_type_is_a_type_error():
    with pytest.raises(TypeError, match="FindCoordinatorRequest"):
        GroupCoordinator().handle(1, FindCoordinatorRequest("g"), 0)


def test_config_is_validated():
    with pytest.raises(ConfigError):
        GroupCoordinatorConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=5)
    with pytest.raises(ConfigError):
        GroupCoordinatorConfig(group_initial_rebalance_delay_ms=-1)
    with pytest.raises(ConfigError):
        GroupCoordinatorConfig(group_max_size=0)


def test_illegal_transition_names_both_states():
    from kgroup.core.coordinator.group import Group

    group = Group("g")
    with pytest.raises(IllegalStateTransition, match="Empty to Stable"):
        group.transition_to(S.STABLE)


def test_rebalance_timeout_removes_dynamic_members_that_did_not_rejoin():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", rebalance_timeout_ms=30_000)
    c2 = Client(d, "c2", rebalance_timeout_ms=30_000, session_timeout_ms=45_000)
    c3 = Client(d, "c3", rebalance_timeout_ms=30_000)
    make_stable(d, c1, c2)
    c3.join()
    c1.join()
    d.advance(20_000)
    assert c2.heartbeat().error_code is E.REBALANCE_IN_PROGRESS  # alive, but never rejoins
    d.advance(9_999)
    assert c1.poll_join() is None
    d.advance(1)
    assert c1.poll_join().generation_id == 2
    assert c2.heartbeat().error_code is E.UNKNOWN_MEMBER_ID


def test_last_member_leaving_empties_the_group():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    c1.leave()
    assert d.states()[-2:] == [S.PREPARING_REBALANCE, S.EMPTY]
    assert d.request(HeartbeatRequest("g", c1.generation_id, c1.member_id)).error_code is E.UNKNOWN_MEMBER_ID


def test_leader_leaving_is_replaced_by_a_rejoined_member():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1, c2)
    assert c1.is_leader
    c1.leave()
    c2.join()
    assert c2.poll_join().leader == c2.member_id and c2.generation_id == 2


def test_pending_member_leaving_does_not_start_a_rebalance():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1)
    pending = d.request(c2.join_request()).member_id
    response = d.request(LeaveGroupRequest("g", (MemberIdentity(pending),)))
    assert response.members[0].error_code is E.NONE
    assert d.coordinator.group_state("g") is S.STABLE
    assert d.request(c2.join_request(member_id=pending)).error_code is E.UNKNOWN_MEMBER_ID


def test_zero_timeouts_do_not_make_handle_timer_spin():
    d = Driver(GroupCoordinatorConfig(group_min_session_timeout_ms=0, group_initial_rebalance_delay_ms=0))
    c1 = Client(d, "c1", session_timeout_ms=0, rebalance_timeout_ms=0)
    s = Client(d, "s", session_timeout_ms=0, rebalance_timeout_ms=0, instance_id="i")
    c1.join()
    s.join()
    d.fire()  # completes; both awaiting-join sessions were due at once
    assert c1.poll_join().generation_id == 1
    d.advance(5)
    assert d.coordinator.group_state("g") in (S.PREPARING_REBALANCE, S.EMPTY)
