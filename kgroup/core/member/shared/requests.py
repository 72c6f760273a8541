"""The member's request bookkeeping: tokens, queued and in-flight requests, retry backoffs.

Pure bookkeeping, no protocol decisions: ``member.py`` decides what to send
and how to react to an answer; this module only remembers what was queued,
what is waiting for an answer (and in which generation it was sent), and
when a FindCoordinator or JoinGroup may be retried.  What is outstanding is
read off the in-flight map (``in_flight(RequestKind.JOIN)``), so the member
keeps no token slot per request type that could drift from it.
"""
from __future__ import annotations

import enum
import itertools
from typing import Iterable, Iterator, Optional

import attrs

from kgroup.core.member.shared.events import Generation


class RequestKind(enum.Enum):
    """What a token was issued for; the value names it in error messages."""

    FIND = "find coordinator"
    HEARTBEAT = "heartbeat"
    JOIN = "join"
    SYNC = "sync"
    LEAVE = "leave"
    COMMIT = "commit"
    FETCH = "offset fetch"


@attrs.frozen
class Outbound:
    """A request to send: ``node_id`` None means any broker (FindCoordinator)."""

    token: int
    request: object
    node_id: Optional[int]


@attrs.define
class Queued:
    """A coordinator request made now, sent by a later ``outbound`` call."""

    token: int
    kind: RequestKind
    payload: object
    not_before_ms: int


@attrs.define
class Sent:
    """A request waiting for its answer, with the generation it was sent in."""

    kind: RequestKind
    payload: object
    generation: Generation


#: Requests whose retry waits are kept here (commits keep theirs in the CommitBook,
#: fetches in their queue entry).
_BACKED_OFF = (RequestKind.FIND, RequestKind.JOIN)


class RequestBook:
    """Tokens, the send queue, the requests in flight, and the FindCoordinator/JoinGroup backoffs."""

    def __init__(self, now_ms: int) -> None:
        # One counter for every request, commits included: CommitBook relies on a larger
        # token meaning a later request.
        self._tokens = itertools.count(1)
        self._queue: list[Queued] = []
        self._in_flight: dict[int, Sent] = {}
        self._not_before_ms = {kind: now_ms for kind in _BACKED_OFF}

    # -- tokens and sending ----------------------------------------------------

    def next_token(self) -> int:
        return next(self._tokens)

    def enqueue(self, kind: RequestKind, payload: object, not_before_ms: int,
                token: Optional[int] = None, first: bool = False) -> int:
        """Queue a request (``first``: ahead of everything queued); returns its token."""
        item = Queued(self.next_token() if token is None else token, kind, payload, not_before_ms)
        if first:
            self._queue.insert(0, item)
        else:
            self._queue.append(item)
        return item.token

    def send(self, kind: RequestKind, request: object, node_id: Optional[int], generation: Generation,
             token: Optional[int] = None, payload: object = None) -> Outbound:
        """Record ``request`` as in flight (a new token unless given) and return what to send."""
        token = self.next_token() if token is None else token
        self._in_flight[token] = Sent(kind, payload, generation)
        return Outbound(token, request, node_id)

    def take_due(self, now_ms: int, hold_leaves: bool) -> list[Queued]:
        """Remove and return the queued requests due now, in queue order.

        ``hold_leaves``: a LeaveGroup stays queued (a commit made before it is still waiting).
        """
        if not self._queue:
            return []  # the usual case, asked at every outbound
        due, remaining = [], []
        for item in self._queue:
            if now_ms < item.not_before_ms or (item.kind is RequestKind.LEAVE and hold_leaves):
                remaining.append(item)
            else:
                due.append(item)
        self._queue = remaining
        return due

    # -- answers -----------------------------------------------------------------

    def pop(self, token: int) -> Optional[Sent]:
        """The request ``token`` answered, or None if it was abandoned or never sent."""
        return self._in_flight.pop(token, None)

    def abandon_coordinator_requests(self) -> list[tuple[int, Sent]]:
        """Forget every request in flight to the coordinator (it moved); returns them."""
        abandoned = [(t, s) for t, s in self._in_flight.items() if s.kind is not RequestKind.FIND]
        for token, _ in abandoned:
            del self._in_flight[token]
        return abandoned

    def drop(self, kinds: Iterable[RequestKind]) -> None:
        """Forget queued and in-flight requests of ``kinds`` (their answers will be ignored)."""
        kinds = frozenset(kinds)
        self._queue = [q for q in self._queue if q.kind not in kinds]
        self._in_flight = {t: s for t, s in self._in_flight.items() if s.kind not in kinds}

    def clear(self) -> None:
        self._queue.clear()
        self._in_flight.clear()

    # -- observation -------------------------------------------------------------

    def in_flight(self, kind: RequestKind) -> bool:
        for sent in self._in_flight.values():
            if sent.kind is kind:
                return True
        return False

    def outstanding(self, *kinds: RequestKind) -> bool:
        """A request of ``kinds`` is queued or waiting for its answer."""
        return (any(q.kind in kinds for q in self._queue)
                or any(s.kind in kinds for s in self._in_flight.values()))

    def in_flight_tokens(self) -> frozenset:
        return frozenset(self._in_flight)

    def has_in_flight(self) -> bool:
        return bool(self._in_flight)

    def has_queued(self) -> bool:
        return bool(self._queue)

    def queued_not_before_ms(self) -> Iterator[int]:
        return (item.not_before_ms for item in self._queue)

    # -- retry backoff -------------------------------------------------------------

    def retry_at(self, kind: RequestKind, not_before_ms: int) -> None:
        """``kind`` (FIND or JOIN) may go out again from ``not_before_ms``."""
        self._not_before_ms[kind] = not_before_ms

    def not_before_ms(self, kind: RequestKind) -> int:
        return self._not_before_ms[kind]

    def may_retry(self, kind: RequestKind, now_ms: int) -> bool:
        return now_ms >= self._not_before_ms[kind]
