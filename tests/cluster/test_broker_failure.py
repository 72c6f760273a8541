import pytest

from kgroup.core.cluster import ClusterStateMachine, ClusterConfig, PartitionState
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ClusterError


def _cluster(**kw):
    c = ClusterStateMachine(ClusterConfig(**kw))
    c.create_topic("t", 3)
    c.produce("t", 0, "x")
    c.replicate(10)
    return c


def test_partitions_led_by_dead_broker_elect_from_isr():
    c = _cluster()
    led = [p for p in c.topics["t"] if p.leader == 1]
    assert led
    epochs = {p.index: p.leader_epoch for p in led}
    c.kill_broker(1)
    for p in led:
        assert p.leader in p.isr and p.leader != 1
        assert p.leader_epoch == epochs[p.index] + 1
        assert p.state.state is PartitionState.ONLINE
        assert 1 not in p.isr


def test_no_leader_when_no_isr_member_alive_unless_unclean():
    for unclean in (False, True):
        c = _cluster(unclean_leader_election_enable=unclean, replica_lag_time_max_ms=1000)
        p = c.partition("t", 0)
        lead, *followers = p.assigned
        c.kill_broker(followers[0])
        c.isolate_broker(followers[1])  # isolated, so it drops out of the ISR too
        c.heal_broker(followers[1])
        c.slow_follower(followers[1], 10**9)
        c.replicate(5000)
        assert p.isr == [lead]
        c.restart_broker(followers[0])
        c.slow_follower(followers[0], 10**9)
        c.kill_broker(lead)
        if unclean:
            assert p.leader == followers[0] and p.last_unclean
        else:
            assert p.leader is None and p.state.state is PartitionState.OFFLINE
            with pytest.raises(ClusterError) as e:
                c.produce("t", 0, "y")
            assert e.value.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER
            c.restart_broker(lead)  # the last ISR member returns: clean election
            assert p.leader == lead and not p.last_unclean


def test_controlled_shutdown_moves_leadership_first():
    c = _cluster()
    p = c.partition("t", 0)
    old = p.leader
    c.controlled_shutdown(old)
    assert p.leader != old and p.leader is not None
    assert old not in p.isr
    c.restart_broker(old)
    c.replicate(20)
    c.elect_preferred_leaders()
    assert p.leader == p.assigned[0] == old


def test_min_insync_replicas_and_isr_shrink():
    c = _cluster(min_insync_replicas=2, replica_lag_time_max_ms=1000)
    p = c.partition("t", 0)
    for b in p.assigned[1:]:
        c.slow_follower(b, 10**9)
    # The stuck followers must fall behind the leader's LEO to leave the ISR: a follower whose LEO
    # equals the leader's stays in sync however long it is idle (Kafka ReplicaState.isCaughtUp).
    c.produce("t", 0, "behind", acks_all=False)
    c.replicate(5000)
    assert p.isr == [p.leader]
    with pytest.raises(ClusterError) as e:
        c.produce("t", 0, "y")
    assert e.value.error_code is ErrorCode.NOT_ENOUGH_REPLICAS
    c.produce("t", 0, "y", acks_all=False)
    for b in p.assigned[1:]:
        c.slow_follower(b, None)
    c.replicate(6000)
    assert sorted(p.isr) == sorted(p.assigned)  # rejoined once caught up


def test_controller_fails_over_with_new_epoch():
    c = ClusterStateMachine(ClusterConfig())
    assert (c.controller_id, c.controller_epoch) == (1, 1)
    c.kill_broker(1)
    assert (c.controller_id, c.controller_epoch) == (2, 2)


def test_topic_lifecycle():
    c = ClusterStateMachine(ClusterConfig())
    c.create_topic("a", 2)
    c.add_partitions("a", 2)
    assert [p.index for p in c.topics["a"]] == [0, 1, 2, 3]
    assert all(p.leader is not None for p in c.topics["a"])
    c.delete_topic("a")
    assert "a" not in c.topics
    with pytest.raises(ClusterError):
        c.partition("a", 0)
