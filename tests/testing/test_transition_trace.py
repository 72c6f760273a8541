"""The transition observer on every state machine, and one trace of a whole run (project issue 10)."""
import pytest

from kgroup.core.cluster import PartitionState, ReplicaState
from kgroup.core.coordinator import GroupState
from kgroup.core.fsm import StateMachine, transition_sink
from kgroup.core.member import ClassicMemberState
from kgroup.errors import IllegalStateTransition
from kgroup.testing import InMemoryKafka, MockClock, Trace


def test_machine_observer_sees_each_transition_after_it_happened():
    seen = []
    machine = StateMachine("p", PartitionState.NON_EXISTENT,
                           {PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
                            PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
                            PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE}),
                            PartitionState.OFFLINE: frozenset({PartitionState.ONLINE})},
                           observer=lambda name, old, new: seen.append((name, old, new, machine.state)))
    machine.transition_to(PartitionState.NEW)
    machine.transition_to(PartitionState.ONLINE)
    machine.transition_to(PartitionState.ONLINE)  # a re-election is a transition too
    with pytest.raises(IllegalStateTransition):
        machine.transition_to(PartitionState.NEW)
    assert seen == [
        ("p", PartitionState.NON_EXISTENT, PartitionState.NEW, PartitionState.NEW),
        ("p", PartitionState.NEW, PartitionState.ONLINE, PartitionState.ONLINE),
        ("p", PartitionState.ONLINE, PartitionState.ONLINE, PartitionState.ONLINE),
    ]


def test_sink_sees_transitions_only_while_installed():
    table = {PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
             PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
             PartitionState.ONLINE: frozenset({PartitionState.NEW}),
             PartitionState.OFFLINE: frozenset({PartitionState.ONLINE})}
    machine = StateMachine("p", PartitionState.NON_EXISTENT, table)
    seen = []
    with transition_sink(lambda m, old, new: seen.append((m, old, new))):
        machine.transition_to(PartitionState.NEW)
    machine.transition_to(PartitionState.ONLINE)
    assert seen == [(machine, PartitionState.NON_EXISTENT, PartitionState.NEW)]


def test_trace_tells_apart_two_machines_of_one_name():
    table = {PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
             PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
             PartitionState.ONLINE: frozenset({PartitionState.NEW}),
             PartitionState.OFFLINE: frozenset({PartitionState.ONLINE})}
    clock = MockClock(5)
    first, second = StateMachine("same", PartitionState.NON_EXISTENT, table), \
        StateMachine("same", PartitionState.NON_EXISTENT, table)
    with Trace(clock) as trace:
        first.transition_to(PartitionState.NEW)
        clock.advance(3)
        second.transition_to(PartitionState.NEW)
        first.transition_to(PartitionState.ONLINE)
    assert [(e.now_ms, e.machine, e.machine_id, e.new) for e in trace.entries] == [
        (5, "partition", "same", PartitionState.NEW),
        (8, "partition", "same#2", PartitionState.NEW),
        (8, "partition", "same", PartitionState.ONLINE),
    ]


def test_one_run_traces_member_group_partition_and_replica_transitions():
    """One InMemoryKafka run under a Trace: the topic's partitions and replicas come online, the
    members and their group rebalance to Stable, and a broker kill takes replicas offline, all
    in one stream stamped with the mock clock, in the order it happened."""
    clock = MockClock(0)
    with Trace(clock) as trace:
        kafka = InMemoryKafka(3, offsets_partitions=3, clock=clock)
        try:
            kafka.create_topic("t", 4)
            kafka.member("a", "g", ["t"], session_timeout_ms=6_000)
            kafka.member("b", "g", ["t"], session_timeout_ms=6_000)
            kafka.run_until(lambda: kafka.group_settled("g"), limit_ms=30_000)
            settled_at = clock()
            kafka.kill_broker(1)
        finally:
            kafka.close()
    assert trace.machines() >= {"member", "group", "partition", "replica"}
    assert [e.now_ms for e in trace.entries] == sorted(e.now_ms for e in trace.entries)
    assert any(e.old is PartitionState.NEW and e.new is PartitionState.ONLINE
               for e in trace.of("partition", "partition t-0"))
    assert any(e.old is ReplicaState.NEW and e.new is ReplicaState.ONLINE for e in trace.of("replica"))
    # Two members of group g: two machines of one name, each through a rebalance to Stable.
    member_ids = {e.machine_id for e in trace.of("member")}
    assert member_ids == {"member[g]", "member[g]#2"}
    for machine_id in member_ids:
        states = [e.new for e in trace.of("member", machine_id)]
        assert states[0] is ClassicMemberState.PREPARING_REBALANCE and states[-1] is ClassicMemberState.STABLE
    group = trace.of("group", "group 'g'")
    assert group[0].old is GroupState.EMPTY and group[-1].new is GroupState.STABLE
    assert group[-1].now_ms <= settled_at
    # The kill happened at settled_at: broker 1's replicas went offline then.
    offline = [e for e in trace.of("replica") if e.new is ReplicaState.OFFLINE]
    assert offline and all(e.now_ms == settled_at and e.machine_id.endswith("@1") for e in offline)
