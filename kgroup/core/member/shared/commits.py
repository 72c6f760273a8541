"""Offset commits in flight and waiting: ordered per partition, stamped with their generation.

Two guarantees the member's own retries must not break (the application may
commit at any time, and the member itself commits before a rebalance and on
the auto-commit interval):

- **Committed offsets never go backwards because of a retry.**  Per
  partition, commits are sent in the order they were made and a commit is
  not sent while an older commit of the same partition is in flight.  A
  newer commit absorbs the partitions of an older one that is still waiting
  (queued or waiting out its retry backoff): the older offsets are never
  sent again, and the older commit completes with the newer one's outcome.
  Kafka processes one connection's requests in order, so this also holds
  for commits answered by a coordinator that failed over.
- **A commit carries the generation in which it was made** (Kafka's
  ``ConsumerCoordinator`` stamps the generation when it sends; a retry sent
  after a rebalance would then claim a generation the offsets were not
  produced in).  The member refuses to send a commit whose generation is
  gone.

Pure bookkeeping: no protocol decisions (which errors to retry, which
generation is current) are made here; ``committer.py`` and ``member.py``
make them.
"""
from __future__ import annotations

from typing import Iterator, Mapping, Optional

import attrs

from kgroup.core.member.shared.events import Generation
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition


@attrs.define
class PendingCommit:
    """One commit the application (or the member) asked for, until it completes."""

    token: int
    #: What was asked (reported back in ``CommitCompleted``).
    requested: Mapping[TopicPartition, OffsetAndMetadata]
    #: What is still to send: partitions taken over by a newer commit leave this map.
    offsets: dict[TopicPartition, OffsetAndMetadata]
    #: Retriable failures are retried until this instant; None: fail on the first one.
    deadline_ms: Optional[int]
    #: The generation the offsets were produced in; the commit is only valid in it.
    generation: Generation
    not_before_ms: int
    in_flight: bool = False
    #: Older commits whose partitions this one took over: they complete with it.
    riders: list["PendingCommit"] = attrs.Factory(list)


def _later_deadline(a: Optional[int], b: Optional[int]) -> Optional[int]:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


class CommitBook:
    """The member's pending commits, in the order they were made."""

    def __init__(self) -> None:
        self._pending: dict[int, PendingCommit] = {}

    def __contains__(self, token: int) -> bool:
        return token in self._pending

    def __bool__(self) -> bool:
        return bool(self._pending)

    def get(self, token: int) -> Optional[PendingCommit]:
        return self._pending.get(token)

    def tokens(self) -> list[int]:
        return list(self._pending)

    def add(self, token: int, offsets: Mapping[TopicPartition, OffsetAndMetadata],
            deadline_ms: Optional[int], generation: Generation, now_ms: int) -> PendingCommit:
        commit = PendingCommit(token, dict(offsets), dict(offsets), deadline_ms, generation, now_ms)
        for older in list(self._waiting()):
            self._absorb(commit, older)
        self._pending[token] = commit
        return commit

    def requeue(self, token: int, not_before_ms: int) -> PendingCommit:
        """A sent commit failed retriably: wait again, minus what newer waiting commits took over."""
        commit = self._pending[token]
        commit.in_flight = False
        commit.not_before_ms = not_before_ms
        for newer in list(self._waiting()):
            # Tokens grow with every request the member makes: a larger one was made later.
            if newer.token > token:
                self._absorb(newer, commit)
                if token not in self._pending:
                    break
        return commit

    def due(self, now_ms: int) -> list[PendingCommit]:
        """Waiting commits that may be sent now (oldest first); the caller sends or finishes each."""
        if not self._pending:
            return []  # the usual case, asked at every outbound
        busy = self._in_flight_partitions()
        ready = []
        for commit in self._waiting():
            if commit.not_before_ms > now_ms or not busy.isdisjoint(commit.offsets):
                continue
            ready.append(commit)
            busy.update(commit.offsets)
        return ready

    def mark_sent(self, token: int) -> None:
        self._pending[token].in_flight = True

    def get_timer(self) -> Optional[int]:
        """When a waiting commit becomes due; blocked ones wait for a response, not a deadline."""
        if not self._pending:
            return None
        busy = self._in_flight_partitions()
        deadlines = [c.not_before_ms for c in self._waiting() if busy.isdisjoint(c.offsets)]
        return min(deadlines) if deadlines else None

    def has_waiting(self) -> bool:
        return bool(self._pending) and any(True for _ in self._waiting())

    def finish(self, token: int) -> list[PendingCommit]:
        """Remove a commit and the commits riding on it; returns them (the commit first)."""
        commit = self._pending.pop(token, None)
        if commit is None:
            return []
        return [commit, *commit.riders]

    # -- internals ---------------------------------------------------------------

    def _waiting(self) -> Iterator[PendingCommit]:
        return (c for c in self._pending.values() if not c.in_flight)

    def _in_flight_partitions(self) -> set:
        busy: set = set()
        for commit in self._pending.values():
            if commit.in_flight:
                busy.update(commit.offsets)
        return busy

    def _absorb(self, newer: PendingCommit, older: PendingCommit) -> None:
        """``newer`` takes over ``older``'s overlapping partitions (same generation only)."""
        if older.in_flight or older.generation != newer.generation:
            return  # a commit of a gone generation fails on its own when it is due
        overlap = newer.offsets.keys() & older.offsets.keys()
        if not overlap:
            return
        for tp in overlap:
            del older.offsets[tp]
        newer.deadline_ms = _later_deadline(newer.deadline_ms, older.deadline_ms)
        if not older.offsets:
            del self._pending[older.token]
            newer.riders.extend((older, *older.riders))
            older.riders = []
