"""Fetch rounds cost what changed, not how many partitions exist (issue 23, item 1).

The periodic round visits only partitions that something touched since they were last
found quiet (an append, an election, a fault); rounds a late caller missed run as one.
"""
from __future__ import annotations

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine

INTERVAL_MS = ClusterConfig().replica_fetch_interval_ms
LAG_MAX_MS = ClusterConfig().replica_lag_time_max_ms


def _cluster(partitions: int) -> ClusterStateMachine:
    cluster = ClusterStateMachine(ClusterConfig(broker_ids=(1, 2, 3), default_replication_factor=3))
    cluster.create_topic("t", partitions)
    return cluster


def _tick_every_interval(cluster: ClusterStateMachine, until_ms: int) -> None:
    while cluster.get_timer() <= until_ms:
        cluster.handle_timer(cluster.get_timer())


def test_idle_partitions_are_not_visited_by_periodic_rounds():
    cluster = _cluster(2_000)
    _tick_every_interval(cluster, 2 * INTERVAL_MS)
    assert cluster.active_partitions() == 0
    visits = cluster.partition_rounds
    _tick_every_interval(cluster, 60_000)
    assert cluster.partition_rounds == visits


def test_an_append_wakes_only_its_partition_until_every_follower_has_it():
    cluster = _cluster(2_000)
    _tick_every_interval(cluster, 2 * INTERVAL_MS)
    cluster.produce("t", 7, "record", acks_all=False)
    assert cluster.active_partitions() == 1
    visits = cluster.partition_rounds
    _tick_every_interval(cluster, cluster.now_ms + 10 * INTERVAL_MS)
    p = cluster.partition("t", 7)
    assert all(p.logs[b].leo == 1 and p.logs[b].hw == 1 for b in p.assigned)
    assert cluster.active_partitions() == 0
    # Fetch, then learn the HW: two rounds over one partition, then it is quiet again.
    assert cluster.partition_rounds - visits == 2


def test_missed_rounds_run_as_one_round_not_one_per_interval():
    cluster = _cluster(3)
    cluster.produce("t", 0, "record", acks_all=False)
    visits = cluster.partition_rounds
    active = cluster.active_partitions()
    cluster.handle_timer(cluster.get_timer() + 100 * INTERVAL_MS)
    assert cluster.partition_rounds - visits == active
    # The round grid keeps its phase: the next round is one interval after the latest due one.
    assert cluster.get_timer() % INTERVAL_MS == 0
    assert cluster.get_timer() > cluster.now_ms


def test_a_follower_caught_up_while_its_partition_slept_is_not_dropped_from_the_isr_later():
    # The quiet partition skipped the rounds that would have refreshed the slowed follower's
    # caught-up time; waking it restores that time, so the ISR does not shrink on the next append.
    cluster = _cluster(1)
    _tick_every_interval(cluster, 2 * INTERVAL_MS)
    p = cluster.partition("t", 0)
    slowed = next(b for b in p.assigned if b != p.leader)
    cluster.slow_follower(slowed, 5 * INTERVAL_MS)
    _tick_every_interval(cluster, LAG_MAX_MS + 30_000)
    assert cluster.active_partitions() == 0
    while cluster.last_fetch_ms[slowed] != cluster.now_ms:  # a round the slowed follower fetched in
        cluster.handle_timer(cluster.get_timer())
    cluster.produce("t", 0, "after a long sleep", acks_all=False)
    cluster.handle_timer(cluster.get_timer())  # the slowed follower may not fetch in this round
    assert p.logs[slowed].leo == 0
    assert slowed in p.isr


def test_a_follower_that_stopped_fetching_still_leaves_the_isr_after_the_lag_limit():
    cluster = _cluster(1)
    _tick_every_interval(cluster, 2 * INTERVAL_MS)
    p = cluster.partition("t", 0)
    stalled = next(b for b in p.assigned if b != p.leader)
    cluster.slow_follower(stalled, 10 * LAG_MAX_MS)
    _tick_every_interval(cluster, LAG_MAX_MS)
    cluster.produce("t", 0, "m", acks_all=False)
    _tick_every_interval(cluster, cluster.now_ms + LAG_MAX_MS + 2 * INTERVAL_MS)
    assert stalled not in p.isr
