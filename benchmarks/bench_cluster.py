"""CPU cost of a 3-broker cluster taking appends (one fetch round per 1,000 appends)."""
import pytest

from kgroup.core.cluster import ClusterStateMachine, ClusterConfig


def _run(partitions: int, appends: int) -> int:
    c = ClusterStateMachine(ClusterConfig())
    c.create_topic("t", partitions)
    for i in range(appends):
        c.produce("t", i % partitions, i)
        if i % 1000 == 999:
            c.replicate()
    c.replicate()
    return len(c.take_acks())


def test_cluster_appends_small(benchmark):
    assert benchmark.pedantic(_run, args=(100, 10_000), rounds=1, iterations=1) == 10_000


@pytest.mark.slow
def test_cluster_1000_partitions_100k_appends(benchmark):
    assert benchmark.pedantic(_run, args=(1000, 100_000), rounds=1, iterations=1) == 100_000


# -- coordinator failover (mock clock) -------------------------------------------------

FAILOVER_MEMBER_CONFIG = dict(assignors=("range",), session_timeout_ms=45_000, heartbeat_interval_ms=3_000,
                              retry_backoff_ms=100, enable_auto_commit=False,
                              fetch_committed_on_assignment=False)


def failover_to_stable_ms(members: int, seed: int, step_ms: int = 10) -> int:
    """Mock time from killing the coordinator's broker to the group being Stable again on the new one.

    Kafka's default consumer timings (45 s session, 3 s heartbeat); the kill
    lands at a seeded moment of the heartbeat cycle.
    """
    import random

    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.testing import InMemoryKafka, MockClock

    kafka = InMemoryKafka(3, clock=MockClock(0),
                          coordinator_config=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    try:
        kafka.create_topic("t", 2 * members)
        for i in range(members):
            kafka.member(f"m{i}", "g", ["t"], **FAILOVER_MEMBER_CONFIG)
        kafka.run_until(lambda: kafka.group_settled("g"), limit_ms=120_000, step_ms=step_ms)
        kafka.run(random.Random(seed).randrange(0, 3_000, step_ms), step_ms)
        kafka.kill_broker(kafka.coordinator_node("g"))
        return kafka.run_until(lambda: kafka.group_settled("g"), limit_ms=120_000, step_ms=step_ms)
    finally:
        kafka.close()


@pytest.mark.parametrize("members", [10, 100])
def test_coordinator_failover_time(members, benchmark, capsys):
    seeds = range(5) if members == 10 else range(3)
    times = benchmark.pedantic(lambda: [failover_to_stable_ms(members, s) for s in seeds],
                               rounds=1, iterations=1)
    # Detection rides on the next heartbeat (3 s interval), then discovery and a 100 ms load.
    assert all(0 < t <= 3_000 + 1_000 for t in times), times
    with capsys.disabled():
        print(f"\ncoordinator failover, {members} members: mock ms to Stable again: {sorted(times)}")
