"""CPU cost of a 3-broker cluster taking appends (one fetch round per 1,000 appends)."""
import pytest

from kgroup.core.cluster import Cluster, ClusterConfig


def _run(partitions: int, appends: int) -> int:
    c = Cluster(ClusterConfig())
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
