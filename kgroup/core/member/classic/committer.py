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

from typing import Callable, Optional, Sequence

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.classic.rejoin import RejoinGate
from kgroup.core.member.shared.committer import CommitterBase
from kgroup.core.member.shared.events import NO_GENERATION_VALUE, CommittedFetched, Generation, MemberEvent
from kgroup.core.member.shared.offsets import (
    commit_error,
    commit_generation_error,
    commit_request,
    fetched_offsets,
)
from kgroup.core.member.shared.requests import Outbound, RequestBook, RequestKind, Sent
from kgroup.errors import KGroupError
from kgroup.values import TopicPartition


class Committer(CommitterBase):
    """The member's pending commits, the positions it auto-commits, and its offset fetches."""

    def __init__(self, config: MemberConfig, requests: RequestBook, emit: Callable[[MemberEvent], int],
                 rejoin: RejoinGate, now_ms: int) -> None:
        super().__init__(config, requests, emit, now_ms)
        self._config: MemberConfig = config
        self._rejoin = rejoin
        #: Set on close: the closing commits still go out in the generation they were made in.
        self._closing_generation: Optional[Generation] = None

    # -- making fetches ---------------------------------------------------------------

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
        if sent.kind is RequestKind.FETCH:
            self._requests.enqueue(RequestKind.FETCH, sent.payload, now_ms + self._config.retry_backoff_ms,
                                   token=token)
            return
        self._retry_commit(token, code, now_ms)

    def report(self, token: int, sent: Sent, response, error: Optional[KGroupError]) -> None:
        """A commit or fetch is over: its result event."""
        if sent.kind is RequestKind.COMMIT:
            self.finish(token, error)
        else:
            self._emit(CommittedFetched(token, fetched_offsets(response)[1], error))

    def _failure(self, code: ErrorCode) -> KGroupError:
        return commit_error(code)

    def _finished(self, token: int) -> None:
        self._rejoin.commit_finished(token)  # a finished pre-join commit opens the rejoin gate
