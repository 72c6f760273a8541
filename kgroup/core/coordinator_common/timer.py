"""Deadlines scheduled together with the operation they run (Kafka's CoordinatorTimer).

Kafka's group coordinator schedules every timer as ``timer.schedule(key, delay, unit, retry,
operation)``: whoever arms a deadline says what happens when it passes, so firing needs no
dispatch on the key.  Keys name what the timer is for, so scheduling a key again replaces both
its deadline and its operation, and cancelling the key drops both.
"""
from __future__ import annotations

from typing import Callable, Hashable, Optional

from kgroup.core.timers import KeyedTimers

#: What a timer runs when its deadline passes, called with the ``now_ms`` it fires at.
TimerOperation = Callable[[int], None]


class CoordinatorTimer:
    __slots__ = ("_deadlines", "_operations")

    def __init__(self) -> None:
        self._deadlines = KeyedTimers()
        self._operations: dict[Hashable, TimerOperation] = {}

    def schedule(self, key: Hashable, deadline_ms: int, operation: TimerOperation) -> None:
        """Run ``operation`` at ``deadline_ms`` unless ``key`` is cancelled or scheduled again first."""
        self._deadlines.schedule(key, deadline_ms)
        self._operations[key] = operation

    def reschedule(self, key: Hashable, deadline_ms: int) -> bool:
        """Move the deadline of a scheduled ``key``, keeping its operation (the heartbeat path: no new
        operation per heartbeat); False, and nothing changes, when ``key`` is not scheduled."""
        if key not in self._operations:
            return False
        self._deadlines.schedule(key, deadline_ms)
        return True

    def cancel(self, key: Hashable) -> None:
        self._deadlines.cancel(key)
        self._operations.pop(key, None)

    def clear(self) -> None:
        """Cancel everything (a new heap, as a new timer would have: ties break the same way)."""
        self._deadlines = KeyedTimers()
        self._operations.clear()

    def deadline_of(self, key: Hashable) -> Optional[int]:
        return self._deadlines.deadline_of(key)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._deadlines

    def get_timer(self) -> Optional[int]:
        """The earliest deadline, None when nothing is scheduled."""
        return self._deadlines.next_deadline_ms()

    def handle_timer(self, now_ms: int) -> None:
        """Run the operation of every deadline ``<= now_ms``, earliest first, including deadlines
        those operations schedule at or before ``now_ms``."""
        deadlines = self._deadlines
        operations = self._operations
        while True:
            due = deadlines.pop_due(now_ms)
            if not due:
                return
            # Taken now: an operation that cancels a later key of this batch does not stop it.
            batch = [(key, operations.pop(key)) for key in due]
            for key, operation in batch:
                if key in deadlines:
                    continue  # re-armed by an earlier operation of this batch: no longer due
                operation(now_ms)
