"""Regression tests for coordinator fixes (each failed before its fix).

Every test names the Kafka behaviour it pins (GroupMetadataManager / ClassicGroup
in trunk, GroupCoordinator.scala in 3.x).
"""
from __future__ import annotations

import logging
import threading

from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupProtocol, JoinGroupRequest,
    OffsetAndMetadata, OffsetCommitRequest, OffsetFetchRequest, PartitionOffsetCommit, SyncGroupRequest,
)
from kgroup.io.inprocess import InProcessHub
from kgroup.io.clock import MockClock
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
TP0 = TopicPartition("t", 0)


def _restart(c: Client) -> str:
    old = c.member_id
    c.member_id, c.generation_id = "", -1
    return old


def _commit(group_id: str, offset: int = 5, **identity) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id, (PartitionOffsetCommit(TP0, OffsetAndMetadata(offset)),), **identity)


# -- a static bounce does not rebalance ---------------------------------------------------


def test_static_follower_restart_with_new_metadata_bytes_keeps_the_group_stable():
    """Kafka updateStaticMemberThenRebalanceOrCompleteJoin: in Stable only a change of the
    selected protocol rebalances; the subscription bytes (owned partitions, generation) may differ."""
    d = Driver(NO_DELAY)
    leader, s = Client(d, "c1"), Client(d, "s", instance_id="inst-s")
    make_stable(d, leader, s)
    transitions, assigned = len(d.transitions), s.assignment
    _restart(s)
    restarted = (JoinGroupProtocol("range", b"s:t;owned=t-1;generation=-1"),)
    response = s.join(protocols=restarted)
    assert response.error_code is E.NONE and response.generation_id == 1
    assert len(d.transitions) == transitions and d.coordinator.group_state("g") is S.STABLE
    assert s.sync().assignment == assigned
    # The stored metadata is the new one (what a later rebalance gives the leader).
    stored = d.coordinator.persisted_view().groups["g"].members[s.member_id]
    assert stored.protocols == restarted


def test_static_member_rejoin_in_completing_rebalance_rebalances():
    """Kafka updateStaticMemberThenRebalanceOrCompleteJoin: CompletingRebalance always rebalances."""
    d = Driver(NO_DELAY)
    leader, s = Client(d, "c1"), Client(d, "s", instance_id="inst-s")
    leader.join()
    s.join()
    d.fire()
    assert d.coordinator.group_state("g") is S.COMPLETING_REBALANCE
    _restart(s)
    s.join()
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE


# -- JoinGroup v4-v8 static leader replacement ----------------------------------------------


def test_static_leader_replacement_before_v9_names_the_old_leader_and_sends_no_members():
    """Kafka updateStaticMemberThenRebalanceOrCompleteJoin: without supportsSkippingAssignment the
    response carries the previous leader id, no members and skip_assignment=false."""
    d = Driver(NO_DELAY)
    s, follower = Client(d, "s", instance_id="inst-l"), Client(d, "c2")
    make_stable(d, s, follower)
    old_id = _restart(s)
    response = s.join(api_version=8)
    assert response.error_code is E.NONE and response.member_id != old_id
    assert response.leader == old_id and response.members == () and not response.skip_assignment
    assert d.coordinator.group_state("g") is S.STABLE


# -- instance ids stay one-to-one ---------------------------------------------------------


def test_pending_member_rejoining_with_a_static_instance_id_is_rejected():
    """Kafka classicGroupJoinExistingMember: a pending member cannot be static (IllegalStateException,
    answered UNKNOWN_SERVER_ERROR); the real static member is untouched."""
    d = Driver(NO_DELAY)
    leader, s = Client(d, "c1"), Client(d, "s", instance_id="inst-s")
    make_stable(d, leader, s)
    pending_id = d.request(Client(d, "p").join_request()).member_id
    response = d.request(JoinGroupRequest("g", member_id=pending_id, group_instance_id="inst-s",
                                          protocols=s.protocols))
    assert response.error_code is E.UNKNOWN_SERVER_ERROR
    assert s.heartbeat().error_code is E.NONE
    assert len(d.coordinator.persisted_view().groups["g"].members) == 2


# -- unknown instance id with a known member id -------------------------------------------


def test_unknown_instance_id_with_a_known_member_id_is_unknown_member():
    """Kafka ClassicGroup.validateMember: an instance id the group does not know is UNKNOWN_MEMBER_ID."""
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1")
    make_stable(d, c1)
    mid, gen = c1.member_id, c1.generation_id
    heartbeat = d.request(HeartbeatRequest("g", gen, mid, group_instance_id="ghost"))
    assert heartbeat.error_code is E.UNKNOWN_MEMBER_ID
    sync = d.request(SyncGroupRequest("g", gen, mid, group_instance_id="ghost"))
    assert sync.error_code is E.UNKNOWN_MEMBER_ID
    commit = d.request(_commit("g", generation_id=gen, member_id=mid, group_instance_id="ghost"))
    assert commit.partitions[0].error_code is E.UNKNOWN_MEMBER_ID
    join = d.request(c1.join_request(group_instance_id="ghost"))
    assert join.error_code is E.UNKNOWN_MEMBER_ID
    assert d.coordinator.group_state("g") is S.STABLE


# -- bad requests never corrupt state or stop the driver ----------------------------------


def test_join_with_a_duplicated_protocol_name_is_rejected_before_any_change():
    d = Driver(NO_DELAY)
    twice = (JoinGroupProtocol("range", b"a"), JoinGroupProtocol("range", b"b"))
    response = d.request(JoinGroupRequest("g", protocols=twice, api_version=3))
    assert response.error_code is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.coordinator.get_timer() is None
    c = Client(d, "c1")
    c.join()
    d.fire()
    assert c.poll_join().generation_id == 1


class _ExplodingBackend:
    """A backend whose first call of each kind raises, standing for any coordinator bug."""

    def __init__(self) -> None:
        self.ticks = 0
        self.first_tick_raised = threading.Event()
        self.ticked_again = threading.Event()

    def send(self, node_id, request_key, request, now_ms, context=None):
        raise RuntimeError("coordinator bug")

    def handle_timer(self, now_ms):
        self.ticks += 1
        if self.ticks == 1:
            self.first_tick_raised.set()
            raise RuntimeError("coordinator bug in a timer")
        self.ticked_again.set()
        return []

    def get_timer(self):
        return None


def test_hub_answers_a_failing_request_with_unknown_server_error(caplog):
    hub = InProcessHub(_ExplodingBackend(), clock=MockClock(0), run_timers=False)
    transport = hub.transport()
    with caplog.at_level(logging.ERROR, logger="kgroup.io.inprocess"):
        correlation_id = transport.send(HeartbeatRequest("g", 1, "m"))
    [completion] = transport.poll(0)
    assert completion.correlation_id == correlation_id
    assert completion.result.error_code is E.UNKNOWN_SERVER_ERROR
    assert "coordinator bug" in caplog.text


def test_hub_timer_thread_survives_an_exception():
    backend = _ExplodingBackend()
    hub = InProcessHub(backend, clock=MockClock(0), run_timers=True)
    try:
        assert backend.first_tick_raised.wait(10)
        hub.apply(lambda now_ms: [])  # wakes the timer thread at once
        assert backend.ticked_again.wait(10)
    finally:
        hub.close()


# -- failed syncs restart the members' sessions ------------------------------------------


def test_sync_failed_by_a_rebalance_restarts_the_members_session():
    """Kafka propagateAssignment: completing a sync future (also with an error) reschedules the heartbeat."""
    d = Driver(NO_DELAY)
    leader, follower = Client(d, "c1"), Client(d, "c2", session_timeout_ms=10_000)
    leader.join()
    follower.join()
    d.fire()
    follower.poll_join()
    follower.sync()  # parked: the leader never syncs
    d.advance(8_000)
    Client(d, "c3").join()  # a new member: the parked sync fails with REBALANCE_IN_PROGRESS
    assert follower.poll_sync().error_code is E.REBALANCE_IN_PROGRESS
    assert d.coordinator.session_deadline_ms("g", follower.member_id) == 18_000


# -- the initial delay is not capped by the rebalance timeout ----------------------------


def test_initial_rebalance_delay_is_waited_even_beyond_the_rebalance_timeout():
    """Kafka prepareRebalance: the first timer is the configured delay, only the extensions are capped."""
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=3_000))
    c = Client(d, "c1", rebalance_timeout_ms=1_000)
    assert c.join() is None
    d.advance(2_999)
    assert c.poll_join() is None
    d.advance(1)
    assert c.poll_join().generation_id == 1


# -- group.max.size ---------------------------------------------------------------------


def test_rejected_pending_member_gets_an_empty_member_id_and_its_retry_is_rejected_again():
    """Kafka classicGroupJoinToClassicGroup: acceptJoiningMember runs first, the member is removed
    and the response carries UNKNOWN_MEMBER_ID ("")."""
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=1))
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    c2_id = d.request(c2.join_request()).member_id
    c1.join()
    rejected = d.request(c2.join_request(member_id=c2_id))
    assert rejected.error_code is E.GROUP_MAX_SIZE_REACHED and rejected.member_id == ""
    retry = d.request(c2.join_request(member_id=c2_id))
    assert retry.error_code is E.GROUP_MAX_SIZE_REACHED


def test_existing_members_over_the_max_size_are_kicked_out_when_they_rejoin():
    """Kafka GroupCoordinatorTest.testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize."""
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=4))
    clients = [Client(d, f"c{i}") for i in range(6)]
    make_stable(d, *clients[:4])
    d.config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=2)
    d.failover()  # a freshly loaded group over capacity rebalances
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    codes = []
    for c in clients[:4]:
        c.join()
        response = c.poll_join()
        codes.append(None if response is None else response.error_code)
    assert codes[2:] == [E.GROUP_MAX_SIZE_REACHED, E.GROUP_MAX_SIZE_REACHED]
    d.advance(60_000)
    assert clients[0].poll_join().generation_id == 2 and len(clients[0].leader_members) == 2


# -- offsets and admin on deleted groups and the empty group id ---------------------


def test_offset_fetch_after_delete_groups_answers_no_offsets():
    d = Driver(NO_DELAY)
    assert d.request(_commit("g")).partitions[0].error_code is E.NONE
    assert d.request(DeleteGroupsRequest(("g",))).results[0].error_code is E.NONE
    fetched = d.request(OffsetFetchRequest("g", (TP0,)))
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed is None


def test_empty_group_id_is_accepted_by_offsets_describe_and_delete():
    """Kafka GroupCoordinatorService: "For backwards compatibility, we support ... the empty group id"."""
    d = Driver(NO_DELAY)
    assert d.request(_commit("")).partitions[0].error_code is E.NONE
    fetched = d.request(OffsetFetchRequest("", (TP0,)))
    assert fetched.error_code is E.NONE and fetched.partitions[0].committed.offset == 5
    described = d.request(DescribeGroupsRequest(("",))).groups[0]
    assert described.error_code is E.NONE and described.group_state == "Empty"
    assert d.request(DeleteGroupsRequest(("",))).results[0].error_code is E.NONE
    assert d.request(DeleteGroupsRequest(("",))).results[0].error_code is E.GROUP_ID_NOT_FOUND


# -- pending syncs expire -----------------------------------------------------------------


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout():
    """Kafka expirePendingSync (classicGroupSyncKey): members that did not sync within the rebalance
    timeout are removed and the group rebalances, even when they heartbeat."""
    d = Driver(NO_DELAY)
    leader = Client(d, "c1", rebalance_timeout_ms=30_000)
    lazy = Client(d, "c2", rebalance_timeout_ms=30_000)
    leader.join()
    lazy.join()
    d.fire()
    leader.poll_join()
    lazy.poll_join()
    assert leader.sync().error_code is E.NONE  # Stable; c2 never syncs but heartbeats
    for _ in range(5):
        d.advance(5_000)
        assert lazy.heartbeat().error_code is E.NONE
        leader.heartbeat()
    d.advance(5_000)
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    assert lazy.heartbeat().error_code is E.UNKNOWN_MEMBER_ID


# -- new-member join timeout ----------------------------------------------------------------


def test_new_member_join_times_out_after_five_minutes():
    """Kafka addMemberThenRebalanceOrCompleteJoin: a new member's heartbeat deadline is
    classicGroupNewMemberJoinTimeoutMs (5 min) and a new member is not kept alive by its parked join."""
    assert GroupCoordinatorConfig().group_new_member_join_timeout_ms == 300_000
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", session_timeout_ms=1_000_000, rebalance_timeout_ms=600_000)
    make_stable(d, c1)
    newcomer = Client(d, "c2", session_timeout_ms=10_000, rebalance_timeout_ms=600_000)
    assert newcomer.join() is None  # parked: c1 has not rejoined
    d.advance(299_999)
    assert newcomer.poll_join() is None
    d.advance(1)
    response = newcomer.poll_join()
    assert response.error_code is E.UNKNOWN_MEMBER_ID and response.member_id == ""


# -- DescribeGroups outside Stable -----------------------------------------------------------


def test_describe_outside_stable_shows_assignments_but_no_metadata():
    """Kafka describeGroups: non-Stable groups are described with describeNoMetadata (assignment kept)."""
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1, c2)
    c1.join()  # the leader rejoins: PreparingRebalance
    described = d.request(DescribeGroupsRequest(("g",))).groups[0]
    assert described.group_state == "PreparingRebalance" and described.protocol_data == ""
    by_id = {m.member_id: m for m in described.members}
    assert by_id[c1.member_id].member_assignment == c1.assignment != b""
    assert by_id[c2.member_id].member_metadata == b""


def test_a_request_that_raises_leaves_no_answer_behind_for_a_later_call():
    """The host answers a failed request itself (UNKNOWN_SERVER_ERROR); a response the coordinator
    queued for it before raising must not be released with a later call (a second answer)."""
    from kgroup.core.messages import JoinGroupResponse

    coordinator = GroupCoordinator(NO_DELAY)

    def deliver_then_fail(key, group, req, now_ms):
        coordinator._context.deliver(key, JoinGroupResponse(E.NONE))
        raise RuntimeError("coordinator bug")

    coordinator._classic_handlers._join_new_member = deliver_then_fail
    try:
        coordinator.handle("failed", JoinGroupRequest("g", protocols=(JoinGroupProtocol("range", b""),)), 0)
    except RuntimeError:
        pass
    later = coordinator.handle("later-2", DescribeGroupsRequest(("g",)), 0)
    assert [d.request_key for d in later.deliveries] == ["later-2"]
