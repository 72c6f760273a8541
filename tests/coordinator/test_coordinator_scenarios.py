"""Kafka's classic GroupCoordinator on a mock clock: three consumers joining together or one by one
(the initial rebalance delay of KIP-134), members missing their JoinGroup response, and liveness
(GroupCoordinator's heartbeat expiration: completeAndScheduleNextHeartbeatExpiration /
onExpireHeartbeat) while members await a join or a sync."""
from __future__ import annotations

from coordinator_harness import Client, Driver, make_stable

from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode

E = ErrorCode
S = GroupState
NO_DELAY = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)


def _clients(driver, *names, **kw):
    return [Client(driver, name, **kw) for name in names]


def test_three_consumers_join_at_once_one_rebalance():
    d = Driver(NO_DELAY)
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    # consumer-3's request is handled first and completes the (zero) initial delay alone.
    assert c3.join() is None
    d.fire()
    assert c3.poll_join().generation_id == 1 and c3.is_leader
    # consumer-2 and consumer-1 join while the group awaits consumer-3's sync.
    assert c2.join() is None
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    assert c1.join() is None
    # consumer-3's sync for generation 1 is void now; it rejoins and completes the join.
    assert c3.sync().error_code is E.REBALANCE_IN_PROGRESS
    c3.join()
    for c in (c1, c2, c3):
        assert c.poll_join().generation_id == 2
    assert c3.is_leader and len(c3.leader_members) == 3
    assert not c1.leader_members and not c2.leader_members
    assert c1.sync() is None and c2.sync() is None  # parked until the leader syncs
    assert c3.sync().error_code is E.NONE
    c1.poll_sync(), c2.poll_sync()
    # A new group starts Empty (KAFKA-2720, Kafka 0.10.1); older Kafka had no Empty state.
    assert d.states() == [S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE,
                          S.COMPLETING_REBALANCE, S.STABLE]
    assert [c.assignments_received for c in (c1, c2, c3)] == [1, 1, 1]
    assert {c.name: c.assignment for c in (c1, c2, c3)} == {"c1": b"t-0", "c2": b"t-1", "c3": b"t-2"}


def test_second_and_third_join_after_first_is_stable_two_rebalances():
    d = Driver(NO_DELAY)
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    c1.join()
    d.fire()
    c1.poll_join()
    assert c1.sync().assignment == b"t-0,t-1,t-2"
    assert c2.join() is None and c3.join() is None
    assert c1.heartbeat().error_code is E.REBALANCE_IN_PROGRESS
    c1.join()
    assert all(c.poll_join().generation_id == 2 for c in (c1, c2, c3))
    assert c1.sync().error_code is E.NONE
    # already Stable: answered at once
    assert c2.sync().error_code is E.NONE and c3.sync().error_code is E.NONE
    assert d.states() == [S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE,
                          S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE]
    assert [c.assignments_received for c in (c1, c2, c3)] == [2, 1, 1]
    ids = sorted((c.member_id, c.name) for c in (c1, c2, c3))
    expected = dict(zip((name for _, name in ids), (b"t-0", b"t-1", b"t-2")))
    assert {c.name: c.assignment for c in (c1, c2, c3)} == expected


def _rebalance_with_all(d, joined, newcomer):
    assert newcomer.join() is None
    for c in joined:
        assert c.heartbeat().error_code is E.REBALANCE_IN_PROGRESS
        c.join()
    everyone = joined + [newcomer]
    assert all(c.poll_join().error_code is E.NONE for c in everyone)
    leader = next(c for c in everyone if c.is_leader)
    leader.sync()
    for c in everyone:
        if c is not leader:
            c.sync()


def test_each_consumer_joins_separately_three_rebalances():
    d = Driver(NO_DELAY)
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    c1.join()
    d.fire()
    c1.poll_join()
    c1.sync()
    _rebalance_with_all(d, [c1], c2)
    assert {c1.assignment, c2.assignment} == {b"t-0,t-2", b"t-1"}
    _rebalance_with_all(d, [c1, c2], c3)
    assert d.states() == [S.EMPTY] + [S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE] * 3
    assert [c.assignments_received for c in (c1, c2, c3)] == [3, 2, 1]
    assert sorted(c.assignment for c in (c1, c2, c3)) == [b"t-0", b"t-1", b"t-2"]
    assert all(c.generation_id == 3 for c in (c1, c2, c3))


def test_initial_delay_is_extended_while_members_arrive():
    d = Driver()  # default 3,000 ms delay
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    c1.join()
    d.advance(2_000)
    c2.join()
    d.advance(2_000)  # the delay fired at 3,000 and was extended to 6,000
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    c3.join()
    d.advance(4_999)  # extended again at 6,000 to 9,000
    assert c1.poll_join() is None
    d.advance(1)
    assert all(c.poll_join().generation_id == 1 for c in (c1, c2, c3))
    assert d.clock.now_ms == 9_000


def test_initial_delay_is_capped_at_the_rebalance_timeout():
    d = Driver()
    c1, c2 = _clients(d, "c1", "c2", rebalance_timeout_ms=5_000)
    c1.join()
    d.advance(1_000)
    c2.join()
    d.advance(3_999)
    assert c1.poll_join() is None
    d.advance(1)
    assert c1.poll_join().generation_id == 1 and d.clock.now_ms == 5_000


def test_follower_missing_its_join_response_rejoins_in_stable():
    d = Driver(NO_DELAY)
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    for c in (c1, c2, c3):
        c.join()
    d.fire()
    for c in (c1, c2):  # c3's JoinGroup response is lost
        c.poll_join()
    assert c1.is_leader
    assert c2.sync() is None
    assert c1.sync().error_code is E.NONE
    assert c2.poll_sync().error_code is E.NONE
    transitions_before = len(d.transitions)
    response = c3.join()  # rejoin with its member id: answered at once, no rebalance
    assert response.error_code is E.NONE and response.generation_id == 1 and not response.members
    assert c3.sync().assignment == b"t-2"
    assert len(d.transitions) == transitions_before
    assert [c.assignments_received for c in (c1, c2, c3)] == [1, 1, 1]


def test_leader_missing_its_join_response_rejoins_in_completing_rebalance():
    d = Driver(NO_DELAY)
    c1, c2, c3 = _clients(d, "c1", "c2", "c3")
    for c in (c1, c2, c3):
        c.join()
    d.fire()
    for c in (c2, c3):  # the leader c1 never sees its response
        c.poll_join()
    assert c2.sync() is None and c3.sync() is None
    assert d.coordinator.group_state("g") is S.COMPLETING_REBALANCE
    response = c1.join()
    assert response.error_code is E.NONE and response.generation_id == 1 and len(response.members) == 3
    assert c1.sync().error_code is E.NONE
    assert c2.poll_sync().error_code is E.NONE and c3.poll_sync().error_code is E.NONE
    assert d.states() == [S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE]


def test_liveness_awaiting_sync_keeps_a_member_alive():
    d = Driver(NO_DELAY)
    c3 = Client(d, "c3", session_timeout_ms=40_000)
    c1 = Client(d, "c1", session_timeout_ms=10_000)
    c2 = Client(d, "c2", session_timeout_ms=20_000)
    for c in (c3, c1, c2):
        c.join()
    d.fire()  # the join completes at t=0
    for c in (c1, c2, c3):
        c.poll_join()
    coord = d.coordinator
    assert c3.is_leader
    assert [coord.session_deadline_ms("g", c.member_id) for c in (c1, c2, c3)] == [10_000, 20_000, 40_000]
    d.advance(3_000)
    assert c1.sync() is None
    assert coord.session_deadline_ms("g", c1.member_id) == 13_000
    d.advance(2_000)
    assert c2.sync() is None
    d.advance(20_000)  # t=25,000: both deadlines passed while awaiting sync
    assert coord.group_state("g") is S.COMPLETING_REBALANCE
    assert c3.sync().error_code is E.NONE
    assert c1.poll_sync().error_code is E.NONE and c2.poll_sync().error_code is E.NONE
    assert coord.session_deadline_ms("g", c1.member_id) == 35_000


def test_liveness_awaiting_join_keeps_a_member_alive_and_deadlines_restart_at_completion():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", session_timeout_ms=10_000)
    c2 = Client(d, "c2", session_timeout_ms=20_000)
    c3 = Client(d, "c3", session_timeout_ms=40_000)
    make_stable(d, c1, c2)
    coord = d.coordinator
    assert [coord.session_deadline_ms("g", c.member_id) for c in (c1, c2)] == [10_000, 20_000]
    d.advance(2_000)
    assert c3.join() is None
    d.advance(1_000)
    assert c1.join() is None
    d.advance(7_000)  # t=10,000: c1's deadline passes while it awaits its join response
    assert c1.member_id in {m for m in coord.persisted_view().groups["g"].members}
    d.advance(5_000)
    assert c2.join() is not None  # t=15,000: the last member rejoins, the join completes
    assert [coord.session_deadline_ms("g", c.member_id) for c in (c1, c2, c3)] == [25_000, 35_000, 55_000]
    assert all(c.poll_join().generation_id == 2 for c in (c1, c2, c3))


def test_liveness_member_not_rejoining_by_its_deadline_is_removed():
    d = Driver(NO_DELAY)
    c1 = Client(d, "c1", session_timeout_ms=10_000)
    c2 = Client(d, "c2", session_timeout_ms=20_000)
    c3 = Client(d, "c3", session_timeout_ms=40_000)
    make_stable(d, c1, c2)
    d.advance(2_000)
    c3.join()
    d.advance(1_000)
    c1.join()
    d.advance(16_999)
    assert c1.poll_join() is None
    d.advance(1)  # t=20,000: c2 expires; the join completes without it
    assert c1.poll_join().generation_id == 2 and c3.poll_join().generation_id == 2
    members = {m.member_id for m in (c1.leader_members or c3.leader_members)}
    assert members == {c1.member_id, c3.member_id}
    assert c2.heartbeat().error_code is E.UNKNOWN_MEMBER_ID


def test_follower_missing_its_join_response_rejoins_in_completing_rebalance():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    for c in (c1, c2):
        c.join()
    d.fire()
    c1.poll_join()  # c2's response is lost
    response = c2.join()
    assert response.error_code is E.NONE and response.generation_id == 1 and not response.members
    assert c2.sync() is None
    c1.sync()
    assert c2.poll_sync().assignment == b"t-1"
    assert d.states() == [S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE]


def test_leader_rejoining_in_stable_starts_a_rebalance():
    d = Driver(NO_DELAY)
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    make_stable(d, c1, c2)
    assert c1.is_leader
    assert c1.join() is None  # Kafka: a leader's rejoin in Stable means it wants to reassign
    assert d.coordinator.group_state("g") is S.PREPARING_REBALANCE
    c2.join()
    assert c1.poll_join().generation_id == 2
