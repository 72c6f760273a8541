"""Helpers for testing code that uses kgroup: a mock clock, the assignor
conformance kit and (with the cluster) the pytest fixtures."""
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

__all__ = [
    "AssignorProperties",
    "Balance",
    "ConformanceError",
    "ConformanceReport",
    "MockClock",
    "check_assignor",
    "check_balance",
    "check_convergence",
    "check_cooperative_safety",
    "check_stickiness",
    "check_topic_balance",
    "check_validity",
]
