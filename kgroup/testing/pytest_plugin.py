"""pytest plugin (registered under ``pytest11``): an in-memory Kafka cluster per test.

    def test_rebalance_survives_coordinator_failure(kgroup_cluster):
        kgroup_cluster.create_topic("orders", 6)
        consumers = [kgroup_cluster.consumer("billing", ["orders"]) for _ in range(3)]
        while not kgroup_cluster.group_settled("billing"):  # bound it with a deadline in a real test
            for consumer in consumers:
                consumer.poll(20)
        kgroup_cluster.kill_broker(kgroup_cluster.coordinator_node("billing"))

Options come from the ``kgroup_cluster`` marker, for example
``@pytest.mark.kgroup_cluster(brokers=1, offsets_partitions=3, mock_clock=True)``;
any other keyword goes to :class:`kgroup.testing.in_memory_kafka.InMemoryKafka`.
With ``mock_clock=True`` the cluster runs on a :class:`MockClock` and the test
drives pure members with ``member()`` / ``run()``; otherwise it runs on the
real clock and ``consumer()`` builds threaded consumers, closed at teardown.
"""
from __future__ import annotations

import pytest

from kgroup.testing.clock import MockClock
from kgroup.testing.in_memory_kafka import InMemoryKafka


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "kgroup_cluster(brokers=3, replication_factor=3, offsets_partitions=50, mock_clock=False, "
        "**options): configure the kgroup_cluster fixture",
    )


@pytest.fixture
def kgroup_cluster(request):
    """An :class:`InMemoryKafka` (brokers, ``__consumer_offsets``, group coordinators), closed after
    the test."""
    marker = request.node.get_closest_marker("kgroup_cluster")
    options = dict(marker.kwargs) if marker is not None else {}
    if options.pop("mock_clock", False):
        options["clock"] = MockClock(0)
    cluster = InMemoryKafka(**options)
    try:
        yield cluster
    finally:
        cluster.close()
