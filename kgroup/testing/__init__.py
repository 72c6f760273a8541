"""Helpers for testing code that uses kgroup: a mock clock and the scheduler
that drives it, a transition trace, the assignor conformance kit and the
:class:`InMemoryKafka` test harness (brokers, ``__consumer_offsets`` and group
coordinators in-process; with ``transactions=True`` transaction coordinators and a transactional
producer too) behind the ``kgroup_cluster`` pytest fixture."""
from kgroup.io.clock import MockClock
from kgroup.testing.conformance import (
    AssignorProperties,
    Balance,
    ConformanceError,
    ConformanceReport,
    check_assignor,
    check_balance,
    check_convergence,
    check_cooperative_safety,
    check_stickiness,
    check_topic_balance,
    check_validity,
)
from kgroup.testing.in_memory_kafka import InMemoryKafka
from kgroup.testing.in_memory_transactions import ConsumedRecord
from kgroup.testing.scheduler import Scheduler
from kgroup.testing.trace import Trace, TraceEntry
from kgroup.testing.transactional_producer import (
    ConsumerGroupMetadata, InMemoryTransactionalProducer, ProducerState, RecordMetadata,
)

__all__ = [
    "AssignorProperties",
    "Balance",
    "ConformanceError",
    "ConformanceReport",
    "ConsumedRecord",
    "ConsumerGroupMetadata",
    "InMemoryKafka",
    "InMemoryTransactionalProducer",
    "MockClock",
    "ProducerState",
    "RecordMetadata",
    "Scheduler",
    "Trace",
    "TraceEntry",
    "check_assignor",
    "check_balance",
    "check_convergence",
    "check_cooperative_safety",
    "check_stickiness",
    "check_topic_balance",
    "check_validity",
]
