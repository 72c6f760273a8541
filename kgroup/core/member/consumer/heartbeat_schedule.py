"""When the next ConsumerGroupHeartbeat is due, as a pure object.

Kafka's ``AbstractHeartbeatRequestManager.HeartbeatRequestState`` (a timer
over the heartbeat interval plus ``RequestState``'s exponential retry
backoff) and its poll timer:

- The interval is the coordinator's: it arrives in every successful
  response (``heartbeat_interval_ms``); before the first one it is 0, so
  the joining heartbeat goes out at once.  A changed interval restarts the
  timer from the response; sending restarts it from the send.
- A failed heartbeat makes the next one due at once, but not before the
  retry backoff: ``retry_backoff_ms`` doubled per consecutive failure up to
  ``retry_backoff_max_ms`` (Kafka adds jitter; kgroup does not, so a test
  on a mock clock knows the instant).  A success clears the backoff, and so
  does :meth:`skip_backoff` (a moved coordinator or a fencing: Kafka's
  ``heartbeatRequestState.reset()``).
- The poll timer expires ``max_poll_interval_ms`` after the application's
  last poll.

Deadlines are inclusive, like :class:`kgroup.core.member.classic.heartbeat.HeartbeatTimer`'s.
"""
from __future__ import annotations

from typing import Optional


class HeartbeatSchedule:
    __slots__ = ("retry_backoff_ms", "retry_backoff_max_ms", "max_poll_interval_ms", "interval_ms",
                 "_timer_start_ms", "_timer_ms", "_failures", "_failed_at_ms", "last_poll_ms")

    def __init__(self, retry_backoff_ms: int, retry_backoff_max_ms: int, max_poll_interval_ms: int,
                 now_ms: int) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        #: The coordinator's heartbeat interval (0 until its first answer).
        self.interval_ms = 0
        self._timer_start_ms = now_ms
        self._timer_ms = 0
        self._failures = 0
        self._failed_at_ms: Optional[int] = None
        self.last_poll_ms = now_ms

    # -- heartbeats --------------------------------------------------------------

    def sent(self, now_ms: int) -> None:
        self._timer_start_ms, self._timer_ms = now_ms, self.interval_ms

    def succeeded(self, now_ms: int, interval_ms: int) -> None:
        self._failures, self._failed_at_ms = 0, None
        if interval_ms > 0 and interval_ms != self.interval_ms:
            self.interval_ms = interval_ms
            self._timer_start_ms, self._timer_ms = now_ms, interval_ms

    def failed(self, now_ms: int) -> None:
        """Heartbeat again at once, after the backoff."""
        self._failures += 1
        self._failed_at_ms = now_ms
        self._timer_start_ms, self._timer_ms = now_ms, 0

    def skip_backoff(self, now_ms: int) -> None:
        """The next heartbeat may go out at once (coordinator moved, member fenced)."""
        self._failures, self._failed_at_ms = 0, None
        self._timer_start_ms, self._timer_ms = now_ms, 0

    def backoff_ms(self) -> int:
        if self._failures == 0:
            return 0
        return min(self.retry_backoff_max_ms, self.retry_backoff_ms * 2 ** (self._failures - 1))

    def backoff_until_ms(self) -> Optional[int]:
        return None if self._failed_at_ms is None else self._failed_at_ms + self.backoff_ms()

    def next_heartbeat_ms(self) -> int:
        """When the interval and the backoff both allow the next heartbeat."""
        due = self._timer_start_ms + self._timer_ms
        backoff_until = self.backoff_until_ms()
        return due if backoff_until is None else max(due, backoff_until)

    def backoff_passed(self, now_ms: int) -> bool:
        backoff_until = self.backoff_until_ms()
        return backoff_until is None or now_ms >= backoff_until

    def heartbeat_due(self, now_ms: int) -> bool:
        return now_ms >= self.next_heartbeat_ms()

    # -- the application's polls ----------------------------------------------------

    def poll(self, now_ms: int) -> None:
        self.last_poll_ms = now_ms

    def poll_deadline_ms(self) -> int:
        return self.last_poll_ms + self.max_poll_interval_ms

    def poll_expired(self, now_ms: int) -> bool:
        return now_ms >= self.poll_deadline_ms()
