"""Kafka ControllerIntegrationTest (3.7, core/src/test/scala/unit/kafka/controller/), ported where it
applies to kgroup's in-memory cluster: controller epochs, topic creation and expansion, offline
elections, preferred-replica elections, controlled shutdown and reassignment progress.

kgroup's controller is the lowest live broker id (``controllerId`` below is broker 1 and
``otherBrokerId`` broker 2); Kafka's ``LeaderAndIsr.InitialLeaderEpoch`` is 0, as kgroup's first
leader epoch.  ZooKeeper paths, metrics, feature znodes, topic ids, AlterPartition versions and event
preemption have no kgroup counterpart and are not ported (docs/conformance/cluster.md).
"""
from kgroup.core.cluster import ClusterStateMachine, ClusterConfig, PartitionState

INITIAL_LEADER_EPOCH = 0
CONTROLLER, OTHER = 1, 2


def _cluster(brokers=(CONTROLLER, OTHER), **config):
    return ClusterStateMachine(ClusterConfig(broker_ids=brokers, **config))


def test_empty_cluster():
    """Kafka ControllerIntegrationTest.testEmptyCluster: one broker elects itself controller, epoch 1."""
    cluster = _cluster(brokers=(1,))
    assert (cluster.controller_id, cluster.controller_epoch) == (1, 1)


def test_controller_epoch_persists_when_all_brokers_down():
    """Kafka ControllerIntegrationTest.testControllerEpochPersistsWhenAllBrokersDown."""
    cluster = _cluster(brokers=(1,))
    cluster.kill_broker(1)
    assert (cluster.controller_id, cluster.controller_epoch) == (None, 1)


def test_controller_move_increments_controller_epoch():
    """Kafka ControllerIntegrationTest.testControllerMoveIncrementsControllerEpoch: the only broker stops
    and starts again -> controller again, epoch 2."""
    cluster = _cluster(brokers=(1,))
    cluster.kill_broker(1)
    cluster.restart_broker(1)
    assert (cluster.controller_id, cluster.controller_epoch) == (1, 2)


def test_topic_creation():
    """Kafka ControllerIntegrationTest.testTopicCreation: leader 0's only replica, initial leader epoch."""
    cluster = _cluster(brokers=(1,))
    cluster.create_topic("t", 1, assignments=[[1]])
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (1, INITIAL_LEADER_EPOCH)


def test_topic_creation_with_offline_replica():
    """Kafka ControllerIntegrationTest.testTopicCreationWithOfflineReplica: replicas [other (down),
    controller] -> the controller leads at the initial leader epoch."""
    cluster = _cluster()
    cluster.kill_broker(OTHER)
    cluster.create_topic("t", 1, assignments=[[OTHER, CONTROLLER]])
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (CONTROLLER, INITIAL_LEADER_EPOCH)
    assert p.isr == [CONTROLLER]


def test_topic_partition_expansion():
    """Kafka ControllerIntegrationTest.testTopicPartitionExpansion: a partition added to a topic comes
    online with a leader at the initial leader epoch."""
    cluster = _cluster(brokers=(1,))
    cluster.create_topic("t", 1, assignments=[[1]])
    cluster.add_partitions("t", 1)
    p1 = cluster.partition("t", 1)
    assert p1.state.state is PartitionState.ONLINE
    assert (p1.leader, p1.leader_epoch) == (1, INITIAL_LEADER_EPOCH)


def test_topic_partition_expansion_with_offline_replica():
    """Kafka ControllerIntegrationTest.testTopicPartitionExpansionWithOfflineReplica: with the other
    broker down, the added partition is led by the controller at the initial leader epoch."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[OTHER, CONTROLLER]])
    cluster.kill_broker(OTHER)
    cluster.add_partitions("t", 1)
    p1 = cluster.partition("t", 1)
    assert sorted(p1.assigned) == [CONTROLLER, OTHER]
    assert (p1.leader, p1.leader_epoch) == (CONTROLLER, INITIAL_LEADER_EPOCH)


def test_partition_reassignment():
    """Kafka ControllerIntegrationTest.testPartitionReassignment: [controller] -> [other]; the other
    broker leads, the assignment is [other] and the reassignment is no longer in progress.  (Kafka's
    ZooKeeper controller ends at leader epoch initial + 3, kgroup at initial + 2: see the docs.)"""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[CONTROLLER]])
    cluster.reassign_partition("t", 0, [OTHER])
    cluster.replicate(10)
    p = cluster.partition("t", 0)
    assert p.leader == OTHER
    assert p.assigned == [OTHER]
    assert not cluster.reassignments
    assert p.leader_epoch == INITIAL_LEADER_EPOCH + 2


def test_partition_reassignment_with_offline_replica_halting_progress():
    """Kafka ControllerIntegrationTest.testPartitionReassignmentWithOfflineReplicaHaltingProgress: the
    target replica's broker is down, so the controller keeps leading (epoch initial + 1, bumped when the
    reassignment started) and the reassignment stays in progress."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[CONTROLLER]])
    cluster.kill_broker(OTHER)
    cluster.reassign_partition("t", 0, [OTHER])
    cluster.replicate(10)
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (CONTROLLER, INITIAL_LEADER_EPOCH + 1)
    assert ("t", 0) in cluster.reassignments


def test_partition_reassignment_resumes_after_replica_comes_online():
    """Kafka ControllerIntegrationTest.testPartitionReassignmentResumesAfterReplicaComesOnline: once the
    target broker is back it catches up and the reassignment completes with it leading."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[CONTROLLER]])
    cluster.kill_broker(OTHER)
    cluster.reassign_partition("t", 0, [OTHER])
    cluster.replicate(10)
    cluster.restart_broker(OTHER)
    cluster.replicate(20)
    p = cluster.partition("t", 0)
    assert p.leader == OTHER and p.assigned == [OTHER]
    assert not cluster.reassignments


def _preferred_replica_leader_election(cluster, leader_epoch):
    """Kafka ControllerIntegrationTest.preferredReplicaLeaderElection: the preferred replica's broker
    stops (the controller leads, epoch + 1), starts, rejoins the ISR, and a preferred election makes it
    leader again (epoch + 2)."""
    p = cluster.partition("t", 0)
    cluster.kill_broker(OTHER)
    assert (p.leader, p.leader_epoch) == (CONTROLLER, leader_epoch + 1)
    cluster.restart_broker(OTHER)
    cluster.replicate(cluster.now_ms + 10)
    assert sorted(p.isr) == [CONTROLLER, OTHER]
    cluster.elect_preferred_leaders()
    assert (p.leader, p.leader_epoch) == (OTHER, leader_epoch + 2)


def test_preferred_replica_leader_election():
    """Kafka ControllerIntegrationTest.testPreferredReplicaLeaderElection."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[OTHER, CONTROLLER]])
    _preferred_replica_leader_election(cluster, INITIAL_LEADER_EPOCH)


def test_back_to_back_preferred_replica_leader_elections():
    """Kafka ControllerIntegrationTest.testBackToBackPreferredReplicaLeaderElections."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[OTHER, CONTROLLER]])
    _preferred_replica_leader_election(cluster, INITIAL_LEADER_EPOCH)
    _preferred_replica_leader_election(cluster, INITIAL_LEADER_EPOCH + 2)


def test_preferred_replica_leader_election_with_offline_preferred_replica():
    """Kafka ControllerIntegrationTest.testPreferredReplicaLeaderElectionWithOfflinePreferredReplica: the
    preferred replica is down, so the election gives up and the controller keeps leading (epoch + 1)."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[OTHER, CONTROLLER]])
    cluster.kill_broker(OTHER)
    cluster.elect_preferred_leaders()
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (CONTROLLER, INITIAL_LEADER_EPOCH + 1)


def _entire_isr_offline(unclean_enabled):
    cluster = _cluster(unclean_leader_election_enable=unclean_enabled)
    cluster.create_topic("t", 1, assignments=[[OTHER]])
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch) == (OTHER, INITIAL_LEADER_EPOCH)
    cluster.kill_broker(OTHER)
    return p


def test_leader_and_isr_when_entire_isr_offline_and_unclean_leader_election_disabled():
    """Kafka ControllerIntegrationTest.testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionDisabled:
    no leader, leader epoch initial + 1, the ISR keeps its last member."""
    p = _entire_isr_offline(unclean_enabled=False)
    assert (p.leader, p.leader_epoch, p.isr) == (None, INITIAL_LEADER_EPOCH + 1, [OTHER])


def test_leader_and_isr_when_entire_isr_offline_and_unclean_leader_election_enabled():
    """Kafka ControllerIntegrationTest.testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled:
    with no other replica there is nobody to elect uncleanly either: same outcome."""
    p = _entire_isr_offline(unclean_enabled=True)
    assert (p.leader, p.leader_epoch, p.isr) == (None, INITIAL_LEADER_EPOCH + 1, [OTHER])


def test_controlled_shutdown():
    """Kafka ControllerIntegrationTest.testControlledShutdown: replicas [0, 1, 2] led by 0 (here 1, 2, 3
    led by 1).  Shutting down 3 leaves leader 1, ISR [1, 2]; shutting down 2 leaves leader 1, ISR [1];
    shutting down the last ISR member cannot move leadership.  Kafka answers that request with the
    partition still led by it; kgroup's controlled_shutdown also stops the broker, so the partition then
    goes offline keeping its last ISR member, as when Kafka's broker finally stops."""
    cluster = _cluster(brokers=(1, 2, 3))
    cluster.create_topic("test", 1, assignments=[[1, 2, 3]])
    cluster.replicate(10)
    p = cluster.partition("test", 0)
    cluster.controlled_shutdown(3)
    assert (p.leader, sorted(p.isr)) == (1, [1, 2])
    cluster.controlled_shutdown(2)
    assert (p.leader, p.isr) == (1, [1])
    cluster.controlled_shutdown(1)
    assert p.state.state is PartitionState.OFFLINE
    assert (p.leader, p.isr) == (None, [1])


def test_controller_detects_bounced_brokers():
    """Kafka ControllerIntegrationTest.testControllerDetectsBouncedBrokers, adapted: Kafka's controller
    notices a broker that stopped and started before it processed the change, and the broker hosts its
    partition again.  kgroup's bounce_broker is a restart the controller never sees (docs/cluster.md):
    the follower keeps its ISR place, truncates on its next fetch and holds the partition again."""
    cluster = _cluster()
    cluster.create_topic("t", 1, assignments=[[CONTROLLER, OTHER]])
    cluster.produce("t", 0, "m")
    cluster.replicate(10)
    p = cluster.partition("t", 0)
    epoch = p.leader_epoch
    cluster.bounce_broker(OTHER)
    cluster.produce("t", 0, "n")
    cluster.replicate(20)
    assert (p.leader, p.leader_epoch) == (CONTROLLER, epoch)
    assert sorted(p.isr) == [CONTROLLER, OTHER]
    assert [e.payload for e in p.logs[OTHER].entries] == ["m", "n"]
