"""The consumer's offset commits and fetches: Java ``ConsumerCoordinator``'s commit half.

Over a :class:`CommitBook` (the per-partition ordering and the generation
stamp), this decides what the member commits on its own (the positions
the application last reported: on the auto-commit interval, before a
rebalance, on close), whether a due commit may still go out (only in the
generation it was made in), whether a failed commit or fetch is retried
(a commit until its deadline), and reports each result as an event
(``CommitCompleted``, ``CommittedFetched``) to ``emit``; a finished
pre-join commit opens the rejoin gate.  ``member.py`` decides when
requests go out and which answers are retried (``reactions.py``).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.shared.commits import CommitBook
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.shared.events import (
    NO_GENERATION_VALUE,
    CommitCompleted,
    CommittedFetched,
    Generation,
    MemberEvent,
)
from kgroup.core.member.shared.offsets import (
    commit_error,
    commit_generation_error,
    commit_request,
    fetched_offsets,
    normalize_offsets,
)
from kgroup.core.member.classic.rejoin import RejoinGate
from kgroup.core.member.shared.requests import Outbound, RequestBook, RequestKind, Sent
from kgroup.errors import KGroupError
from kgroup.values import TopicPartition


class Committer:
    """The member's pending commits, the positions it auto-commits, and its offset fetches."""

    def __init__(self, config: MemberConfig, requests: RequestBook, emit: Callable[[MemberEvent], int],
                 rejoin: RejoinGate, now_ms: int) -> None:
        self._config = config
        self._requests = requests
        self._emit = emit
        self._rejoin = rejoin
        self._book = CommitBook()
        #: The next offsets to consume, as the application last reported them.
        self._positions: dict = {}
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms
        #: Set on close: the closing commits still go out in the generation they were made in.
        self._closing_generation: Optional[Generation] = None

    def __bool__(self) -> bool:
        """Some commit has not completed yet."""
        return bool(self._book)

    def has_waiting(self) -> bool:
        return self._book.has_waiting()

    def get_timer(self) -> Optional[int]:
        return self._book.get_timer()

    # -- making commits and fetches --------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, m.OffsetAndMetadata], deadline_ms: Optional[int],
               generation: Generation, now_ms: int) -> int:
        """Queue a commit stamped with the generation it is made in; returns its token."""
        token = self._requests.next_token()
        self._book.add(token, offsets, deadline_ms, generation, now_ms)
        return token

    def record_positions(self, positions: Optional[Mapping]) -> None:
        if positions is not None:
            self._positions = normalize_offsets(positions)

    def auto_commit(self, generation: Generation, now_ms: int,
                    deadline_ms: Optional[int] = None) -> Optional[int]:
        """Commit the recorded positions if auto-commit is on (and something was consumed)."""
        if not (self._config.enable_auto_commit and self._positions):
            return None
        return self.commit(self._positions, deadline_ms, generation, now_ms)

    def auto_commit_on_interval(self, generation: Generation, now_ms: int) -> None:
        """Auto-commit if the interval elapsed (the next interval starts then)."""
        if self._config.enable_auto_commit and now_ms >= self._next_auto_commit_ms and self._positions:
            self._next_auto_commit_ms = now_ms + self._config.auto_commit_interval_ms
            self.auto_commit(generation, now_ms)

    def fetch(self, partitions: Sequence[TopicPartition], now_ms: int) -> int:
        """Queue an OffsetFetch of the committed offsets; returns its token."""
        request = m.OffsetFetchRequest(self._config.group_id, tuple(partitions), require_stable=True)
        return self._requests.enqueue(RequestKind.FETCH, request, now_ms)

    def close(self, generation: Generation) -> None:
        """The member is closing in ``generation``: commits made in it may still go out."""
        self._closing_generation = generation

    # -- sending and answers ----------------------------------------------------------

    def send_due(self, now_ms: int, generation: Generation, coordinator_id: Optional[int],
                 group_managed: bool) -> list[Outbound]:
        """The commits due now, oldest first, each in the generation it was made in.

        ``generation`` is the member's: a commit made in another one fails instead.
        """
        out = []
        for commit in self._book.due(now_ms):
            gen, instance_id = commit.generation, self._config.group_instance_id
            if not gen.is_valid and not group_managed:
                # No group management (manual assignment): Java ConsumerCoordinator.sendOffsetCommitRequest
                # commits with Generation.NO_GENERATION and no instance id, which the coordinator
                # accepts for a group without members.
                gen, instance_id = NO_GENERATION_VALUE, None
            else:
                current = generation if self._closing_generation is None else self._closing_generation
                error = commit_generation_error(gen, current, generation.generation_id)
                if error is not None:
                    self.finish(commit.token, error)
                    continue
            request = commit_request(self._config.group_id, commit.offsets, gen, instance_id)
            self._book.mark_sent(commit.token)
            out.append(self._requests.send(RequestKind.COMMIT, request, coordinator_id, gen,
                                           token=commit.token))
        return out

    def retry(self, token: int, sent: Sent, code: ErrorCode, now_ms: int) -> None:
        """Send a failed commit or fetch again after the backoff (a commit: only before its deadline)."""
        retry_at_ms = now_ms + self._config.retry_backoff_ms
        if sent.kind is RequestKind.FETCH:
            self._requests.enqueue(RequestKind.FETCH, sent.payload, retry_at_ms, token=token)
            return
        pending = self._book.get(token)
        if pending is None:
            return
        if pending.deadline_ms is not None and retry_at_ms < pending.deadline_ms:
            # Newer waiting commits take over the partitions they share with this retry.
            self._book.requeue(token, retry_at_ms)
        else:
            self.finish(token, commit_error(code))

    def report(self, token: int, sent: Sent, response, error: Optional[KGroupError]) -> None:
        """A commit or fetch is over: its result event."""
        if sent.kind is RequestKind.COMMIT:
            self.finish(token, error)
        else:
            self._emit(CommittedFetched(token, fetched_offsets(response)[1], error))

    def finish(self, token: int, error: Optional[KGroupError]) -> None:
        """A commit and the commits riding on it completed (``error`` None: committed)."""
        for finished in self._book.finish(token):
            self._rejoin.commit_finished(finished.token)
            self._emit(CommitCompleted(finished.token, finished.requested, error))

    def fail_all(self, error: KGroupError) -> None:
        for token in self._book.tokens():
            self.finish(token, error)
