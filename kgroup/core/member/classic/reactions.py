"""How the member reacts to each error code, one table per request kind.

Each table maps an :class:`ErrorCode` to a :class:`Reaction`: a set of
steps the member runs in the fixed order of :data:`STEP_ORDER` (so
"mark the coordinator unknown, then retry" and "report the commit's
failure, then go fatal" read the same in every table).  Codes a table does
not list get its default.  Reactions Kafka shares between its response
handlers are shared here: a gone generation (Java
``AbstractCoordinator.resetGenerationOnResponseError`` + ``requestRejoin``),
a moved coordinator (``markCoordinatorUnknown``) and a fenced static member
(KIP-345: fatal).  A success is a row too (``ErrorCode.NONE``), except
for FindCoordinator, JoinGroup and SyncGroup, whose successes have their
own handlers in ``member.py``.
"""
from __future__ import annotations

import enum
from typing import Dict, Mapping, Optional, Tuple

from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.shared.offsets import (
    COORDINATOR_MOVED,
    GENERATION_GONE,
    RETRIABLE,
    commit_error,
    commit_error_code,
    fetched_offsets,
)
from kgroup.core.member.shared.requests import RequestKind
from kgroup.errors import CommitFailedError, FencedInstanceIdError, GroupMemberError, KGroupError


class Reaction(enum.Flag):
    NONE = 0
    #: The coordinator answered a heartbeat: the session lives.
    SESSION_ALIVE = enum.auto()
    #: Heartbeat again after the retry backoff rather than the interval.
    HEARTBEAT_FAILED = enum.auto()
    #: Keep the error in ``last_error`` and carry on.
    RECORD_ERROR = enum.auto()
    MARK_COORDINATOR_UNKNOWN = enum.auto()
    #: KIP-394: take the member id the coordinator handed out.
    ADOPT_MEMBER_ID = enum.auto()
    #: Drop the generation; UNKNOWN_MEMBER_ID also drops the member id.
    RESET_GENERATION = enum.auto()
    REJOIN = enum.auto()
    #: Send the request again at once (JoinGroup only).
    RETRY_NOW = enum.auto()
    #: Send it again after ``retry_backoff_ms`` (a commit: until its deadline; a sync: by rejoining).
    RETRY = enum.auto()
    #: Finish the request with its result event (CommitCompleted, CommittedFetched).
    REPORT = enum.auto()
    #: The member cannot go on: FatalError.
    FAIL = enum.auto()
    #: Modifier: the steps that act on the generation (RESET_GENERATION, REJOIN, FAIL) run only
    #: if the request was sent in the current generation (Java's ``generationUnchanged()``).
    IF_GENERATION_CURRENT = enum.auto()


_R = Reaction
GENERATION_STEPS = _R.RESET_GENERATION | _R.REJOIN | _R.FAIL

#: The order steps run in, whatever table they come from.
STEP_ORDER = (_R.SESSION_ALIVE, _R.HEARTBEAT_FAILED, _R.RECORD_ERROR, _R.MARK_COORDINATOR_UNKNOWN,
              _R.ADOPT_MEMBER_ID, _R.RESET_GENERATION, _R.REJOIN, _R.RETRY_NOW, _R.RETRY,
              _R.REPORT, _R.FAIL)

#: A gone generation: rejoin with a fresh one (shared by heartbeat, join, sync and commit).
ON_GENERATION_GONE = _R.RESET_GENERATION | _R.REJOIN
#: KIP-345: another member took this group_instance_id; shared by every coordinator request.
ON_FENCED = _R.FAIL


def _table(*rows: tuple[frozenset, Reaction]) -> dict[ErrorCode, Reaction]:
    table: dict[ErrorCode, Reaction] = {}
    for codes, reaction in rows:
        for code in codes:
            table[code] = reaction
    return table


def _one(code: ErrorCode) -> frozenset:
    return frozenset({code})


_FENCED = _one(ErrorCode.FENCED_INSTANCE_ID)
_REBALANCING = _one(ErrorCode.REBALANCE_IN_PROGRESS)

#: Java AbstractCoordinator.FindCoordinatorResponseHandler: an authorization failure is final.
FIND = _table((_one(ErrorCode.GROUP_AUTHORIZATION_FAILED), _R.FAIL))

#: Java AbstractCoordinator.HeartbeatResponseHandler.  A rebalance keeps the session alive (the
#: member heartbeats through the rebalance); answers to an older generation's heartbeat only
#: affect the heartbeat timing.
HEARTBEAT = _table(
    (_one(ErrorCode.NONE), _R.SESSION_ALIVE),
    (_REBALANCING, _R.SESSION_ALIVE | _R.REJOIN | _R.IF_GENERATION_CURRENT),
    (GENERATION_GONE, ON_GENERATION_GONE | _R.IF_GENERATION_CURRENT),
    (_FENCED, ON_FENCED | _R.IF_GENERATION_CURRENT),
    (COORDINATOR_MOVED, _R.HEARTBEAT_FAILED | _R.MARK_COORDINATOR_UNKNOWN),
)
HEARTBEAT_DEFAULT = _R.HEARTBEAT_FAILED | _R.RECORD_ERROR

#: Java AbstractCoordinator.JoinGroupResponseHandler.  ILLEGAL_GENERATION keeps the member id
#: (saves a MEMBER_ID_REQUIRED round trip) and rejoins at once, as MEMBER_ID_REQUIRED does.
JOIN = _table(
    (_one(ErrorCode.MEMBER_ID_REQUIRED), _R.ADOPT_MEMBER_ID | _R.RETRY_NOW),
    (GENERATION_GONE, ON_GENERATION_GONE | _R.RETRY_NOW),
    (COORDINATOR_MOVED, _R.MARK_COORDINATOR_UNKNOWN | _R.RETRY),
    (frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS,
                ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR}), _R.RETRY),
    (_FENCED, ON_FENCED),
)
JOIN_DEFAULT = _R.FAIL

#: Java AbstractCoordinator.SyncGroupResponseHandler: every retriable failure rejoins; a
#: REBALANCE_IN_PROGRESS keeps the generation (the member rejoins in it).
SYNC = _table(
    (_REBALANCING, _R.REJOIN),
    (GENERATION_GONE, ON_GENERATION_GONE),
    (COORDINATOR_MOVED, _R.MARK_COORDINATOR_UNKNOWN | _R.REJOIN),
    (frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT}), _R.REJOIN | _R.RETRY),
    (_FENCED, ON_FENCED),
)
SYNC_DEFAULT = _R.FAIL

#: Java ConsumerCoordinator.OffsetCommitResponseHandler.  A gone generation resets it only if it
#: is still the one the commit was made in; the commit fails either way (CommitFailedError).
COMMIT = _table(
    (_one(ErrorCode.NONE), _R.REPORT),
    (COORDINATOR_MOVED, _R.MARK_COORDINATOR_UNKNOWN | _R.RETRY),
    (RETRIABLE - COORDINATOR_MOVED, _R.RETRY),
    (GENERATION_GONE, ON_GENERATION_GONE | _R.REPORT | _R.IF_GENERATION_CURRENT),
    (_REBALANCING, _R.REJOIN | _R.REPORT),
    # Java fails only if the fenced commit was sent in the current generation; an older one's
    # fencing is a CommitFailedException (the member may already be in a newer generation).
    (_FENCED, _R.REPORT | ON_FENCED | _R.IF_GENERATION_CURRENT),
)
COMMIT_DEFAULT = _R.REPORT

#: Java ConsumerCoordinator.OffsetFetchResponseHandler; anything else (success too) is reported.
FETCH = _table(
    (COORDINATOR_MOVED, _R.MARK_COORDINATOR_UNKNOWN | _R.RETRY),
    (RETRIABLE - COORDINATOR_MOVED, _R.RETRY),
)
FETCH_DEFAULT = _R.REPORT

#: Per request kind: (table, default for unlisted codes).
TABLES: Mapping[RequestKind, tuple[Mapping[ErrorCode, Reaction], Reaction]] = {
    RequestKind.FIND: (FIND, _R.RETRY),
    RequestKind.HEARTBEAT: (HEARTBEAT, HEARTBEAT_DEFAULT),
    RequestKind.JOIN: (JOIN, JOIN_DEFAULT),
    RequestKind.SYNC: (SYNC, SYNC_DEFAULT),
    RequestKind.COMMIT: (COMMIT, COMMIT_DEFAULT),
    RequestKind.FETCH: (FETCH, FETCH_DEFAULT),
    # The member dropped its generation when it left: nothing to do, whatever the answer.
    RequestKind.LEAVE: ({}, _R.NONE),
}


def answer_code(kind: RequestKind, response) -> ErrorCode:
    """The error code an answer carries (commits and fetches answer per partition: the first error)."""
    if kind is RequestKind.COMMIT:
        return commit_error_code(response)
    if kind is RequestKind.FETCH:
        return fetched_offsets(response)[0]
    return response.error_code


_STEPS_OF: Dict[Reaction, Tuple[Reaction, ...]] = {}


def steps_of(reaction: Reaction) -> Tuple[Reaction, ...]:
    """The steps ``reaction`` holds, in :data:`STEP_ORDER` (cached: a Flag's ``in`` runs Python code,
    and every answer a member gets is looked up here)."""
    steps = _STEPS_OF.get(reaction)
    if steps is None:
        steps = _STEPS_OF[reaction] = tuple(step for step in STEP_ORDER if step in reaction)
    return steps


def reaction_to(kind: RequestKind, code: ErrorCode, generation_current: bool) -> Reaction:
    """The steps for ``code`` answering a ``kind`` request, generation modifier applied."""
    table, default = TABLES[kind]
    reaction = table.get(code, default)
    if _R.IF_GENERATION_CURRENT in reaction and not generation_current:
        reaction &= ~GENERATION_STEPS
    return reaction & ~_R.IF_GENERATION_CURRENT


def rejoin_reason(kind: RequestKind, code: ErrorCode) -> str:
    """Why the member rejoins (JoinGroup's reason, KIP-800)."""
    if kind is RequestKind.HEARTBEAT and code is ErrorCode.REBALANCE_IN_PROGRESS:
        return "the coordinator started a rebalance"
    return f"{kind.value}: {code.name}"


def request_error(kind: RequestKind, code: ErrorCode,
                  generation_current: bool = True) -> Optional[KGroupError]:
    """The error a failed ``kind`` request reports (and fails the member with, if fatal); None: success."""
    if not code.is_error:
        return None
    if kind is RequestKind.COMMIT and code is ErrorCode.FENCED_INSTANCE_ID and not generation_current:
        # Java ConsumerCoordinator.OffsetCommitResponseHandler: not the fatal FencedInstanceIdException.
        return CommitFailedError("commit failed: its generation's member was fenced by this "
                                 "group_instance_id; the member has moved on to a newer generation", code)
    if kind is RequestKind.COMMIT:
        return commit_error(code)
    if code is ErrorCode.FENCED_INSTANCE_ID:
        return FencedInstanceIdError(f"{kind.value} fenced: another member uses this group_instance_id", code)
    if kind is RequestKind.FIND:
        return GroupMemberError(f"find coordinator: {code.name}", code)
    return GroupMemberError(f"{kind.value} failed: {code.name}", code)
