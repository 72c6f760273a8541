"""The member's link to its group coordinator (Java ``AbstractCoordinator``'s coordinator lookup
and heartbeat thread).

Which broker coordinates the group (FindCoordinator to any broker, again
after the backoff when the lookup fails), forgetting it when it moved or
stopped answering, and the heartbeats sent to it on the
:class:`HeartbeatTimer`'s schedule.  ``member.py`` decides whether the
member wants a coordinator, whether it heartbeats, and what an expired
session or poll interval does.
"""
from __future__ import annotations

from typing import Optional

from kgroup.core import messages as m
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.classic.heartbeat import HeartbeatTimer
from kgroup.core.member.classic.membership import heartbeat_request
from kgroup.core.member.shared.events import Generation
from kgroup.core.member.shared.requests import Outbound, RequestBook, RequestKind, Sent

_KIND = RequestKind


class CoordinatorLink:
    """The coordinator's node id (None: unknown) and the requests that find it and keep the session."""

    def __init__(self, config: MemberConfig, requests: RequestBook, timer: HeartbeatTimer) -> None:
        self._config = config
        self._requests = requests
        self._timer = timer
        self.node_id: Optional[int] = None

    @property
    def known(self) -> bool:
        return self.node_id is not None

    def find(self, now_ms: int, generation: Generation) -> list[Outbound]:
        """A FindCoordinator, unless one is in flight or its backoff has not passed."""
        if self._requests.in_flight(_KIND.FIND) or not self._requests.may_retry(_KIND.FIND, now_ms):
            return []
        request = m.FindCoordinatorRequest(self._config.group_id)
        return [self._requests.send(_KIND.FIND, request, None, generation)]

    def found(self, response: m.FindCoordinatorResponse, now_ms: int) -> None:
        """A FindCoordinator answered; a negative node id is no coordinator yet (look again)."""
        if response.node_id < 0:
            self.retry_find(now_ms)
            return
        self.node_id = response.node_id
        self._timer.reset_session(now_ms)

    def retry_find(self, now_ms: int) -> None:
        self._requests.retry_at(_KIND.FIND, now_ms + self._config.retry_backoff_ms)

    def lose(self, now_ms: int) -> list[tuple[int, Sent]]:
        """Forget the coordinator and look it up again; returns the requests in flight to it."""
        if self.node_id is None:
            return []
        self.node_id = None
        self._requests.retry_at(_KIND.FIND, now_ms)
        return self._requests.abandon_coordinator_requests()

    def heartbeat(self, now_ms: int, generation: Generation) -> list[Outbound]:
        """A Heartbeat if one is due and none is in flight."""
        if self._requests.in_flight(_KIND.HEARTBEAT) or not self._timer.should_heartbeat(now_ms):
            return []
        self._timer.sent(now_ms)
        request = heartbeat_request(self._config, generation)
        return [self._requests.send(_KIND.HEARTBEAT, request, self.node_id, generation)]

    def find_due_ms(self) -> Optional[int]:
        """When ``find`` may send (None: a FindCoordinator is in flight)."""
        return None if self._requests.in_flight(_KIND.FIND) else self._requests.not_before_ms(_KIND.FIND)

    def earliest_heartbeat_deadline_ms(self) -> int:
        """The earliest of :meth:`heartbeat_deadlines_ms`, without the list."""
        timer = self._timer
        best = timer.session_deadline_ms()
        poll_ms = timer.poll_deadline_ms()
        if poll_ms < best:
            best = poll_ms
        if not self._requests.in_flight(_KIND.HEARTBEAT):
            heartbeat_ms = timer.next_heartbeat_ms()
            if heartbeat_ms < best:
                best = heartbeat_ms
        return best

    def heartbeat_deadlines_ms(self) -> list[int]:
        """When ``heartbeat`` may send, and when the session and the poll interval expire."""
        due = [] if self._requests.in_flight(_KIND.HEARTBEAT) else [self._timer.next_heartbeat_ms()]
        return due + [self._timer.session_deadline_ms(), self._timer.poll_deadline_ms()]
