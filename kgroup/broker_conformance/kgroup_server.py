"""kgroup's own broker started with the settings the recordings were made with."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def running_kgroup_server(**overrides: Any) -> Iterator[Any]:
    """A one-broker :class:`kgroup.server.KafkaServer` configured like the recording's Apache Kafka
    (see ``runner.SETTINGS``): initial rebalance delay 0, 100 ms minimum classic session, KIP-848
    session 10 s and heartbeat 500 ms, 5 offsets partitions, replication factor 1."""
    from kgroup.core.coordinator import GroupCoordinatorConfig
    from kgroup.server import KafkaServer

    options: dict = dict(
        brokers=1, offsets_partitions=5, default_partitions=1, default_replication_factor=1,
        coordinator=GroupCoordinatorConfig(
            group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100,
            consumer_group_session_timeout_ms=10_000, consumer_group_heartbeat_interval_ms=500))
    options.update(overrides)
    with KafkaServer(**options) as server:
        yield server
