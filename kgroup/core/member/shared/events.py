"""What the member tells the application (run as listener callbacks by the adapter).

Events are frozen values taken with ``GroupMember.take_events()``.  The
adapter runs them on the polling thread, in order; the member never assumes
they ran (a JoinGroup after a revocation waits for the next
``on_app_poll`` after the revocation was taken, see ``rejoin.py``).
"""
from __future__ import annotations

from typing import Mapping, Optional, Union

import attrs

from kgroup.core.messages import UNKNOWN_MEMBER_ID, OffsetAndMetadata
from kgroup.errors import KGroupError
from kgroup.values import NO_GENERATION, TopicPartition


def _frozen_tps(value) -> frozenset:
    return frozenset(value)


@attrs.frozen
class Generation:
    """One completed join: Kafka's (generation id, member id, protocol)."""

    generation_id: int
    member_id: str
    protocol_name: Optional[str]

    @property
    def is_valid(self) -> bool:
        return self.generation_id >= 0 and bool(self.member_id)


#: No generation, no member id: a member that has not joined (or has left), and what a
#: consumer without group management commits with.
NO_GENERATION_VALUE = Generation(NO_GENERATION, UNKNOWN_MEMBER_ID, None)


@attrs.frozen
class PartitionsRevoked:
    """Give these up cleanly (commit what you processed); the member still owns the generation."""

    partitions: frozenset = attrs.field(converter=_frozen_tps)


@attrs.frozen
class PartitionsLost:
    """The generation is gone: someone else may own these already; do not commit."""

    partitions: frozenset = attrs.field(converter=_frozen_tps)


@attrs.frozen
class PartitionsAssigned:
    """``partitions`` are new to this member; ``assignment`` is everything it now owns."""

    partitions: frozenset = attrs.field(converter=_frozen_tps)
    assignment: frozenset = attrs.field(converter=_frozen_tps)
    generation: Generation
    #: The assignment's user data from the leader's assignor (what Kafka's
    #: ConsumerPartitionAssignor.onAssignment receives along with the partitions).
    user_data: Optional[bytes] = None


@attrs.frozen
class CommitCompleted:
    """The commit ``token`` finished; ``error`` is None on success."""

    token: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    error: Optional[KGroupError] = None


@attrs.frozen
class CommittedFetched:
    """Committed offsets asked with ``fetch_committed`` (None: nothing committed)."""

    token: int
    offsets: Mapping[TopicPartition, Optional[OffsetAndMetadata]]
    error: Optional[KGroupError] = None


@attrs.frozen
class FatalError:
    """The member stopped for good (fenced static member, unrecoverable group error)."""

    error: KGroupError


MemberEvent = Union[PartitionsRevoked, PartitionsLost, PartitionsAssigned, CommitCompleted, CommittedFetched,
                    FatalError]


class EventQueue:
    """The member's events for the application, oldest first.

    Taking events only pops the queue (as reading a socket consumes its
    bytes): nothing else changes.  Each event gets a sequence number when
    appended, and how many were taken is what was appended minus what is
    still queued, so the member can tell on the application's next
    ``on_app_poll`` whether the application has been given an event; the
    rejoin gate advances there, never as a side effect of reading.
    """

    __slots__ = ("_events", "_appended")

    def __init__(self) -> None:
        self._events: list = []
        self._appended = 0

    def append(self, event: MemberEvent) -> int:
        """Queue ``event``; returns its sequence number (1, 2, ...)."""
        self._events.append(event)
        self._appended += 1
        return self._appended

    def take(self) -> list:
        events, self._events = self._events, []
        return events

    @property
    def delivered_count(self) -> int:
        """How many events were taken so far: every sequence number up to this one."""
        return self._appended - len(self._events)

    def __bool__(self) -> bool:
        return bool(self._events)
