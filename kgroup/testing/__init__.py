"""Helpers for testing code that uses kgroup: a mock clock, the assignor
conformance kit and (with the cluster) the pytest fixtures."""
from kgroup.testing.clock import MockClock

__all__ = ["MockClock"]
