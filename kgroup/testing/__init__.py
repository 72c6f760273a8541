"""Helpers for testing code that uses kgroup: a mock clock and the scheduler
that drives it, a transition trace, the assignor conformance kit and (with
the cluster) the pytest fixtures."""
from kgroup.testing.clock import MockClock
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
from kgroup.testing.scheduler import Scheduler
from kgroup.testing.trace import Trace, TraceEntry

__all__ = [
    "AssignorProperties",
    "Balance",
    "ConformanceError",
    "ConformanceReport",
    "MockClock",
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
