"""Static membership (KIP-345)."""
from __future__ import annotations

from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    HeartbeatRequest, JoinGroupProtocol, LeaveGroupRequest, MemberIdentity, SyncGroupAssignment,
    SyncGroupRequest,
)
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import encode_assignment, encode_subscription

E = ErrorCode
S = GroupState
NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)


def _restart(c: Client) -> str:
    old = c.member_id
    c.member_id, c.generation_id = "", -1
    return old


def test_static_member_skips_member_id_required_and_gets_an_instance_based_id():
    d = Driver(NO_DELAY)
    s = Client(d, "s", instance_id="inst-a")
    assert s.join() is None  # parked in the join at once, no MEMBER_ID_REQUIRED
    d.fire()
    assert s.poll_join().member_id == "inst-a-1"


def test_static_follower_restart_with_same_metadata_keeps_its_assignment_without_rebalance():
    d = Driver(NO_DELAY)
    leader = Client(d, "c1")
    s = Client(d, "s", instance_id="inst-s")
    make_stable(d, leader, s)
    before = len(d.transitions)
    assigned = s.assignment
    old_id = _restart(s)
    response = s.join()
    assert response.error_code is E.NONE and response.member_id != old_id
    assert response.generation_id == 1 and not response.members
    assert len(d.transitions) == before and d.coordinator.group_state("g") is S.STABLE
    assert s.sync().assignment == assigned
    # The old incarnation is fenced.
    fenced = d.request(HeartbeatRequest("g", 1, old_id, group_instance_id="inst-s"))
    assert fenced.error_code is E.FENCED_INSTANCE_ID
    assert d.request(s.join_request(member_id=old_id)).error_code is E.FENCED_INSTANCE_ID
    assert s.heartbeat().error_code is E.NONE


def test_static_leader_replacement_gets_members_but_skips_assignment():
    d = Driver(NO_DELAY)
    s = Client(d, "s", instance_id="inst-l")
    follower = Client(d, "c2")
    make_stable(d, s, follower)
    assert s.is_leader
    _restart(s)
    response = s.join()
    assert response.error_code is E.NONE and response.skip_assignment
    assert response.leader == response.member_id == s.member_id
    assert {m.member_id for m in response.members} == {s.member_id, follower.member_id}
    assert d.coordinator.group_state("g") is S.STABLE
    assert follower.heartbeat().error_code is E.NONE


def test_static_restart_that_changes_the_selected_protocol_triggers_a_rebalance():
    # Kafka updateStaticMemberThenRebalanceOrCompleteJoin: metadata bytes alone do not rebalance a
    # Stable group, a change of the protocol the group would select does.
    d = Driver(NO_DELAY)
    both = ("range", "roundrobin")
    leader, s = Client(d, "c1", protocols=both), Client(d, "s", instance_id="inst-s", protocols=both)
    make_stable(d, leader, s)
    old_id = _restart(s)
    changed = (JoinGroupProtocol("roundrobin", b"s:t,u"),)
    assert d.send(s.join_request(protocols=changed))[0] is None
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    leader.join()
    assert leader.poll_join().generation_id == 2
    ids = {m.member_id for m in leader.leader_members}
    assert old_id not in ids and len(ids) == 2


def test_static_member_that_does_not_rejoin_stays_through_the_rebalance_timeout():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", rebalance_timeout_ms=30_000)
    s = Client(d, "s", instance_id="inst-s", session_timeout_ms=600_000, rebalance_timeout_ms=30_000)
    c3 = Client(d, "c3", rebalance_timeout_ms=30_000)
    make_stable(d, c1, s)
    c3.join()
    c1.join()
    d.advance(30_000)
    assert c1.poll_join().generation_id == 2
    assert s.member_id in {m.member_id for m in c1.leader_members}


def test_static_member_session_expiry_removes_it():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", session_timeout_ms=60_000)
    s = Client(d, "s", instance_id="inst-s", session_timeout_ms=10_000)
    make_stable(d, c1, s)
    d.advance(10_000)
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    assert s.heartbeat().error_code is E.UNKNOWN_MEMBER_ID


def test_static_leave_by_instance_id_and_fencing_of_a_stale_member_id():
    d = Driver(NO_DELAY)
    c1, s = Client(d, "c1"), Client(d, "s", instance_id="inst-s")
    make_stable(d, c1, s)
    stale = d.request(LeaveGroupRequest("g", (MemberIdentity("inst-s-999", "inst-s"),)))
    assert stale.members[0].error_code is E.FENCED_INSTANCE_ID
    assert d.coordinator.group_state("g") is S.STABLE
    batch = d.request(LeaveGroupRequest("g", (MemberIdentity("", "inst-s"), MemberIdentity("", "inst-x"))))
    assert [m.error_code for m in batch.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    assert s.heartbeat().error_code is E.UNKNOWN_MEMBER_ID


def test_static_replacement_fences_the_old_members_parked_join():
    d = Driver(NO_DELAY)
    c1, s, c3 = Client(d, "c1"), Client(d, "s", instance_id="inst-s"), Client(d, "c3")
    make_stable(d, c1, s, c3)
    c1.join()  # leader rejoins: PreparingRebalance
    s.join()  # parked: c3 has not rejoined yet
    old_key = s.join_key
    assert d.responses.get(old_key) is None
    # A restarted copy of the same instance arrives before the join completes.
    s2 = Client(d, "s", instance_id="inst-s")
    assert s2.join() is None
    assert d.responses[old_key].error_code is E.FENCED_INSTANCE_ID
    c3.join()
    assert s2.poll_join().generation_id == 2 and c1.poll_join().generation_id == 2


def _cooperative(owned) -> tuple:
    """A cooperative-sticky member's JoinGroup protocols, with real ConsumerProtocol bytes."""
    subscription = Subscription(("t",), owned_partitions=tuple(TopicPartition("t", p) for p in owned))
    return (JoinGroupProtocol("cooperative-sticky", encode_subscription(subscription)),)


def _stable_cooperative_pair(d: Driver, owned_by_s, assigned_to_s):
    """A Stable group: leader c1 and static member s, which joined claiming ``owned_by_s`` and was
    assigned ``assigned_to_s`` (ConsumerProtocol bytes throughout)."""
    leader = Client(d, "c1", protocols=("cooperative-sticky",))
    s = Client(d, "s", instance_id="inst-s", protocols=("cooperative-sticky",))
    leader.protocols, s.protocols = _cooperative(()), _cooperative(owned_by_s)
    leader.join()
    s.join()
    d.fire()
    leader.poll_join()
    s.poll_join()
    assert leader.is_leader
    d.send(SyncGroupRequest("g", s.generation_id, s.member_id, group_instance_id="inst-s"))
    rest = tuple(TopicPartition("t", p) for p in range(4) if p not in assigned_to_s)
    mine = tuple(TopicPartition("t", p) for p in assigned_to_s)
    d.send(SyncGroupRequest("g", leader.generation_id, leader.member_id, assignments=(
        SyncGroupAssignment(leader.member_id, encode_assignment(Assignment(rest))),
        SyncGroupAssignment(s.member_id, encode_assignment(Assignment(mine))))))
    assert d.coordinator.group_state("g") is S.STABLE
    return leader, s


def test_static_restart_of_a_member_owing_its_cooperative_follow_up_rejoin_rebalances():
    """kgroup departs from Kafka here (fault campaign seed 4976, docs/fault_campaign.md): s owned
    t-0..3, was assigned t-0..1 and had to revoke t-2..3 and rejoin (KIP-429's second round), but
    restarted first.  Kafka hands the new process the stored assignment in Stable and nobody ever
    rejoins, so t-2..3 stay unowned; kgroup rebalances."""
    d = Driver(NO_DELAY)
    leader, s = _stable_cooperative_pair(d, owned_by_s=(0, 1, 2, 3), assigned_to_s=(0, 1))
    old_id = _restart(s)
    s.protocols = _cooperative(())  # the new process owns nothing
    assert d.send(s.join_request())[0] is None  # parked: a rebalance, not the stored assignment
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    leader.protocols = _cooperative((2, 3))
    leader.join()
    assert leader.poll_join().generation_id == 2
    assert old_id not in {m.member_id for m in leader.leader_members}


def test_static_restart_of_a_member_that_owed_nothing_keeps_its_assignment():
    """The same group, but s's last join claimed only what it was assigned: Kafka's KIP-345 path."""
    d = Driver(NO_DELAY)
    _leader, s = _stable_cooperative_pair(d, owned_by_s=(0, 1), assigned_to_s=(0, 1))
    _restart(s)
    s.protocols = _cooperative(())
    response = s.join()
    assert response.error_code is E.NONE and response.generation_id == 1
    assert d.coordinator.group_state("g") is S.STABLE
