"""Time, in one place: the clocks, the timer contract and the one loop that moves mock time.

- A :class:`Clock` is anything called with no argument that answers the time in integer
  milliseconds: :func:`monotonic_ms` (the real clock: runners, heartbeat thread, in-process hub,
  wire server) or a :class:`MockClock` (tests and the simulator).  Every adapter takes one.
- A timed component (:class:`TimedComponent`) answers ``get_timer()``, the absolute deadline of
  the earliest thing it has to do (None: nothing), and ``handle_timer(now_ms)``, which does what is
  due at ``now_ms``: aioquic's ``get_timer()`` / ``handle_timer(now)``.  The sans-I/O core never
  reads a clock; whoever drives it calls ``handle_timer`` when ``get_timer`` says so.
- :func:`autojump` is the one loop that moves a :class:`MockClock`: do what is due now, then jump
  straight to the next deadline, as trio's ``MockClock`` with ``autojump_threshold=0`` does.  The
  test scheduler, ``KafkaServer.advance`` and the clean-leave loops all run on it.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Protocol

from kgroup.errors import ConfigError

__all__ = ["Clock", "MockClock", "TimedComponent", "autojump", "monotonic_ms", "run_timers_through",
           "wait_until_ms"]


class Clock(Protocol):
    """The time in integer milliseconds, read by calling it (``clock()``)."""

    def __call__(self) -> int: ...


class TimedComponent(Protocol):
    """Something with deadlines of its own (the timer convention of the module doc)."""

    def get_timer(self) -> Optional[int]: ...

    def handle_timer(self, now_ms: int) -> object: ...


def monotonic_ms() -> int:
    """The real clock: monotonic milliseconds (never goes backwards, unrelated to wall time)."""
    return time.monotonic_ns() // 1_000_000


def wait_until_ms(deadline_ms: Optional[int], now_ms: int, cap_ms: int) -> int:
    """How long a real-clock thread may sleep before ``deadline_ms`` (None: no deadline), at most
    ``cap_ms`` and at least 1 ms (a deadline already passed is served on the next round)."""
    if deadline_ms is None:
        return max(1, cap_ms)
    return max(1, min(cap_ms, deadline_ms - now_ms))


class MockClock:
    """Integer milliseconds that move only when a test says so (or :func:`autojump` does)."""

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


def autojump(clock: MockClock, end_ms: int, visit: Callable[[], object],
             next_instant_ms: Callable[[int], int], *, through_end: bool = False,
             done: Optional[Callable[[], bool]] = None) -> None:
    """Move ``clock`` to ``end_ms``, calling ``visit()`` at each instant something is due.

    ``visit`` does what is due at the clock's time (it may move the clock itself);
    ``next_instant_ms(end_ms)`` answers the next instant to visit, capped at ``end_ms`` and at least
    1 ms after the clock.  Instants from the clock's time up to, not including, ``end_ms`` are
    visited; ``through_end`` visits ``end_ms`` as well.  ``done()``, asked after each visit, stops
    the loop early (the clock stays at the instant visited last).
    """
    while clock() < end_ms:
        visit()
        if done is not None and done():
            return
        clock.advance_to(next_instant_ms(end_ms))
    if through_end:
        visit()


def run_timers_through(clock: MockClock, timed: TimedComponent, end_ms: int,
                       deliver: Callable[[object], object] = lambda result: None) -> None:
    """:func:`autojump` over one timed component: ``handle_timer`` at each of its deadlines up to and
    including ``end_ms``, each at its own time (one already passed at the clock's time); the clock
    ends at ``end_ms``.  ``deliver`` takes what each ``handle_timer`` returns."""
    def visit() -> None:
        deadline = timed.get_timer()
        if deadline is not None and deadline <= clock():
            deliver(timed.handle_timer(clock()))

    def next_instant_ms(limit_ms: int) -> int:
        deadline = timed.get_timer()
        best = limit_ms if deadline is None or deadline > limit_ms else deadline
        return max(clock() + 1, best)

    autojump(clock, end_ms, visit, next_instant_ms, through_end=True)
