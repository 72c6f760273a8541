"""Helpers that stand a kgroup ``Partition`` where Kafka's PartitionTest / ReplicaTest put theirs.

Kafka's tests make the local broker leader over a log seeded with records of an older epoch
(``seedLogData(log, numRecords = 10, leaderEpoch = 4)`` then ``makeLeader(leaderEpoch = 5)``), then
drive followers with ``fetchFollower``.  Here a fetch is one ``Partition.replicate`` round in which
only the named followers may fetch; a kgroup fetch always catches the follower up to the leader's LEO.
"""
from typing import Iterable, Sequence

from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.replica_log import LogEntry

REPLICA_LAG_TIME_MAX_MS = 30_000  # Kafka's replica.lag.time.max.ms default, as the Kafka tests use


def leader_partition(replicas: Sequence[int], isr: Sequence[int], *, min_insync_replicas: int = 1,
                     seeded_records: int = 10, seeded_epoch: int = 4, now_ms: int = 0) -> Partition:
    """``replicas[0]`` leads in epoch ``seeded_epoch + 1`` over ``seeded_records`` records of
    ``seeded_epoch``, with ``isr`` as the ISR."""
    partition = Partition("t", 0, list(replicas), min_insync_replicas=min_insync_replicas)
    leader = replicas[0]
    for i in range(seeded_records):
        partition.logs[leader].append(LogEntry(seeded_epoch, f"record-{i}"))
    partition.leader_epoch = seeded_epoch
    partition.isr = list(isr)
    partition.set_leader(leader, now_ms)
    return partition


def fetch(partition: Partition, followers: Iterable[int], now_ms: int,
          lag_max_ms: int = REPLICA_LAG_TIME_MAX_MS) -> None:
    """One fetch round in which only ``followers`` fetch (Kafka ``fetchFollower``)."""
    allowed = set(followers)
    partition.replicate(now_ms, allowed.__contains__, True, lag_max_ms)


def leader_hw(partition: Partition) -> int:
    return partition.logs[partition.leader].hw
