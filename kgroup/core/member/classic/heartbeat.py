"""Heartbeat timing as a pure object (Kafka's ``org.apache.kafka.clients.consumer.internals.Heartbeat``,
driven as ``AbstractCoordinator``'s heartbeat thread drives it).

Tracks four instants - last heartbeat sent, last response received, last
session reset, last application poll - and answers "when is the next
heartbeat due", "has the session expired without a response" and "has the
application stopped polling".  Deadlines are inclusive: at exactly the
deadline the answer flips, so a driver that sleeps until
``get_timer()`` always finds something to do.
"""
from __future__ import annotations

from kgroup.errors import ConfigError


class HeartbeatTimer:
    __slots__ = ("session_timeout_ms", "interval_ms", "max_poll_interval_ms", "retry_backoff_ms",
                 "last_sent_ms", "last_received_ms", "last_reset_ms", "last_poll_ms", "failed")

    def __init__(self, session_timeout_ms: int, interval_ms: int, max_poll_interval_ms: int,
                 retry_backoff_ms: int, now_ms: int) -> None:
        if interval_ms >= session_timeout_ms:
            raise ConfigError("heartbeat interval must be lower than the session timeout")
        self.session_timeout_ms = session_timeout_ms
        self.interval_ms = interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.last_sent_ms = now_ms
        self.last_received_ms = now_ms
        self.last_reset_ms = now_ms
        self.last_poll_ms = now_ms
        self.failed = False

    def poll(self, now_ms: int) -> None:
        self.last_poll_ms = now_ms

    def sent(self, now_ms: int) -> None:
        self.last_sent_ms = now_ms
        self.failed = False

    def received(self, now_ms: int) -> None:
        self.last_received_ms = now_ms

    def fail(self) -> None:
        self.failed = True

    def reset_session(self, now_ms: int) -> None:
        """A fresh session (coordinator found): expiry counts from now."""
        self.last_reset_ms = now_ms
        self.failed = False

    def reset_timeouts(self, now_ms: int) -> None:
        """Heartbeats (re)start after a join: session and poll timers both restart."""
        self.reset_session(now_ms)
        self.last_poll_ms = now_ms

    def next_heartbeat_ms(self) -> int:
        delay = self.retry_backoff_ms if self.failed else self.interval_ms
        return max(self.last_sent_ms, self.last_reset_ms) + delay

    def should_heartbeat(self, now_ms: int) -> bool:
        return now_ms >= self.next_heartbeat_ms()

    def session_deadline_ms(self) -> int:
        return max(self.last_reset_ms, self.last_received_ms) + self.session_timeout_ms

    def session_expired(self, now_ms: int) -> bool:
        return now_ms >= self.session_deadline_ms()

    def poll_deadline_ms(self) -> int:
        return self.last_poll_ms + self.max_poll_interval_ms

    def poll_expired(self, now_ms: int) -> bool:
        return now_ms >= self.poll_deadline_ms()
