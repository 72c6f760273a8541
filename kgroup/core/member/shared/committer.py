"""What both members' committers share: pending commits, auto-commit positions and their timer.

Kafka keeps this in one place for both protocols too (``CommitRequestManager`` and
``ConsumerCoordinator`` share ``autoCommitIntervalMs``, the auto-commit timer and
``retryBackoffMs``).  The classic ``Committer`` adds generation checks and the
rejoin gate's pre-join commit; the KIP-848 ``ConsumerCommitter`` adds the member
epoch and its STALE_MEMBER_EPOCH retries.
"""
from __future__ import annotations

import abc
from typing import Callable, Mapping, Optional

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.shared.commits import CommitBook
from kgroup.core.member.shared.contract import MemberSettings
from kgroup.core.member.shared.events import CommitCompleted, Generation, MemberEvent
from kgroup.core.member.shared.offsets import normalize_offsets
from kgroup.core.member.shared.requests import RequestBook
from kgroup.errors import KGroupError
from kgroup.values import TopicPartition


class CommitterBase(abc.ABC):
    """Pending commits (in a CommitBook) and the positions auto-commit sends; subclasses send them."""

    def __init__(self, config: MemberSettings, requests: RequestBook,
                 emit: Callable[[MemberEvent], int], now_ms: int) -> None:
        self._config = config
        self._requests = requests
        self._emit = emit
        self._book = CommitBook()
        #: The next offsets to consume, as the application last reported them (see ``_positions``).
        self._normalized_positions: dict = {}
        #: Positions reported as plain ints, normalised only when a commit reads them (None: none).
        self._int_positions: Optional[dict] = None
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms

    def __bool__(self) -> bool:
        """Some commit has not completed yet."""
        return bool(self._book)

    def has_waiting(self) -> bool:
        return self._book.has_waiting()

    def get_timer(self) -> Optional[int]:
        return self._book.get_timer()

    # -- making commits ---------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, m.OffsetAndMetadata], deadline_ms: Optional[int],
               stamp: Generation, now_ms: int) -> int:
        """Queue a commit stamped with the generation (or membership) it is made in; returns its token."""
        token = self._requests.next_token()
        self._book.add(token, offsets, deadline_ms, stamp, now_ms)
        return token

    def record_positions(self, positions: Optional[Mapping]) -> None:
        if positions is None:
            return
        if all(type(tp) is TopicPartition and type(offset) is int for tp, offset in positions.items()):
            # The usual report (an application polls often, auto-commits seldom): plain ints need no
            # check, so building their OffsetAndMetadata waits until a commit reads them.
            self._int_positions = dict(positions)
        else:
            self._normalized_positions = normalize_offsets(positions)  # a bad value fails here
            self._int_positions = None

    @property
    def _positions(self) -> dict:
        if self._int_positions is not None:
            self._normalized_positions = normalize_offsets(self._int_positions)
            self._int_positions = None
        return self._normalized_positions

    def auto_commit(self, stamp: Generation, now_ms: int, deadline_ms: Optional[int] = None) -> Optional[int]:
        """Commit the recorded positions if auto-commit is on (and something was consumed)."""
        if not (self._config.enable_auto_commit and self._positions):
            return None
        return self.commit(self._positions, deadline_ms, stamp, now_ms)

    def auto_commit_on_interval(self, stamp: Generation, now_ms: int) -> None:
        """Auto-commit if the interval elapsed (the next interval starts then)."""
        if self._config.enable_auto_commit and now_ms >= self._next_auto_commit_ms and self._positions:
            self.reset_auto_commit_timer(now_ms)
            self.auto_commit(stamp, now_ms)

    def reset_auto_commit_timer(self, now_ms: int) -> None:
        """Kafka ``resetAutoCommitTimer``: the next interval starts now."""
        self._next_auto_commit_ms = now_ms + self._config.auto_commit_interval_ms

    # -- ending commits ---------------------------------------------------------------

    def _retry_commit(self, token: int, code: ErrorCode, now_ms: int) -> None:
        """Send a failed commit again after the backoff, but only before its deadline."""
        pending = self._book.get(token)
        if pending is None:
            return
        retry_at_ms = now_ms + self._config.retry_backoff_ms
        if pending.deadline_ms is not None and retry_at_ms < pending.deadline_ms:
            # Newer waiting commits take over the partitions they share with this retry.
            self._book.requeue(token, retry_at_ms)
        else:
            self.finish(token, self._failure(code))

    @abc.abstractmethod
    def _failure(self, code: ErrorCode) -> KGroupError:
        """What a commit that failed with ``code`` raises in the application (the protocol's words)."""
        ...

    def _finished(self, token: int) -> None:
        """A commit completed and its event is queued (hook: who waits on it hears of it)."""

    def finish(self, token: int, error: Optional[KGroupError]) -> None:
        """A commit and the commits riding on it completed (``error`` None: committed)."""
        for finished in self._book.finish(token):
            self._emit(CommitCompleted(finished.token, finished.requested, error))
            self._finished(finished.token)

    def fail_all(self, error: KGroupError) -> None:
        for token in self._book.tokens():
            self.finish(token, error)
