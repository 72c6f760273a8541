"""Kafka ReplicaTest (core/src/test/scala/unit/kafka/cluster/ReplicaTest.scala, trunk), ported.

Kafka's ``Replica`` is the leader's record of one follower (LEO, last caught-up time); kgroup keeps
the follower's real log in ``Partition.logs`` and its last caught-up time in
``Partition.last_caught_up_ms``, so these tests drive a ``Partition``.  A kgroup fetch always
catches the follower up to the leader's LEO, so Kafka's partial fetches (``followerFetchOffset`` below
the leader's end) have no counterpart (docs/conformance/cluster.md).
"""
import pytest
from cluster_partition_harness import REPLICA_LAG_TIME_MAX_MS, fetch, leader_partition

from kgroup.core.cluster.replica_log import ReplicaLog

START_MS = 1_000_000  # Kafka's MockTime starts far from 0; so do these tests


def test_initial_state():
    """Kafka ReplicaTest.testInitialState: a follower that has never fetched has no log and was never
    caught up (last caught-up time 0), so it is not caught up to a leader holding records."""
    partition = leader_partition([1, 2], [1], now_ms=START_MS)
    assert partition.logs[2].leo == 0
    assert partition.last_caught_up_ms[2] == 0
    assert not partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)


def test_initial_state_of_a_replica_added_later():
    """Kafka ReplicaTest.testInitialState, for a replica the leader has no record of at all (a
    reassignment target before its first fetch): it is not caught up either."""
    partition = leader_partition([1], [1], now_ms=START_MS)
    partition.assigned.append(2)
    partition.logs[2] = ReplicaLog()
    assert 2 not in partition.last_caught_up_ms
    assert not partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)


def test_update_fetch_state():
    """Kafka ReplicaTest.testUpdateFetchState, adapted: a fetch that reaches the leader's LEO records the
    fetch time as the follower's last caught-up time and its LEO as the leader's."""
    partition = leader_partition([1, 2], [1], now_ms=START_MS)
    fetch(partition, [2], now_ms=START_MS + 10)
    assert partition.logs[2].leo == 10
    assert partition.last_caught_up_ms[2] == START_MS + 10
    partition.append("more", acks_all=False)
    fetch(partition, [2], now_ms=START_MS + 20)
    assert partition.logs[2].leo == 11
    assert partition.last_caught_up_ms[2] == START_MS + 20


@pytest.mark.parametrize("new_leader,in_sync", [
    pytest.param(False, True, id="testResetReplicaStateWhenLeaderIsReelectedAndReplicaIsInSync"),
    pytest.param(False, False, id="testResetReplicaStateWhenLeaderIsReelectedAndReplicaIsNotInSync"),
    pytest.param(True, True, id="testResetReplicaStateWhenNewLeaderIsElectedAndReplicaIsInSync"),
    pytest.param(True, False, id="testResetReplicaStateWhenNewLeaderIsElectedAndReplicaIsNotInSync"),
])
def test_reset_replica_state_on_election(new_leader, in_sync):
    """Kafka ReplicaTest.testResetReplicaState*: on (re-)election a follower in the ISR counts as caught
    up at the election time, one out of it as never (0)."""
    partition = leader_partition([1, 2, 3], [1, 2, 3], now_ms=START_MS)
    fetch(partition, [2, 3], now_ms=START_MS + 10)
    partition.append("more", acks_all=False)
    if not in_sync:
        partition.isr.remove(3)
    reset_ms = START_MS + 100
    partition.set_leader(2 if new_leader else 1, now_ms=reset_ms)
    assert partition.last_caught_up_ms[3] == (reset_ms if in_sync else 0)
    assert partition.logs[3].leo == 10  # the follower's own log is untouched


def test_is_caught_up_when_replica_is_caught_up_to_log_end():
    """Kafka ReplicaTest.testIsCaughtUpWhenReplicaIsCaughtUpToLogEnd: caught up after reaching the
    leader's LEO, and still caught up replica.lag.time.max.ms + 1 later while the LEO has not moved."""
    partition = leader_partition([1, 2], [1], now_ms=START_MS)
    assert not partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)
    fetch(partition, [2], now_ms=START_MS)
    assert partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)
    assert partition.is_caught_up(2, START_MS + REPLICA_LAG_TIME_MAX_MS + 1, REPLICA_LAG_TIME_MAX_MS)


def test_is_caught_up_when_replica_is_not_caught_up_to_log_end():
    """Kafka ReplicaTest.testIsCaughtUpWhenReplicaIsNotCaughtUpToLogEnd: once the leader's LEO has moved
    past the follower, it is caught up only within replica.lag.time.max.ms of its last catch-up."""
    partition = leader_partition([1, 2], [1], now_ms=START_MS)
    assert not partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)
    fetch(partition, [2], now_ms=START_MS)
    partition.append("more", acks_all=False)
    assert partition.is_caught_up(2, START_MS, REPLICA_LAG_TIME_MAX_MS)
    assert not partition.is_caught_up(2, START_MS + REPLICA_LAG_TIME_MAX_MS + 1, REPLICA_LAG_TIME_MAX_MS)
