"""What both members keep and answer alike: state machine, request book, events, subscription.

:class:`MemberBase` is the part of :class:`~kgroup.core.member.shared.contract.MemberContract`
whose logic is the same in both protocols; the classic ``MemberView`` and the KIP-848
``ConsumerMemberView`` add their own state (generation and rejoin gate; member epoch and
reconciliation) and the protocol classes (``GroupMember``, ``ConsumerProtocolMember``)
drive it.  Kafka shares the same ground in ``AbstractMembershipManager`` and
``AbstractCoordinator``: subscription, state and the closed/fatal checks.
"""
from __future__ import annotations

import abc
import enum
from typing import Generic, Optional, Sequence, TypeVar

from kgroup.core.fsm import StateMachine
from kgroup.core.member.shared.committer import CommitterBase
from kgroup.core.member.shared.contract import MemberSettings
from kgroup.core.member.shared.events import EventQueue
from kgroup.core.member.shared.requests import RequestBook, RequestKind, Sent
from kgroup.errors import KGroupError, MemberClosedError

StateT = TypeVar("StateT", bound=enum.Enum)


class MemberBase(abc.ABC, Generic[StateT]):
    """A member's shared state, read-only API and protocol steps; subclasses add their protocol's."""

    _commits: CommitterBase

    def __init__(self, config: MemberSettings, fsm: StateMachine[StateT], fatal_state: StateT,
                 now_ms: int) -> None:
        self.config = config
        self._fsm = fsm
        self._fatal_state = fatal_state
        self._requests = RequestBook(now_ms)
        self._events = EventQueue()
        self._subscription: frozenset = frozenset()
        #: A pattern subscription (``subscribe_pattern``), None with topic names.
        self._subscription_pattern: Optional[str] = None
        self._closing = False
        self.last_error: Optional[KGroupError] = None

    # -- what an adapter reads ------------------------------------------------------

    @property
    def state(self) -> StateT:
        return self._fsm.state

    @property
    def subscription(self) -> frozenset:
        return self._subscription

    @property
    def subscription_pattern(self) -> Optional[str]:
        return self._subscription_pattern

    @property
    def failed(self) -> bool:
        return self._fsm.state is self._fatal_state

    @property
    def closed(self) -> bool:
        """True once close() finished its commits and its leave (or the member is fatal)."""
        if self.failed:
            return True
        return (self._closing and self._out_of_group() and not self._requests.has_queued()
                and not self._requests.has_in_flight() and not self._commits)

    def metadata_topics(self) -> frozenset:
        """Topics whose partition counts the member needs."""
        return self._subscription

    def has_in_flight(self) -> bool:
        return self._requests.has_in_flight()

    def in_flight_tokens(self) -> frozenset:
        """Tokens the member still expects an answer for (others may be forgotten)."""
        return self._requests.in_flight_tokens()

    def has_events(self) -> bool:
        return bool(self._events)

    def take_events(self) -> list:
        """Events since the last call, oldest first; the adapter runs them as callbacks.

        A pure read of the event queue: what waits on the application's callbacks
        (the classic rejoin gate, a KIP-848 reconciliation) notices that the events
        were taken on the next ``on_app_poll`` (``EventQueue``).
        """
        return self._events.take()

    # -- the application's subscription -----------------------------------------------

    def subscribe(self, topics: Sequence[str], now_ms: int) -> None:
        """Subscribe to ``topics`` (none: unsubscribe); the protocol hears of a change.  Topic names
        replace a pattern subscription."""
        self._check_open()
        if self._subscription_pattern is not None and topics:
            self._subscription_pattern = None
            self._subscription = frozenset()  # so the names read as a change
        self._subscribe_topics(topics, now_ms)

    def _subscribe_topics(self, topics: Sequence[str], now_ms: int) -> None:
        wanted = frozenset(topics)
        if not wanted:
            self.unsubscribe(now_ms)
            return
        if wanted != self._subscription:
            self._subscription = wanted
            self._subscription_changed()

    @abc.abstractmethod
    def unsubscribe(self, now_ms: int) -> None:
        ...

    @abc.abstractmethod
    def subscribe_pattern(self, pattern: str, now_ms: int) -> None:
        ...

    # -- the protocol's side ------------------------------------------------------------

    def on_transport_error(self, token: int, now_ms: int) -> None:
        """No answer will come for ``token``: a lookup is retried after the backoff; any other
        request suspects the coordinator (Kafka ``handleCoordinatorDisconnect``)."""
        sent = self._requests.pop(token)
        if sent is None or self.failed:
            return
        if sent.kind is RequestKind.FIND:
            self._requests.retry_at(RequestKind.FIND, now_ms + self.config.retry_backoff_ms)
            return
        self._abandon(token, sent, now_ms)
        self._lose_coordinator(now_ms)

    @abc.abstractmethod
    def _abandon(self, token: int, sent: Sent, now_ms: int) -> None:
        """A request that will get no answer: the protocol redoes or reports what it carried."""
        ...

    @abc.abstractmethod
    def _lose_coordinator(self, now_ms: int) -> None:
        """Kafka ``markCoordinatorUnknown``: forget it, look it up again, redo what was in flight."""
        ...

    @abc.abstractmethod
    def _subscription_changed(self) -> None:
        """The protocol's reaction to a new subscription (a rejoin, or the next heartbeat's field)."""
        ...

    def _out_of_group(self) -> bool:
        """A closing member is done with its group (its leave needs no more than the requests it queued)."""
        return True

    def _check_open(self) -> None:
        if self._closing:
            raise MemberClosedError("the group member is closed")
        if self._fsm.state is self._fatal_state:
            raise MemberClosedError(f"the group member failed: {self.last_error}")
