"""A manual clock for driving the sans-I/O core in tests."""
from __future__ import annotations

from kgroup.errors import ConfigError


class MockClock:
    """Integer milliseconds that move only when a test says so."""

    __slots__ = ("now_ms",)

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms

    def advance(self, delta_ms: int) -> int:
        if delta_ms < 0:
            raise ConfigError(f"a clock cannot go backwards (advance by {delta_ms} ms)")
        self.now_ms += delta_ms
        return self.now_ms

    def advance_to(self, when_ms: int) -> int:
        return self.advance(max(0, when_ms - self.now_ms))

    def __call__(self) -> int:
        return self.now_ms
