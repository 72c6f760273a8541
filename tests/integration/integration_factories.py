"""Build stock or kgroup consumers with the integration tests' group timing."""
from __future__ import annotations

import kafka

from integration_harness import HEARTBEAT_INTERVAL_MS, MAX_POLL_INTERVAL_MS, SESSION_TIMEOUT_MS

_STOCK_ASSIGNORS = {
    "range": "kafka.coordinator.assignors.range:RangePartitionAssignor",
    "roundrobin": "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
    "sticky": "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
    "cooperative-sticky": "kafka.coordinator.assignors.cooperative_sticky:CooperativeStickyAssignor",
}


def stock_assignor(name: str):
    import importlib

    module, _, attr = _STOCK_ASSIGNORS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def consumer_class(kind: str):
    if kind == "stock":
        return kafka.KafkaConsumer
    from kgroup.io.kafka_python.consumer import KafkaConsumer

    return KafkaConsumer


def make_consumer(kind: str, bootstrap: str, group: str, strategy: str, **overrides):
    """A consumer of ``kind`` ("stock" or "kgroup"); both get kafka-python's
    assignor class for ``strategy``, as unchanged application code would."""
    config = dict(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
        request_timeout_ms=15_000,
        partition_assignment_strategy=[stock_assignor(strategy)],
    )
    config.update(overrides)
    return consumer_class(kind)(**config)
