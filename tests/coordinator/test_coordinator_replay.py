"""Replay property: after every request or timer firing, a coordinator loaded
from all records so far describes the same persisted state as the live one
(transactional offsets pending or ended by a marker included, issue 26)."""
from __future__ import annotations

from coordinator_harness import Client, Driver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, JoinGroupProtocol, LeaveGroupRequest, MemberIdentity, OffsetAndMetadata,
    OffsetCommitRequest, PartitionOffsetCommit, TxnOffsetCommitRequest,
)
from kgroup.values import TopicPartition

CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=500, group_max_size=3)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 3), st.booleans(), st.integers(0, 2)),
        st.tuples(st.just("sync"), st.integers(0, 3)),
        st.tuples(st.just("round"), st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True)),
        st.tuples(st.just("heartbeat"), st.integers(0, 3)),
        st.tuples(st.just("leave"), st.integers(0, 3)),
        st.tuples(st.just("commit"), st.integers(0, 3), st.integers(0, 1000)),
        st.tuples(st.just("restart"), st.integers(0, 3)),
        st.tuples(st.just("simple_commit"), st.integers(0, 1000)),
        st.tuples(st.just("delete"),),
        st.tuples(st.just("failover"),),
        st.tuples(st.just("admin_leave"), st.sampled_from(["i1", "i2"])),
        st.tuples(st.just("advance"), st.sampled_from([1, 500, 5_000, 11_000, 30_000])),
        # (client, offset, producer id, producer epoch); client 4: no member identity (v0-v2).
        st.tuples(st.just("txn_commit"), st.integers(0, 4), st.integers(0, 1000), st.integers(1, 2),
                  st.integers(0, 1)),
        st.tuples(st.just("txn_end"), st.integers(1, 2), st.booleans(), st.integers(0, 1)),
        # A whole transaction: the commit and its marker at once (producer 3).
        st.tuples(st.just("txn"), st.integers(0, 4), st.integers(0, 1000), st.booleans()),
    ),
    max_size=40,
)

PROTOCOL_SETS = (("range",), ("range", "roundrobin"), ("roundrobin",))


def _clients(d: Driver) -> list[Client]:
    # Two dynamic members and two static ones with different session timeouts.
    return [
        Client(d, "a", session_timeout_ms=10_000, rebalance_timeout_ms=20_000),
        Client(d, "b", session_timeout_ms=15_000, rebalance_timeout_ms=20_000),
        Client(d, "s1", session_timeout_ms=10_000, rebalance_timeout_ms=25_000, instance_id="i1"),
        Client(d, "s2", session_timeout_ms=20_000, rebalance_timeout_ms=20_000, instance_id="i2"),
    ]


def _step(d: Driver, clients: list[Client], op: tuple) -> None:
    kind = op[0]
    if kind == "join":
        c = clients[op[1]]
        protocols = tuple(JoinGroupProtocol(p, c.name.encode()) for p in PROTOCOL_SETS[op[3]])
        response, key = d.send(c.join_request(protocols=protocols, api_version=9 if op[2] else 3))
        if response is not None and response.error_code is ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = response.member_id  # the rejoin is a later, separate step
        else:
            c.join_key = key
    elif kind == "round":
        # A whole rebalance round for some clients: join, let the delay pass, sync (leader last).
        chosen = [clients[i] for i in op[1]]
        for c in chosen:
            c.join()
        d.advance(500)
        for c in sorted(chosen, key=lambda c: (c.poll_join() is not None, c.is_leader)):
            if c.poll_join() is not None:
                c.sync()
    elif kind == "sync":
        clients[op[1]].sync()
    elif kind == "heartbeat":
        clients[op[1]].heartbeat()
    elif kind == "leave":
        clients[op[1]].leave()
    elif kind == "commit":
        c = clients[op[1]]
        commit = PartitionOffsetCommit(TopicPartition("t", op[1]), OffsetAndMetadata(op[2]))
        d.send(OffsetCommitRequest("g", (commit,),
                                   generation_id=c.generation_id, member_id=c.member_id,
                                   group_instance_id=c.instance_id))
    elif kind == "restart":
        c = clients[op[1]]
        c.member_id, c.generation_id = "", -1
    elif kind == "simple_commit":
        commit = PartitionOffsetCommit(TopicPartition("u", 0), OffsetAndMetadata(op[1]))
        d.send(OffsetCommitRequest("g", (commit,)))
    elif kind == "admin_leave":
        d.send(LeaveGroupRequest("g", (MemberIdentity("", op[1]),)))
    elif kind == "failover":
        d.failover()
        for c in clients:  # whatever was parked is lost with the old coordinator
            c.join_key = c.sync_key = None
    elif kind == "delete":
        d.send(DeleteGroupsRequest(("g",)))
    elif kind == "txn":
        _, index, offset, commit_it = op
        _step(d, clients, ("txn_commit", index, offset, 3, 0))
        _step(d, clients, ("txn_end", 3, commit_it, 0))
    elif kind == "txn_commit":
        _, index, offset, producer_id, epoch = op
        identity = {} if index == 4 else dict(
            generation_id=clients[index].generation_id, member_id=clients[index].member_id,
            group_instance_id=clients[index].instance_id)
        commit = PartitionOffsetCommit(TopicPartition("t", index % 2), OffsetAndMetadata(offset))
        d.send(TxnOffsetCommitRequest("tx", "g", producer_id, epoch, (commit,), **identity))
    elif kind == "txn_end":
        _, producer_id, commit_it, epoch = op
        if not d.coordinator.is_stale_producer_epoch(producer_id, epoch):
            d._absorb(d.coordinator.complete_transaction(producer_id, epoch, commit_it, d.clock.now_ms))
    else:
        d.advance(op[1])
    for c in clients:
        c.poll_join()
        c.poll_sync()


def _check_invariants(coordinator: GroupCoordinator) -> None:
    """The counters the join barrier relies on match a full recount (the harness also runs
    GroupCoordinator.assert_invariants after every request and timer firing)."""
    for group in coordinator._classic.groups.values():
        members = group.members.values()
        assert group.num_awaiting_join == sum(m.join_key is not None for m in members)
        for name, count in group.supported_protocols.items():
            assert count == sum(name in m.protocol_names for m in members)
        assert group.static_members == {m.group_instance_id: m.member_id for m in members
                                        if m.group_instance_id is not None}
        assert group.leader_id is None or group.leader_id in group.members
        if group.is_(GroupState.DEAD):
            continue
        for m in members:  # every member can expire
            assert coordinator.session_deadline_ms(group.group_id, m.member_id) is not None
        if group.is_(GroupState.PREPARING_REBALANCE):
            assert coordinator._context.timer.deadline_of(group.join_key) is not None
        else:
            assert all(m.join_key is None for m in members)
        if not group.is_(GroupState.COMPLETING_REBALANCE):
            assert all(m.sync_key is None for m in members)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_loading_all_records_gives_the_live_persisted_state(sequence):
    d = Driver(CONFIG)
    clients = _clients(d)
    for op in sequence:
        _step(d, clients, op)
        _check_invariants(d.coordinator)
        loaded = GroupCoordinator.load(d.records, d.clock.now_ms, CONFIG)
        loaded.assert_invariants()
        assert loaded.persisted_view() == d.coordinator.persisted_view(), op
        live_state = d.coordinator.group_state("g")
        expected = None if live_state in (None, GroupState.DEAD) else live_state
        assert loaded.group_state("g") is expected


def test_a_loaded_coordinator_keeps_serving_the_group():
    d = Driver(GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    c1, c2 = Client(d, "c1"), Client(d, "c2")
    c1.join(), c2.join()
    d.fire()
    c1.poll_join(), c2.poll_join()
    c2.sync()
    c1.sync()
    c2.poll_sync()
    loaded = GroupCoordinator.load(d.records, d.clock.now_ms)
    assert loaded.group_state("g") is GroupState.STABLE
    assert loaded.session_deadline_ms("g", c1.member_id) == d.clock.now_ms + c1.session_timeout_ms
    d.coordinator = loaded
    assert c2.heartbeat().error_code is ErrorCode.NONE
    assert c2.sync().assignment == c2.assignment
    # Nobody heartbeats: both sessions expire, the group empties.
    d.advance(c1.session_timeout_ms)
    assert loaded.group_state("g") is GroupState.EMPTY
