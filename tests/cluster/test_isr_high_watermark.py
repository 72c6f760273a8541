"""ISR membership and the high watermark through the ClusterStateMachine API (Kafka Partition.scala
semantics)."""
from kgroup.core.cluster import ClusterStateMachine, ClusterConfig


def _three_replica_partition(**config):
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3), **config))
    cluster.create_topic("t", 1, assignments=[[1, 2, 3]])
    return cluster, cluster.partition("t", 0)


def test_leader_holds_hw_while_isr_is_below_min_insync_replicas():
    """KAFKA-15583 (Partition.maybeIncrementLeaderHW returns early when isUnderMinIsr): an acks=1 write
    taken while the ISR is below min.insync.replicas does not become visible until the ISR recovers."""
    cluster, p = _three_replica_partition(min_insync_replicas=2)
    cluster.produce("t", 0, "before")
    cluster.replicate(10)
    assert p.logs[1].hw == 1

    cluster.kill_broker(2)
    cluster.kill_broker(3)
    assert p.isr == [1]
    cluster.produce("t", 0, "alone", acks_all=False)
    cluster.replicate(20)
    assert p.logs[1].leo == 2
    assert p.logs[1].hw == 1  # held: only the leader has "alone"

    cluster.restart_broker(2)
    cluster.replicate(30)
    assert sorted(p.isr) == [1, 2]
    assert p.logs[1].hw == 2


def test_idle_follower_at_leader_log_end_stays_in_isr():
    """Kafka Replica.isCaughtUp: a follower whose LEO equals the leader's is caught up whatever its last
    fetch time, so an idle partition keeps its ISR although its followers stop fetching."""
    cluster, p = _three_replica_partition(replica_lag_time_max_ms=1000)
    cluster.produce("t", 0, "x")
    cluster.replicate(10)
    for follower in (2, 3):
        cluster.slow_follower(follower, 10**9)
    cluster.replicate(5000)
    assert sorted(p.isr) == [1, 2, 3]

    # Once the leader's LEO moves on they are behind, and were last caught up at 10 ms: out.
    cluster.produce("t", 0, "y", acks_all=False)
    cluster.replicate(5010)
    assert p.isr == [1]


def test_acks_all_uses_min_insync_replicas_capped_by_the_replica_count():
    """Kafka Partition.appendRecordsToLeader checks the ISR against effectiveMinIsr: with
    min.insync.replicas 3 a fully in-sync two-replica partition accepts acks=all and acknowledges it."""
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3), min_insync_replicas=3))
    cluster.create_topic("t", 1, assignments=[[1, 2]])
    cluster.produce("t", 0, "m")
    cluster.replicate(10)
    assert [ack.payload for ack in cluster.take_acks()] == ["m"]
