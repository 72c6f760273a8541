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
``transactions=True`` adds transaction coordinators and ``transactional_producer()``.
"""
from __future__ import annotations

import pytest

from kgroup.io.clock import MockClock
from kgroup.testing.in_memory_kafka import InMemoryKafka


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "kgroup_cluster(brokers=3, replication_factor=3, offsets_partitions=50, mock_clock=False, "
        "transactions=False, **options): configure the kgroup_cluster fixture",
    )
    config.addinivalue_line(
        "markers",
        "kafka_broker(brokers=1, mock_clock=False, **ServerConfig fields): "
        "configure the kafka_broker fixture",
    )
    config.addinivalue_line(
        "markers",
        "kafka: runs against Apache Kafka itself (the apache_kafka fixtures; Java 17 and Maven needed)",
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


@pytest.fixture
def kafka_broker(request):
    """A :class:`kgroup.server.KafkaServer` on free loopback ports, stopped after the test.

    Point any client at ``kafka_broker.bootstrap_servers``; inject faults through the same
    object.  Options come from the ``kafka_broker`` marker (:class:`kgroup.server.ServerConfig`
    fields, plus ``mock_clock=True`` for a :class:`MockClock` moved by ``advance()``).  Like
    Kafka's own integration tests, the fixture sets ``group.initial.rebalance.delay.ms`` to 0
    unless the marker gives a ``coordinator`` config.
    """
    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.server import KafkaServer

    marker = request.node.get_closest_marker("kafka_broker")
    options = dict(marker.kwargs) if marker is not None else {}
    clock = MockClock(0) if options.pop("mock_clock", False) else None
    options.setdefault("coordinator", GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0))
    with KafkaServer(clock=clock, **options) as server:
        yield server


# -- Apache Kafka itself (the reference tier) ------------------------------------------------------

#: Fixtures that start Apache Kafka; a test using one is marked ``kafka`` (select: -m kafka).
APACHE_KAFKA_FIXTURES = ("apache_kafka", "apache_kafka_single")
_started_apache_kafka: list = []


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if set(getattr(item, "fixturenames", ())) & set(APACHE_KAFKA_FIXTURES):
            item.add_marker(pytest.mark.kafka)


def _apache_kafka_cluster(nodes: int):
    from kgroup.testing.apache_kafka import ApacheKafkaCluster

    cluster = ApacheKafkaCluster(nodes=nodes)
    cluster.start()
    _started_apache_kafka.append(cluster)
    return cluster


@pytest.fixture(scope="session")
def apache_kafka():
    """Apache Kafka (:data:`kgroup.testing.apache_kafka.KAFKA_VERSION`), 3 KRaft nodes, shared by the
    session.  A test that kills or stops a node restarts it before it ends."""
    cluster = _apache_kafka_cluster(3)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def apache_kafka_single():
    """Apache Kafka, 1 KRaft node (leaders and coordinators deterministic), shared by the session."""
    cluster = _apache_kafka_cluster(1)
    try:
        yield cluster
    finally:
        cluster.close()


def pytest_terminal_summary(terminalreporter) -> None:
    for cluster in _started_apache_kafka:
        terminalreporter.write_line(
            f"Apache Kafka {cluster.version}: {len(cluster.node_ids)} node(s) answered Metadata "
            f"{cluster.start_time_s:.1f} s after their JVMs started ({cluster.total_start_time_s:.1f} s "
            f"with jar fetch and storage format)")
