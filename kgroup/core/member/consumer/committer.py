"""Offset commits and fetches of a KIP-848 member (Kafka ``CommitRequestManager``).

What differs from the classic member's ``committer.py``:

- **The epoch is read when the commit is sent.**  Kafka's
  ``OffsetCommitRequestState.toUnsentRequest`` puts the member epoch known
  *at send time* into OffsetCommit v9's ``GenerationIdOrMemberEpoch``: the
  epoch moves on with every reconciliation, and a commit queued a moment
  earlier is still the member's.  What kgroup keeps from its classic
  guarantee is the *membership*: a commit is stamped with the membership
  it was made in (joined once, never fenced or left since:
  :func:`membership_stamp`), and one whose membership is gone fails
  with CommitFailedError instead of going out under a later membership.
- **STALE_MEMBER_EPOCH is retried with the newest epoch** while the
  member is still in the same membership, the commit's deadline allows,
  and the member still owns every partition of the commit.  Kafka retries
  the auto-commit before a revocation that way
  (``autoCommitSyncBeforeRevocationWithRetries`` /
  ``isStaleEpochErrorAndValidEpochAvailable``) and an offset fetch
  (``testSyncOffsetFetchFailsWithStaleEpochAndRetriesWithNewEpoch``), but
  fails ``commitSync`` at once
  (``testCommitSyncFailsWithCommitFailedExceptionOnStaleMemberEpoch``).
  kgroup retries that one too when it is safe: the epoch moved with the
  member's own reconciliation, and no other member can have committed a
  partition this one still owns.  A commit that names a partition the
  member gave up fails with CommitFailedError (a retry could move the
  new owner's offset back).
- A commit never changes the membership: UNKNOWN_MEMBER_ID or a fenced
  epoch only fail the commit (the heartbeat finds out and fences the member).
- OffsetFetch v9 carries the member id and epoch.

Per-partition ordering and the absorption of older waiting commits are the
classic :class:`~kgroup.core.member.shared.commits.CommitBook`'s.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import attrs

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.consumer.config import ConsumerProtocolConfig
from kgroup.core.member.shared.committer import CommitterBase
from kgroup.core.member.shared.events import NO_GENERATION_VALUE, CommittedFetched, Generation, MemberEvent
from kgroup.core.member.shared.offsets import (
    RETRIABLE,
    commit_error_code,
    commit_request,
    fetched_offsets,
    other_commit_error,
)
from kgroup.core.member.shared.requests import Outbound, RequestBook, RequestKind, Sent
from kgroup.errors import CommitFailedError, KGroupError
from kgroup.values import TopicPartition

#: Members of the consumer protocol commit with OffsetCommit v9+ (the coordinator checks it).
OFFSET_COMMIT_VERSION = 9
#: The member is not (or no longer) the one the coordinator knows.
MEMBERSHIP_GONE = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION,
                             ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.STALE_MEMBER_EPOCH})


def membership_stamp(incarnation: int, member_id: str, member_epoch: int) -> Generation:
    """What a commit is stamped with: the membership (not the epoch) it was made in.

    ``incarnation`` counts the member's joins; a member without a positive
    epoch is not in the group (the value then never matches a live one).
    """
    if member_epoch <= 0 or not member_id:
        return NO_GENERATION_VALUE
    return Generation(incarnation, member_id, "consumer")


def commit_failure(code: ErrorCode) -> KGroupError:
    if code is ErrorCode.STALE_MEMBER_EPOCH:
        return CommitFailedError(
            "commit failed (STALE_MEMBER_EPOCH): the member epoch it carried is no longer the member's "
            "and it could not be retried with a newer one (the member left the group or the deadline passed)",
            code)
    if code in MEMBERSHIP_GONE:
        return CommitFailedError(
            f"commit failed ({code.name}): the coordinator does not know this member in this epoch; "
            "its partitions may be owned by another member", code)
    return other_commit_error(code)


class ConsumerCommitter(CommitterBase):
    """Pending commits (in a CommitBook), auto-commit positions, and offset fetches."""

    def __init__(self, config: ConsumerProtocolConfig, requests: RequestBook,
                 emit: Callable[[MemberEvent], int], now_ms: int) -> None:
        super().__init__(config, requests, emit, now_ms)
        self._config: ConsumerProtocolConfig = config
        #: Called with a commit's token when it completes (the reconciliation waits on one).
        self.on_finished: Callable[[int], None] = lambda token: None
        #: Commits retried on STALE_MEMBER_EPOCH (the auto-commit before a revocation).
        self._retry_stale_epoch: set[int] = set()

    def stamp_of(self, token: int) -> Generation:
        """The membership the commit ``token`` was made in (NO_GENERATION_VALUE: none, or finished)."""
        pending = self._book.get(token)
        return NO_GENERATION_VALUE if pending is None else pending.generation

    # -- making commits and fetches ----------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, m.OffsetAndMetadata], deadline_ms: Optional[int],
               stamp: Generation, now_ms: int, retry_stale_epoch: bool = False) -> int:
        token = super().commit(offsets, deadline_ms, stamp, now_ms)
        if retry_stale_epoch:
            self._retry_stale_epoch.add(token)
        return token

    def auto_commit(self, stamp: Generation, now_ms: int, deadline_ms: Optional[int] = None,
                    retry_stale_epoch: bool = False) -> Optional[int]:
        token = super().auto_commit(stamp, now_ms, deadline_ms)
        if token is not None and retry_stale_epoch:
            self._retry_stale_epoch.add(token)
        return token

    def fetch(self, partitions: Sequence[TopicPartition], member_id: Optional[str], member_epoch: int,
              now_ms: int) -> int:
        request = m.OffsetFetchRequest(self._config.group_id, tuple(partitions), require_stable=True,
                                       member_id=member_id, member_epoch=member_epoch)
        return self._requests.enqueue(RequestKind.FETCH, request, now_ms)

    # -- sending and answers -------------------------------------------------------------

    def send_due(self, now_ms: int, current: Generation, member_epoch: int, coordinator_id: Optional[int],
                 group_managed: bool) -> list[Outbound]:
        """Due commits, each with the member epoch of now if its membership is still ``current``."""
        out = []
        for commit in self._book.due(now_ms):
            if not group_managed and not commit.generation.is_valid:
                # Manual assignment: Kafka commits with no member id and epoch -1, which the
                # coordinator accepts for a group without members.
                wire_generation, instance_id = NO_GENERATION_VALUE, None
            elif not commit.generation.is_valid or commit.generation != current:
                self.finish(commit.token, CommitFailedError(
                    "commit failed: the member left the group or was fenced since the commit was made; "
                    "its partitions may be owned by another member", ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            else:
                wire_generation = Generation(member_epoch, current.member_id, None)
                instance_id = self._config.group_instance_id
            # OffsetCommit v9+: the member epoch goes in GenerationIdOrMemberEpoch.
            request = commit_request(self._config.group_id, commit.offsets, wire_generation, instance_id)
            request = attrs.evolve(request, api_version=OFFSET_COMMIT_VERSION)
            self._book.mark_sent(commit.token)
            out.append(self._requests.send(RequestKind.COMMIT, request, coordinator_id, wire_generation,
                                           token=commit.token))
        return out

    def on_commit_answer(self, token: int, response: m.OffsetCommitResponse, now_ms: int,
                         still_member: bool, owned: frozenset) -> ErrorCode:
        """Finish or retry a commit; returns its error code (the member reacts to a moved coordinator).

        ``still_member``: the membership the commit was made in is the member's; ``owned``: what it owns.
        """
        code = commit_error_code(response)
        if code is ErrorCode.NONE:
            self.finish(token, None)
        elif code in RETRIABLE or (code is ErrorCode.STALE_MEMBER_EPOCH and still_member
                                   and self._still_owned(token, owned)):
            self._retry_commit(token, code, now_ms)
        else:
            self.finish(token, commit_failure(code))
        return code

    def on_fetch_answer(self, token: int, sent: Sent, response: m.OffsetFetchResponse, now_ms: int,
                        still_member: bool) -> ErrorCode:
        """Report a fetch, or retry it (retriable; STALE_MEMBER_EPOCH while still in the group)."""
        code, offsets = fetched_offsets(response)
        if code in RETRIABLE or (code is ErrorCode.STALE_MEMBER_EPOCH and still_member):
            self._requests.enqueue(RequestKind.FETCH, sent.payload, now_ms + self._config.retry_backoff_ms,
                                   token=token)
        else:
            error = None if code is ErrorCode.NONE else commit_failure(code)
            self._emit(CommittedFetched(token, offsets if error is None else {}, error))
        return code

    def abandoned(self, token: int, sent: Sent, now_ms: int) -> None:
        """A commit or fetch that will get no answer (transport error, coordinator moved): retry it."""
        if sent.kind is RequestKind.FETCH:
            self._requests.enqueue(RequestKind.FETCH, sent.payload, now_ms + self._config.retry_backoff_ms,
                                   token=token)
        elif sent.kind is RequestKind.COMMIT:
            self._retry_commit(token, ErrorCode.REQUEST_TIMED_OUT, now_ms)

    def _still_owned(self, token: int, owned: frozenset) -> bool:
        pending = self._book.get(token)
        if pending is None:
            return False
        # The pre-revocation auto-commit runs while its partitions are still the member's.
        return token in self._retry_stale_epoch or pending.offsets.keys() <= owned

    def _failure(self, code: ErrorCode) -> KGroupError:
        return commit_failure(code)

    def _finished(self, token: int) -> None:
        self._retry_stale_epoch.discard(token)
        self.on_finished(token)
