"""Kafka PartitionStateMachineTest and ReplicaStateMachineTest (3.7, core/src/test/scala/unit/kafka/
controller/), the scenarios with effects beyond the legality of a move, ported to the ClusterStateMachine API.

Kafka drives its state machines directly against a mocked ZooKeeper; kgroup's state machines are
driven by the cluster's controller, so each test reaches the same starting point through the
ClusterStateMachine (create a topic, kill or restart a broker) and asserts the state, leader and ISR Kafka
asserts.  Transition legality alone is in test_kafka_cluster_state_tables.py.
"""
import pytest

from kgroup.core.cluster import ClusterStateMachine, ClusterConfig, PartitionState, ReplicaState


def _cluster(brokers=(1, 2), **config):
    return ClusterStateMachine(ClusterConfig(broker_ids=brokers, **config))


def test_new_partition_to_online_partition_transition():
    """Kafka PartitionStateMachineTest.testNewPartitionToOnlinePartitionTransition: a new partition whose
    only replica is live comes online with that replica as leader, ISR [it], first leader epoch 0."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[1]])
    p = cluster.partition("t", 0)
    assert p.state.state is PartitionState.ONLINE
    assert (p.leader, p.isr, p.leader_epoch) == (1, [1], 0)


def test_new_partition_to_offline_partition_transition():
    """Kafka PartitionStateMachineTest.testNewPartitionToOfflinePartitionTransition: a new partition whose
    replicas are all down cannot elect a leader and goes offline."""
    cluster = _cluster()
    cluster.kill_broker(2)
    cluster.create_topic("t", 1, assignments=[[2]])
    p = cluster.partition("t", 0)
    assert p.state.state is PartitionState.OFFLINE
    assert p.leader is None


def test_online_partition_to_online_transition():
    """Kafka PartitionStateMachineTest.testOnlinePartitionToOnlineTransition: a preferred-replica election
    re-elects an online partition (Online -> Online) with a new leader epoch."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[1, 2]])
    cluster.replicate(10)
    cluster.kill_broker(1)
    cluster.restart_broker(1)
    cluster.replicate(20)
    p = cluster.partition("t", 0)
    assert p.leader == 2 and sorted(p.isr) == [1, 2]
    epoch = p.leader_epoch
    cluster.elect_preferred_leaders()
    assert p.state.state is PartitionState.ONLINE
    assert p.leader == 1
    assert p.leader_epoch == epoch + 1


def test_online_partition_to_online_transition_for_controlled_shutdown():
    """Kafka PartitionStateMachineTest.testOnlinePartitionToOnlineTransitionForControlledShutdown: leader 1,
    ISR [1, 2], broker 1 shutting down -> leader 2, ISR [2], partition still online."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[1, 2]])
    cluster.replicate(10)
    p = cluster.partition("t", 0)
    assert (p.leader, sorted(p.isr)) == (1, [1, 2])
    epoch = p.leader_epoch
    cluster.controlled_shutdown(1)
    assert p.state.state is PartitionState.ONLINE
    assert (p.leader, p.isr) == (2, [2])
    assert p.leader_epoch == epoch + 1


def test_online_partition_to_offline_transition():
    """Kafka PartitionStateMachineTest.testOnlinePartitionToOfflineTransition: the last replica's broker
    fails -> the partition goes offline (and keeps its last ISR member, as Kafka does)."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[2]])
    cluster.kill_broker(2)
    p = cluster.partition("t", 0)
    assert p.state.state is PartitionState.OFFLINE
    assert p.leader is None and p.isr == [2]


def test_offline_partition_is_reported_offline_again():
    """Kafka PartitionStateMachine: OfflinePartition is a valid previous state of OfflinePartition, so a
    further failure in an already offline partition's replica set is not an illegal move."""
    cluster = _cluster(brokers=(1, 2, 3))
    cluster.create_topic("t", 1, assignments=[[2, 3]])
    cluster.replicate(10)
    cluster.kill_broker(2)
    cluster.kill_broker(3)
    p = cluster.partition("t", 0)
    assert p.state.state is PartitionState.OFFLINE
    p.state.transition_to(PartitionState.OFFLINE)
    assert p.state.state is PartitionState.OFFLINE


def test_offline_partition_to_online_partition_transition():
    """Kafka PartitionStateMachineTest.testOfflinePartitionToOnlinePartitionTransition: offline partition,
    no leader, ISR [1]; broker 1 live again -> a clean offline election makes 1 leader."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[2]])
    cluster.kill_broker(2)
    p = cluster.partition("t", 0)
    epoch = p.leader_epoch
    cluster.restart_broker(2)
    assert p.state.state is PartitionState.ONLINE
    assert (p.leader, p.isr) == (2, [2])
    assert p.leader_epoch == epoch + 1
    assert cluster.elections[-1][4] is False  # clean


@pytest.mark.parametrize("leader_recovery_supported", [
    pytest.param(False, id="testOfflinePartitionToUncleanOnlinePartitionTransition[false]"),
])
def test_offline_partition_to_unclean_online_partition_transition(leader_recovery_supported):
    """Kafka PartitionStateMachineTest.testOfflinePartitionToUncleanOnlinePartitionTransition: leader X,
    ISR [X], replicas [X, Y], only Y live, unclean election enabled -> leader Y, ISR [Y].  (The
    ``true`` variant adds KIP-704's RECOVERING leader state, which kgroup does not model.)"""
    cluster = _cluster(unclean_leader_election_enable=True, replica_lag_time_max_ms=1000)
    cluster.create_topic("t", 1, assignments=[[2, 1]])
    p = cluster.partition("t", 0)
    cluster.replicate(10)
    cluster.slow_follower(1, 10**9)
    cluster.produce("t", 0, "only-on-the-leader", acks_all=False)
    cluster.replicate(5000)
    assert (p.leader, p.isr) == (2, [2])
    cluster.kill_broker(2)
    assert p.state.state is PartitionState.ONLINE
    assert (p.leader, p.isr) == (1, [1])
    assert p.last_unclean


def test_offline_partition_to_nonexistent_partition_transition():
    """Kafka PartitionStateMachineTest.testOfflinePartitionToNonexistentPartitionTransition: deleting the
    topic of an offline partition takes it to NonExistentPartition (its replicas through deletion)."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[2]])
    cluster.kill_broker(2)
    p = cluster.partition("t", 0)
    assert p.state.state is PartitionState.OFFLINE
    cluster.delete_topic("t")
    assert p.state.state is PartitionState.NON_EXISTENT
    assert p.replica_states[2].state is ReplicaState.NON_EXISTENT


def test_replica_startup_online_partition():
    """Kafka ReplicaStateMachineTest.testStartupOnlinePartition: a replica on a live broker starts Online
    (kgroup's controller sets replica states when it creates the partition)."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[1]])
    assert cluster.partition("t", 0).replica_states[1].state is ReplicaState.ONLINE


def test_replica_startup_offline_partition():
    """Kafka ReplicaStateMachineTest.testStartupOfflinePartition: a replica on a broker that is not live
    starts Offline."""
    cluster = _cluster()
    cluster.kill_broker(2)
    cluster.create_topic("t", 1, assignments=[[2]])
    assert cluster.partition("t", 0).replica_states[2].state is ReplicaState.OFFLINE


def test_replica_startup_with_replica_without_leader():
    """Kafka ReplicaStateMachineTest.testStartupWithReplicaWithoutLeader: a partition whose only replica is
    on a down broker has no leader and that replica is Offline; the live broker holds no replica."""
    cluster = _cluster()
    cluster.kill_broker(2)
    cluster.create_topic("t", 1, assignments=[[2]])
    p = cluster.partition("t", 0)
    assert p.leader is None
    assert p.replica_states[2].state is ReplicaState.OFFLINE
    assert 1 not in p.replica_states
