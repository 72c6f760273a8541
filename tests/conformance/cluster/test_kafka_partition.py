"""Kafka PartitionTest (core/src/test/scala/unit/kafka/cluster/PartitionTest.scala, trunk), ported.

Only the scenarios that concern what kgroup's in-memory partition models: leadership and the epoch
cache, ISR expansion and shrink, min.insync.replicas and the high watermark.  Kafka's AlterPartition
round trip (an ISR change "in flight" until the controller commits it) is not modelled: kgroup's ISR
changes at once, so where Kafka asserts the in-flight ("maximal") ISR and then the committed one,
these tests assert the committed one (docs/conformance/cluster.md).
"""
from cluster_partition_harness import REPLICA_LAG_TIME_MAX_MS, fetch, leader_hw, leader_partition

from kgroup.core.cluster import ClusterStateMachine, ClusterConfig
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.replica_log import LogEntry


def test_make_leader_updates_epoch_cache():
    """Kafka PartitionTest.testMakeLeaderUpdatesEpochCache: the new leader's epoch starts at its LEO, so
    OffsetsForLeaderEpoch for the current epoch answers (epoch, LEO)."""
    partition = Partition("t", 0, [1])
    log = partition.logs[1]
    for epoch in (0, 0, 5, 5):
        log.append(LogEntry(epoch, "v"))
    assert log.leo == 4
    partition.leader_epoch = 7
    partition.set_leader(1, now_ms=0)
    assert partition.leader_epoch == 8
    assert log.end_offset_for(8) == (8, 4)


def test_at_min_isr():
    """Kafka PartitionTest.testAtMinIsr: replicas 3, ISR only the leader, min ISR 1 -> at min ISR."""
    partition = Partition("t", 0, [1, 2, 3], min_insync_replicas=1)
    assert not partition.is_at_min_isr()  # not led yet
    partition.isr = [1]
    partition.set_leader(1, now_ms=0)
    assert partition.is_at_min_isr()


def test_is_under_min_isr():
    """Kafka PartitionTest.testIsUnderMinIsr: min ISR 2, ISR {leader, follower} is not under min ISR;
    after the leader is re-elected with ISR {leader} it is."""
    partition = leader_partition([1, 2], [1, 2], min_insync_replicas=2, seeded_records=0)
    assert not partition.is_under_min_isr()
    partition.isr = [1]
    partition.set_leader(1, now_ms=0)
    assert partition.is_under_min_isr()


def test_effective_min_isr_is_capped_by_the_replication_factor():
    """Kafka Partition.effectiveMinIsr (KAFKA-15583): min.insync.replicas larger than the replica count
    counts as the replica count, so a fully in-sync partition is never under min ISR."""
    partition = leader_partition([1, 2], [1, 2], min_insync_replicas=3)
    assert partition.effective_min_isr() == 2
    assert not partition.is_under_min_isr()
    fetch(partition, [2], now_ms=0)
    assert leader_hw(partition) == 10


def test_high_watermark_does_not_advance_when_under_min_isr():
    """Kafka PartitionTest.testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR (KAFKA-15583):
    min ISR 3, ISR {leader, follower1}: follower1 catching up does not move the HW; once follower2 joins
    the ISR the partition is no longer under min ISR and the HW reaches the LEO."""
    partition = leader_partition([1, 2, 3], [1, 2], min_insync_replicas=3)
    assert partition.is_under_min_isr()
    assert leader_hw(partition) == 0

    fetch(partition, [2], now_ms=0)
    assert leader_hw(partition) == 0

    fetch(partition, [3], now_ms=0)
    assert sorted(partition.isr) == [1, 2, 3]
    assert not partition.is_under_min_isr()
    assert leader_hw(partition) == 10


def test_isr_expansion():
    """Kafka PartitionTest.testIsrExpansion: a follower out of the ISR joins it once it has fetched up to
    the leader's log end (kgroup's fetch always catches up fully, so one fetch does)."""
    partition = leader_partition([1, 2], [1])
    assert partition.isr == [1]
    assert partition.last_caught_up_ms[2] == 0
    fetch(partition, [2], now_ms=5)
    assert partition.isr == [1, 2]
    assert partition.logs[2].leo == 10
    assert partition.last_caught_up_ms[2] == 5


def test_maybe_shrink_isr():
    """Kafka PartitionTest.testMaybeShrinkIsr: a follower that never fetches is considered caught up at
    leader election and stays in the ISR; after replica.lag.time.max.ms + 1 it is removed and the HW
    advances to the LEO the remaining ISR holds."""
    partition = leader_partition([1, 2, 3], [1, 2, 3])
    assert leader_hw(partition) == 0
    fetch(partition, [2], now_ms=0)
    assert partition.last_caught_up_ms[3] == 0
    assert partition.logs[3].leo == 0

    partition.shrink_isr(0, REPLICA_LAG_TIME_MAX_MS)
    assert partition.isr == [1, 2, 3]
    assert leader_hw(partition) == 0

    partition.shrink_isr(REPLICA_LAG_TIME_MAX_MS + 1, REPLICA_LAG_TIME_MAX_MS)
    assert partition.isr == [1, 2]
    assert leader_hw(partition) == 10


def test_should_not_shrink_isr_if_follower_caught_up_to_log_end():
    """Kafka PartitionTest.testShouldNotShrinkIsrIfFollowerCaughtUpToLogEnd: a follower whose LEO equals
    the leader's stays in the ISR however long it has not fetched (Replica.isCaughtUp)."""
    partition = leader_partition([1, 2], [1, 2])
    fetch(partition, [2], now_ms=0)
    assert leader_hw(partition) == 10
    partition.shrink_isr(30_001, REPLICA_LAG_TIME_MAX_MS)
    assert partition.isr == [1, 2]


def test_should_not_shrink_isr_if_previous_fetch_is_caught_up():
    """Kafka PartitionTest.testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp, adapted: Kafka's follower
    fetches part of the log at 5000 ms and the rest at 10001 ms, and stays in the ISR because it was
    caught up as of its previous fetch.  A kgroup fetch always reaches the leader's LEO, so the
    follower's last caught-up time is its last fetch: records appended after a fetch at 5000 ms leave
    it in the ISR at 10001 ms (within the lag) and its next fetch brings the HW to the LEO."""
    partition = leader_partition([1, 2], [1, 2])
    fetch(partition, [2], now_ms=5_000)
    assert leader_hw(partition) == 10
    for i in range(5):
        partition.append(f"late-{i}", acks_all=False)
    partition.shrink_isr(10_001, REPLICA_LAG_TIME_MAX_MS)
    assert partition.isr == [1, 2]
    fetch(partition, [2], now_ms=10_001)
    assert partition.isr == [1, 2]
    assert leader_hw(partition) == 15


def test_under_replicated_partitions_correct_semantics():
    """Kafka PartitionTest.testUnderReplicatedPartitionsCorrectSemantics: ISR smaller than the replica
    set -> under-replicated; ISR equal to it -> not."""
    partition = Partition("t", 0, [1, 2, 3])
    partition.isr = [1, 2]
    partition.set_leader(1, now_ms=0)
    assert partition.is_under_replicated()
    partition.isr = [1, 2, 3]
    partition.set_leader(1, now_ms=0)
    assert not partition.is_under_replicated()


def test_leader_hw_held_under_min_isr_then_acks_complete_when_isr_recovers():
    """Kafka PartitionTest.testHighWatermarkAdvanceShouldNotAdvanceWhenUnderMinISR, as seen by a producer:
    an acks=all append accepted at min ISR is not acknowledged while the ISR is below min ISR (the HW is
    held), and is acknowledged once the ISR is back to min ISR."""
    partition = leader_partition([1, 2, 3], [1, 2], min_insync_replicas=2, seeded_records=0)
    offset = partition.append("m", acks_all=True)
    partition.shrink_isr(REPLICA_LAG_TIME_MAX_MS + 1, REPLICA_LAG_TIME_MAX_MS)  # follower 2 never fetched
    assert partition.isr == [1]
    assert leader_hw(partition) == 0 and partition.acked == []
    fetch(partition, [3], now_ms=REPLICA_LAG_TIME_MAX_MS + 2)
    assert partition.isr == [1, 3]
    assert leader_hw(partition) == offset + 1
    assert [ack.payload for ack in partition.acked] == ["m"]


def test_isr_not_expanded_if_replica_is_in_controlled_shutdown():
    """Kafka PartitionTest.testIsrNotExpandedIfReplicaIsInControlledShutdown, at the cluster: a follower
    out of the ISR whose broker is shutting down is not added back however it fetched before, and once
    the broker is back and fetches, it is.  (kgroup's controlled_shutdown also stops the broker, so it
    cannot fetch meanwhile.)"""
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2), replica_lag_time_max_ms=1000))
    cluster.create_topic("t", 1, assignments=[[1, 2]])
    p = cluster.partition("t", 0)
    cluster.replicate(10)
    cluster.slow_follower(2, 10**9)
    cluster.produce("t", 0, "m", acks_all=False)
    cluster.replicate(2000)
    assert p.isr == [1]
    cluster.slow_follower(2, None)
    cluster.controlled_shutdown(2)
    cluster.replicate(3000)
    assert p.isr == [1]
    cluster.restart_broker(2)
    cluster.replicate(4000)
    assert p.isr == [1, 2]
