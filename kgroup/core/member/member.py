"""The group member: a sans-I/O driver of Kafka's classic consumer group protocol.

Everything enters as a method call with an integer ``now_ms``; everything
leaves as :class:`Outbound` requests (``outbound``) and application events
(``take_events``).  The adapter owns the transport, the clock and the
threads; see ``kgroup/core/member/__init__.py`` for the contract and
``docs/member.md`` for where this departs from Java's ConsumerCoordinator.
"""
from __future__ import annotations

import itertools
import logging
from typing import Mapping, Optional, Sequence, Union

import attrs

from kgroup.assignors import RebalanceProtocol
from kgroup.core.error_codes import ErrorCode
from kgroup.core import messages as m
from kgroup.core.member import codec
from kgroup.core.member.commits import CommitBook
from kgroup.core.member.config import MemberConfig
from kgroup.core.member.events import (
    CommitCompleted,
    CommittedFetched,
    FatalError,
    Generation,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.heartbeat import HeartbeatTimer
from kgroup.core.member.offsets import (
    COORDINATOR_MOVED,
    GENERATION_GONE,
    RETRIABLE,
    commit_error,
    commit_error_code,
    fetched_offsets,
    normalize_offsets,
)
from kgroup.core.member.states import MemberState, new_member_state_machine
from kgroup.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    GroupMemberError,
    KGroupError,
    MemberClosedError,
    ProtocolError,
)
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition

NO_GENERATION_VALUE = Generation(NO_GENERATION, m.UNKNOWN_MEMBER_ID, None)
_log = logging.getLogger(__name__)


@attrs.frozen
class Outbound:
    """A request to send: ``node_id`` None means any broker (FindCoordinator)."""

    token: int
    request: object
    node_id: Optional[int]

    @property
    def to_coordinator(self) -> bool:
        return self.node_id is not None


@attrs.define
class _Queued:
    token: int
    kind: str
    payload: object
    not_before_ms: int


@attrs.define
class _Sent:
    kind: str
    payload: object
    generation: Generation


_STATE = MemberState


class GroupMember:
    """One consumer's membership of one group (see the package docstring)."""

    def __init__(self, config: MemberConfig, now_ms: int) -> None:
        self.config = config
        self._fsm = new_member_state_machine(f"member[{config.group_id}]")
        self._hb = HeartbeatTimer(config.session_timeout_ms, config.heartbeat_interval_ms,
                                  config.max_poll_interval_ms, config.retry_backoff_ms, now_ms)
        self._tokens = itertools.count(1)
        self._generation = NO_GENERATION_VALUE
        self._subscription: frozenset = frozenset()
        self._joined_topics: frozenset = frozenset()
        self._owned: frozenset = frozenset()
        self._last_assignment: tuple[frozenset, int] = (frozenset(), NO_GENERATION)
        self._metadata: dict[str, int] = {}
        self._assignment_snapshot: Optional[dict] = None
        self._is_leader = False
        self._coordinator_id: Optional[int] = None
        self._find_token: Optional[int] = None
        self._find_not_before_ms = now_ms
        self._rejoin_needed = False
        self._rejoin_reason = ""
        self._prepared = False
        self._gate_pending = False
        self._gate_taken = False
        self._prejoin_commit: Optional[int] = None
        self._join_token: Optional[int] = None
        self._join_not_before_ms = now_ms
        self._sync_token: Optional[int] = None
        self._hb_token: Optional[int] = None
        self._queue: list[_Queued] = []
        self._in_flight: dict[int, _Sent] = {}
        self._commits = CommitBook()
        self._generation_at_close = NO_GENERATION_VALUE
        self._events: list = []
        self._positions: dict = {}
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms
        self._closing = False
        self.last_error: Optional[KGroupError] = None

    # -- observation ----------------------------------------------------------

    @property
    def state(self) -> MemberState:
        return self._fsm.state

    @property
    def generation(self) -> Generation:
        return self._generation

    @property
    def member_id(self) -> str:
        return self._generation.member_id

    @property
    def is_leader(self) -> bool:
        return self._is_leader and self._generation.is_valid

    @property
    def assignment(self) -> frozenset:
        """Partitions the member owns now (what the app may consume)."""
        return self._owned

    @property
    def subscription(self) -> frozenset:
        return self._subscription

    @property
    def protocol(self) -> RebalanceProtocol:
        return self.config.protocol

    @property
    def coordinator_id(self) -> Optional[int]:
        return self._coordinator_id

    @property
    def rejoin_needed(self) -> bool:
        return self._rejoin_needed

    @property
    def heartbeat(self) -> HeartbeatTimer:
        return self._hb

    def metadata_topics(self) -> frozenset:
        """Topics whose partition counts the member needs (the leader: the whole group's)."""
        if self._assignment_snapshot is not None and self.is_leader:
            return self._subscription | frozenset(self._assignment_snapshot)
        return self._subscription

    @property
    def closed(self) -> bool:
        """True once close() finished its commit and LeaveGroup (or the member is fatal)."""
        if self._fsm.state is _STATE.FATAL:
            return True
        return self._closing and not self._queue and not self._in_flight and not self._commits

    def has_in_flight(self) -> bool:
        return bool(self._in_flight)

    def in_flight_tokens(self) -> frozenset:
        """Tokens the member still expects an answer for (others may be forgotten)."""
        return frozenset(self._in_flight)

    def has_events(self) -> bool:
        return bool(self._events)

    # -- application side -----------------------------------------------------

    def subscribe(self, topics: Sequence[str], now_ms: int) -> None:
        self._check_open()
        topics = frozenset(topics)
        if not topics:
            self.unsubscribe(now_ms)
            return
        if topics != self._subscription:
            self._subscription = topics
            self._request_rejoin("subscription changed")

    def unsubscribe(self, now_ms: int) -> None:
        """Give up every partition and leave the group (dynamic members)."""
        self._check_open()
        self._subscription = frozenset()
        self._rejoin_needed = False
        self._release_partitions()
        if self._generation.member_id and self._fsm.state is not _STATE.UNJOINED and not self.config.is_static:
            self._enqueue_leave("the consumer unsubscribed", now_ms)
        self._reset_generation("unsubscribed", reset_member_id=True)

    def on_app_poll(self, now_ms: int, positions: Optional[Mapping] = None) -> None:
        """The application polled (polling thread only).

        Records the poll for ``max_poll_interval_ms``, auto-commits
        ``positions`` (the next offsets to consume) on the interval, and
        prepares a pending rejoin: pre-join commit and revocation events.
        The JoinGroup goes out only on a later call, once those events were
        taken, so the adapter's callbacks ran before the member rejoins.
        """
        if self._closing or self._fsm.state is _STATE.FATAL:
            return
        self._hb.poll(now_ms)
        if positions is not None:
            self._positions = normalize_offsets(positions)
        if self._gate_pending and self._gate_taken:
            self._gate_pending = False
        if (self.config.enable_auto_commit and now_ms >= self._next_auto_commit_ms
                and self._fsm.state is _STATE.STABLE and self._positions):
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            self._enqueue_commit(self._positions, None, now_ms)
        self._maybe_prepare_join(now_ms)

    def update_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None:
        """Partition counts of the known topics; the leader rejoins when its group's counts changed."""
        self._metadata = dict(partitions_per_topic)
        snapshot = self._assignment_snapshot
        if snapshot is not None and self.is_leader and self._fsm.state is _STATE.STABLE:
            if {t: self._metadata.get(t) for t in snapshot} != snapshot:
                self._request_rejoin("partition count of a subscribed topic changed")

    def request_rejoin(self, reason: str) -> None:
        self._check_open()
        self._request_rejoin(reason)

    def commit_offsets(self, offsets: Mapping[TopicPartition, Union[int, m.OffsetAndMetadata]],
                       now_ms: int, deadline_ms: Optional[int] = None) -> int:
        """Queue a commit with the current generation; its result is a CommitCompleted(token).

        Retriable failures are retried until ``deadline_ms`` (None: reported at once).
        """
        self._check_open()
        return self._enqueue_commit(normalize_offsets(offsets), deadline_ms, now_ms)

    def fetch_committed(self, partitions: Sequence[TopicPartition], now_ms: int) -> int:
        """Queue an OffsetFetch; its result is a CommittedFetched(token)."""
        self._check_open()
        token = next(self._tokens)
        self._queue.append(_Queued(token, "fetch", tuple(partitions), now_ms))
        return token

    def close(self, now_ms: int, leave_group: Optional[bool] = None,
              positions: Optional[Mapping] = None) -> None:
        """Commit (auto-commit), revoke, and leave unless static (or told otherwise).

        Drive ``outbound`` until ``closed`` is True (the adapter bounds the wait).
        """
        if self._closing:
            return
        if self._fsm.state is _STATE.FATAL:
            self._closing = True
            return
        if positions is not None:
            self._positions = normalize_offsets(positions)
        if self.config.enable_auto_commit and self._positions and self._fsm.state is _STATE.STABLE:
            self._enqueue_commit(self._positions, None, now_ms)
        # The closing commit still goes out in the generation it was made in.
        self._generation_at_close = self._generation
        self._release_partitions()
        if (self.config.leaves_on_close(leave_group) and self._generation.member_id
                and self._fsm.state is not _STATE.UNJOINED):
            self._enqueue_leave("the consumer is closing", now_ms)
        self._drop_queued(("join", "sync"))
        self._closing = True
        self._rejoin_needed = False
        self._reset_generation("closed", reset_member_id=True)

    def take_events(self) -> list:
        """Events since the last call, oldest first; the adapter runs them as callbacks."""
        events, self._events = self._events, []
        if self._gate_pending:
            self._gate_taken = True
        return events

    # -- protocol side --------------------------------------------------------

    def outbound(self, now_ms: int) -> list[Outbound]:
        """Requests due now.  Safe from any thread holding the adapter's lock."""
        if self._fsm.state is _STATE.FATAL:
            return []
        out: list[Outbound] = []
        self._check_liveness(now_ms)
        if self._coordinator_id is None:
            if self._find_token is None and now_ms >= self._find_not_before_ms and self._needs_coordinator():
                token = next(self._tokens)
                self._find_token = token
                self._in_flight[token] = _Sent("find", None, self._generation)
                out.append(Outbound(token, m.FindCoordinatorRequest(self.config.group_id), None))
            return out
        if self._heartbeating() and self._hb_token is None and self._hb.should_heartbeat(now_ms):
            out.append(self._send_heartbeat(now_ms))
        # Commits first: one made in a revocation callback must reach the coordinator before the
        # JoinGroup that may end its generation (Java commits synchronously before it rejoins).
        out.extend(self._send_due_commits(now_ms))
        if self._join_ready(now_ms):
            out.append(self._send_join(now_ms))
        commits_waiting = self._commits.has_waiting()
        remaining = []
        for item in self._queue:
            # A LeaveGroup must not overtake a commit made before it (close commits, then leaves).
            if now_ms < item.not_before_ms or (item.kind == "leave" and commits_waiting):
                remaining.append(item)
                continue
            sent = self._emit_queued(item, now_ms)
            if sent is not None:
                out.append(sent)
        self._queue = remaining
        return out

    def on_response(self, token: int, response: object, now_ms: int) -> None:
        sent = self._in_flight.pop(token, None)
        if sent is None or self._fsm.state is _STATE.FATAL:
            return  # abandoned (coordinator changed) or stale
        getattr(self, f"_on_{sent.kind}_response")(token, sent, response, now_ms)

    def on_transport_error(self, token: int, now_ms: int) -> None:
        sent = self._in_flight.pop(token, None)
        if sent is None or self._fsm.state is _STATE.FATAL:
            return
        if sent.kind == "find":
            self._find_token = None
            self._find_not_before_ms = now_ms + self.config.retry_backoff_ms
            return
        self._abandon(token, sent, now_ms)
        self._mark_coordinator_unknown("transport error", now_ms)

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest instant at which ``outbound`` may have something new to do."""
        if self._fsm.state is _STATE.FATAL:
            return None
        candidates = []
        if self._coordinator_id is None:
            if self._find_token is None and self._needs_coordinator():
                candidates.append(self._find_not_before_ms)
        else:
            if self._heartbeating():
                if self._hb_token is None:
                    candidates.append(self._hb.next_heartbeat_ms())
                candidates.append(self._hb.session_deadline_ms())
                candidates.append(self._hb.poll_deadline_ms())
            if self._join_ready(None):
                candidates.append(self._join_not_before_ms)
            candidates.extend(item.not_before_ms for item in self._queue)
            commit_due_ms = self._commits.next_deadline_ms()
            if commit_due_ms is not None:
                candidates.append(commit_due_ms)
        return min(candidates) if candidates else None

    # -- internals: requests --------------------------------------------------

    def _needs_coordinator(self) -> bool:
        return bool(self._subscription) or bool(self._queue) or bool(self._commits) or bool(self._rejoin_needed)

    def _heartbeating(self) -> bool:
        return (not self._closing and self._generation.is_valid
                and self._fsm.state in (_STATE.STABLE, _STATE.COMPLETING_REBALANCE))

    def _join_ready(self, now_ms: Optional[int]) -> bool:
        ready = (self._rejoin_needed and self._prepared and not self._gate_pending and not self._closing
                 and self._join_token is None and self._sync_token is None and self._prejoin_commit is None
                 and bool(self._subscription) and not any(q.kind == "sync" for q in self._queue))
        return ready and (now_ms is None or now_ms >= self._join_not_before_ms)

    def _send_heartbeat(self, now_ms: int) -> Outbound:
        self._hb.sent(now_ms)
        token = next(self._tokens)
        self._hb_token = token
        gen = self._generation
        self._in_flight[token] = _Sent("heartbeat", None, gen)
        request = m.HeartbeatRequest(self.config.group_id, gen.generation_id, gen.member_id,
                                     self.config.group_instance_id)
        return Outbound(token, request, self._coordinator_id)

    def _subscription_value(self, assignor) -> Subscription:
        topics = sorted(self._subscription)
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            owned, generation_id = sorted(self._owned), self._generation.generation_id
            hint = owned
        else:
            # Eager revoked everything, so it claims nothing (Java's ConsumerCoordinator sends the
            # emptied assignment): a cooperative assignor chosen by a mixed group must not withhold
            # partitions for an owner that will never revoke them.  The last assignment is only a
            # stickiness hint, in the assignor's user data (Java's StickyAssignor does the same).
            owned, (hint, generation_id) = [], (sorted(self._last_assignment[0]), self._last_assignment[1])
        return Subscription(topics=topics, owned_partitions=owned, generation_id=generation_id,
                            rack_id=self.config.rack_id,
                            user_data=assignor.subscription_user_data(topics, hint, generation_id))

    def _send_join(self, now_ms: int) -> Outbound:
        if self._fsm.state is not _STATE.PREPARING_REBALANCE:
            self._fsm.transition_to(_STATE.PREPARING_REBALANCE)
        self._joined_topics = self._subscription
        protocols = tuple(
            m.JoinGroupProtocol(a.name, codec.encode_subscription(self._subscription_value(a)))
            for a in self.config.assignors
        )
        request = m.JoinGroupRequest(
            group_id=self.config.group_id, member_id=self._generation.member_id,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.effective_rebalance_timeout_ms,
            group_instance_id=self.config.group_instance_id, protocols=protocols,
            reason=self._rejoin_reason or None, client_id=self.config.client_id,
        )
        token = next(self._tokens)
        self._join_token = token
        self._in_flight[token] = _Sent("join", None, self._generation)
        return Outbound(token, request, self._coordinator_id)

    def _send_due_commits(self, now_ms: int) -> list[Outbound]:
        out = []
        for commit in self._commits.due(now_ms):
            gen, instance_id = commit.generation, self.config.group_instance_id
            if not gen.is_valid and not self._subscription:
                # No group management (manual assignment): Java ConsumerCoordinator.sendOffsetCommitRequest
                # commits with Generation.NO_GENERATION and no instance id, which the coordinator
                # accepts for a group without members.
                gen, instance_id = NO_GENERATION_VALUE, None
            else:
                error = self._commit_generation_error(gen)
                if error is not None:
                    self._finish_commit(commit.token, error)
                    continue
            request = m.OffsetCommitRequest(
                self.config.group_id,
                tuple(m.PartitionOffsetCommit(tp, om) for tp, om in sorted(commit.offsets.items())),
                gen.generation_id, gen.member_id, instance_id)
            self._commits.mark_sent(commit.token)
            self._in_flight[commit.token] = _Sent("commit", None, gen)
            out.append(Outbound(commit.token, request, self._coordinator_id))
        return out

    def _commit_generation_error(self, made_in: Generation) -> Optional[CommitFailedError]:
        """Why a commit made in ``made_in`` may not be sent now (None: it may)."""
        if not made_in.is_valid:
            return CommitFailedError(
                "commit failed: the member has no generation (it is rebalancing or left the group)")
        current = self._generation_at_close if self._closing else self._generation
        if made_in != current:
            return CommitFailedError(
                f"commit failed: it was made in generation {made_in.generation_id}, which is gone "
                f"(the member is now in generation {self._generation.generation_id}); its partitions "
                "may be owned by another member", ErrorCode.ILLEGAL_GENERATION)
        return None

    def _emit_queued(self, item: _Queued, now_ms: int) -> Optional[Outbound]:
        if item.kind == "fetch":
            gen = self._generation
            request = m.OffsetFetchRequest(self.config.group_id, item.payload, require_stable=True)
        elif item.kind == "leave":
            gen = self._generation
            request = item.payload
        else:  # sync, built when the join completed
            gen = self._generation
            self._sync_token = item.token
            request = item.payload
        self._in_flight[item.token] = _Sent(item.kind, item.payload, gen)
        return Outbound(item.token, request, self._coordinator_id)

    def _enqueue_commit(self, offsets: Mapping, deadline_ms: Optional[int], now_ms: int) -> int:
        """A commit stamped with the generation it is made in (see ``commits.py``)."""
        token = next(self._tokens)
        self._commits.add(token, offsets, deadline_ms, self._generation, now_ms)
        return token

    def _enqueue_leave(self, reason: str, now_ms: int) -> None:
        identity = m.MemberIdentity(self._generation.member_id, self.config.group_instance_id, reason)
        token = next(self._tokens)
        self._queue.append(_Queued(token, "leave", m.LeaveGroupRequest(self.config.group_id, (identity,)), now_ms))

    def _drop_queued(self, kinds: tuple) -> None:
        self._queue = [q for q in self._queue if q.kind not in kinds]
        for token, sent in list(self._in_flight.items()):
            if sent.kind in kinds:
                del self._in_flight[token]
        self._join_token = None if "join" in kinds else self._join_token
        self._sync_token = None if "sync" in kinds else self._sync_token

    # -- internals: responses -------------------------------------------------

    def _on_find_response(self, token, sent, response: m.FindCoordinatorResponse, now_ms: int) -> None:
        self._find_token = None
        if response.error_code is ErrorCode.NONE and response.node_id >= 0:
            self._coordinator_id = response.node_id
            self._hb.reset_session(now_ms)
        elif response.error_code is ErrorCode.GROUP_AUTHORIZATION_FAILED:
            # Not retriable (Java AbstractCoordinator.FindCoordinatorResponseHandler raises
            # GroupAuthorizationException): retrying would hide the denial forever.
            self._fail(GroupMemberError("find coordinator: GROUP_AUTHORIZATION_FAILED", response.error_code))
        else:
            self._find_not_before_ms = now_ms + self.config.retry_backoff_ms

    def _on_heartbeat_response(self, token, sent, response: m.HeartbeatResponse, now_ms: int) -> None:
        self._hb_token = None
        code = response.error_code
        stale = sent.generation != self._generation
        if code is ErrorCode.NONE:
            self._hb.received(now_ms)
        elif code is ErrorCode.REBALANCE_IN_PROGRESS:
            # Keep heartbeating while rejoining so the session survives the rebalance.
            self._hb.received(now_ms)
            if self._fsm.state is _STATE.STABLE and not stale:
                self._request_rejoin("the coordinator started a rebalance")
        elif code in GENERATION_GONE:
            if not stale:
                self._reset_generation(f"heartbeat: {code.name}", reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
                self._request_rejoin(f"heartbeat: {code.name}")
        elif code is ErrorCode.FENCED_INSTANCE_ID:
            if not stale:
                self._fail(FencedInstanceIdError("heartbeat fenced: another member uses this group_instance_id", code))
        elif code in COORDINATOR_MOVED:
            self._hb.fail()
            self._mark_coordinator_unknown(f"heartbeat: {code.name}", now_ms)
        else:
            self._hb.fail()
            self.last_error = GroupMemberError(f"heartbeat failed: {code.name}", code)

    def _on_join_response(self, token, sent, response: m.JoinGroupResponse, now_ms: int) -> None:
        self._join_token = None
        if self._fsm.state is not _STATE.PREPARING_REBALANCE or self._closing:
            return
        code = response.error_code
        backoff = now_ms + self.config.retry_backoff_ms
        if code is ErrorCode.NONE and (response.generation_id < 0 or not response.member_id):
            # A broker bug, not a generation: joining it would let the member heartbeat and commit
            # as generation -1 (a simple consumer).  Record it and join again after the backoff.
            self.last_error = ProtocolError(self._fsm.state, response,
                                            "a successful JoinGroup response must carry a generation "
                                            f"and a member id (got {response.generation_id}, "
                                            f"{response.member_id!r})")
            _log.warning("group %s: %s", self.config.group_id, self.last_error)
            self._join_not_before_ms = backoff
        elif code is ErrorCode.NONE:
            self._join_succeeded(response, now_ms)
        elif code is ErrorCode.MEMBER_ID_REQUIRED:
            # KIP-394: rejoin at once with the id the coordinator handed out.
            self._generation = Generation(NO_GENERATION, response.member_id, None)
            self._join_not_before_ms = now_ms
        elif code in GENERATION_GONE:
            self._reset_generation(f"join: {code.name}", reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
            self._request_rejoin(f"join: {code.name}")
            self._join_not_before_ms = now_ms
        elif code in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(f"join: {code.name}", now_ms)
            self._join_not_before_ms = backoff
        elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS,
                      ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR):
            self._join_not_before_ms = backoff
        elif code is ErrorCode.FENCED_INSTANCE_ID:
            self._fail(FencedInstanceIdError("join fenced: another member uses this group_instance_id", code))
        else:
            self._fail(GroupMemberError(f"join failed: {code.name}", code))

    def _join_succeeded(self, response: m.JoinGroupResponse, now_ms: int) -> None:
        if response.protocol_type not in (None, m.CONSUMER_PROTOCOL_TYPE):
            # KIP-559, Java AbstractCoordinator.JoinGroupResponseHandler: another protocol type's group.
            self._fail(GroupMemberError(f"join answered with protocol type {response.protocol_type!r}",
                                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        self._generation = Generation(response.generation_id, response.member_id, response.protocol_name)
        self._is_leader = response.leader == response.member_id
        self._fsm.transition_to(_STATE.COMPLETING_REBALANCE)
        self._hb.reset_timeouts(now_ms)
        assignments: tuple = ()
        if self._is_leader and response.skip_assignment:
            # KIP-814: a static leader that replaced itself keeps the group's current assignment;
            # it only learns the group's topics so it can watch their partition counts.
            self._assignment_snapshot = self._group_topics(self._decode_subscriptions(response))
        elif self._is_leader:
            try:
                assignments = self._assign(response)
            except KGroupError as exc:
                self._fail(exc)
                return
        else:
            self._assignment_snapshot = None
        request = m.SyncGroupRequest(
            self.config.group_id, response.generation_id, response.member_id,
            self.config.group_instance_id, m.CONSUMER_PROTOCOL_TYPE, response.protocol_name, assignments)
        self._queue.insert(0, _Queued(next(self._tokens), "sync", request, now_ms))

    def _assign(self, response: m.JoinGroupResponse) -> tuple:
        assignor = self.config.assignor(response.protocol_name or "")
        if assignor is None:
            raise GroupMemberError(f"the group chose protocol {response.protocol_name!r}, "
                                   "which this member does not have", ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        subscriptions = self._decode_subscriptions(response)
        # The leader assigns only from the members' metadata and the topics it knows.
        self._assignment_snapshot = self._group_topics(subscriptions)
        counts = {t: n for t, n in self._assignment_snapshot.items() if n is not None}
        result = assignor.assign(counts, subscriptions)
        return tuple(
            m.SyncGroupAssignment(member_id, codec.encode_assignment(result.get(member_id, Assignment())))
            for member_id in subscriptions
        )

    def _decode_subscriptions(self, response: m.JoinGroupResponse) -> dict[str, Subscription]:
        """Every member's subscription; one whose bytes do not decode subscribes to nothing.

        One bad client must not take the group down: failing here would make
        each leader in turn go fatal on the same bytes.
        """
        subscriptions = {}
        for member in response.members:
            try:
                subscription = codec.decode_subscription(member.metadata)
            except KGroupError as exc:
                _log.warning("group %s: member %s sent subscription metadata this leader cannot decode "
                             "(%s); it is assigned nothing", self.config.group_id, member.member_id, exc)
                subscription = Subscription(topics=())
            if member.group_instance_id is not None:
                subscription = attrs.evolve(subscription, group_instance_id=member.group_instance_id)
            subscriptions[member.member_id] = subscription
        return subscriptions

    def _group_topics(self, subscriptions: Mapping[str, Subscription]) -> dict[str, Optional[int]]:
        """The group's topics with the partition counts this member knows (None: unknown)."""
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        return {t: self._metadata.get(t) for t in topics}

    def _on_sync_response(self, token, sent, response: m.SyncGroupResponse, now_ms: int) -> None:
        self._sync_token = None
        if self._fsm.state is not _STATE.COMPLETING_REBALANCE or self._closing:
            return
        code = response.error_code
        if code is ErrorCode.NONE:
            self._sync_succeeded(response, now_ms)
        elif code is ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("sync: REBALANCE_IN_PROGRESS")
        elif code in GENERATION_GONE:
            self._reset_generation(f"sync: {code.name}", reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
            self._request_rejoin(f"sync: {code.name}")
        elif code in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(f"sync: {code.name}", now_ms)
            self._request_rejoin(f"sync: {code.name}")
        elif code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT):
            self._request_rejoin(f"sync: {code.name}")
            self._join_not_before_ms = now_ms + self.config.retry_backoff_ms
        elif code is ErrorCode.FENCED_INSTANCE_ID:
            self._fail(FencedInstanceIdError("sync fenced: another member uses this group_instance_id", code))
        else:
            self._fail(GroupMemberError(f"sync failed: {code.name}", code))

    def _sync_succeeded(self, response: m.SyncGroupResponse, now_ms: int) -> None:
        if (response.protocol_name and self._generation.protocol_name
                and response.protocol_name != self._generation.protocol_name
                or response.protocol_type not in (None, m.CONSUMER_PROTOCOL_TYPE)):  # KIP-559, as the join
            self._fail(GroupMemberError("sync answered with a different protocol than the join",
                                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        try:
            decoded = codec.decode_assignment(response.assignment) if response.assignment else Assignment()
            new = frozenset(decoded.partitions)
        except KGroupError as exc:
            self._fail(exc)
            return
        self._fsm.transition_to(_STATE.STABLE)
        self._rejoin_needed = False
        self._rejoin_reason = ""
        self._prepared = False
        revoked = self._owned - new
        added = new - self._owned
        if revoked:
            # Only cooperative members still own partitions here (eager revoked all before joining).
            if self.config.enable_auto_commit and self._positions:
                self._enqueue_commit(self._positions, None, now_ms)
            self._emit_gating(PartitionsRevoked(revoked))
            self._request_rejoin("partitions were revoked (KIP-429 second round)")
        self._owned = new
        self._last_assignment = (new, self._generation.generation_id)
        self._events.append(PartitionsAssigned(added, new, self._generation, decoded.user_data))
        if self._joined_topics != self._subscription:
            self._request_rejoin("subscription changed during the rebalance")
        elif any(tp.topic not in self._subscription for tp in new):
            self._request_rejoin("assigned a topic this member does not subscribe to")
        if self.config.fetch_committed_on_assignment and added:
            self.fetch_committed(sorted(added), now_ms)

    def _on_commit_response(self, token, sent, response: m.OffsetCommitResponse, now_ms: int) -> None:
        code = commit_error_code(response)
        if code is ErrorCode.NONE:
            self._finish_commit(token, None)
            return
        if code in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(f"commit: {code.name}", now_ms)
        if code in RETRIABLE:
            self._retry_or_fail_commit(token, code, now_ms)
            return
        if code in GENERATION_GONE and sent.generation == self._generation:
            self._reset_generation(f"commit: {code.name}", reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
            self._request_rejoin(f"commit: {code.name}")
        elif code is ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("commit: REBALANCE_IN_PROGRESS")
        error = commit_error(code)
        self._finish_commit(token, error)
        if isinstance(error, FencedInstanceIdError):
            self._fail(error)

    def _retry_or_fail_commit(self, token: int, code: ErrorCode, now_ms: int) -> None:
        pending = self._commits.get(token)
        if pending is None:
            return
        retry_at_ms = now_ms + self.config.retry_backoff_ms
        if pending.deadline_ms is not None and retry_at_ms < pending.deadline_ms:
            # Newer waiting commits take over the partitions they share with this retry.
            self._commits.requeue(token, retry_at_ms)
        else:
            self._finish_commit(token, commit_error(code))

    def _finish_commit(self, token: int, error: Optional[KGroupError]) -> None:
        for finished in self._commits.finish(token):
            if finished.token == self._prejoin_commit:
                self._prejoin_commit = None
            self._events.append(CommitCompleted(finished.token, finished.requested, error))

    def _on_fetch_response(self, token, sent, response: m.OffsetFetchResponse, now_ms: int) -> None:
        code, offsets = fetched_offsets(response)
        if code in COORDINATOR_MOVED:
            self._mark_coordinator_unknown(f"offset fetch: {code.name}", now_ms)
        if code in RETRIABLE:
            self._queue.append(_Queued(token, "fetch", sent.payload, now_ms + self.config.retry_backoff_ms))
            return
        error = GroupMemberError(f"offset fetch failed: {code.name}", code) if code.is_error else None
        self._events.append(CommittedFetched(token, offsets, error))

    def _on_leave_response(self, token, sent, response, now_ms: int) -> None:
        """Nothing to do: the member already dropped its generation when it left."""

    def _abandon(self, token: int, sent: _Sent, now_ms: int) -> None:
        """A coordinator request that will get no answer (transport error, coordinator moved)."""
        if sent.kind == "heartbeat":
            self._hb_token = None
            self._hb.fail()
        elif sent.kind == "join":
            self._join_token = None
            self._join_not_before_ms = now_ms + self.config.retry_backoff_ms
        elif sent.kind == "sync":
            self._sync_token = None
            self._request_rejoin("sync got no answer")
        elif sent.kind == "commit":
            self._retry_or_fail_commit(token, ErrorCode.REQUEST_TIMED_OUT, now_ms)
        elif sent.kind == "fetch":
            self._queue.append(_Queued(token, "fetch", sent.payload, now_ms + self.config.retry_backoff_ms))

    # -- internals: membership ------------------------------------------------

    def _check_open(self) -> None:
        if self._closing:
            raise MemberClosedError("the group member is closed")
        if self._fsm.state is _STATE.FATAL:
            raise MemberClosedError(f"the group member failed: {self.last_error}")

    def _request_rejoin(self, reason: str) -> None:
        if not self._rejoin_needed:
            self._rejoin_reason = reason
        self._rejoin_needed = True

    def _check_liveness(self, now_ms: int) -> None:
        if self._coordinator_id is None or not self._heartbeating():
            return
        if self._hb.session_expired(now_ms):
            # No heartbeat answer for a whole session: suspect the coordinator (seed 003).
            self._mark_coordinator_unknown("session timed out without a heartbeat response", now_ms)
        elif self._hb.poll_expired(now_ms):
            # The app stalled between polls.  Dynamic members leave so the group
            # rebalances now; static members only stop heartbeating (as Java does)
            # and the coordinator expires them after the session timeout.
            if not self.config.is_static:
                self._enqueue_leave("consumer poll timeout has expired", now_ms)
            self._reset_generation("poll timeout expired", reset_member_id=not self.config.is_static)
            self._request_rejoin("poll timeout expired")

    def _mark_coordinator_unknown(self, reason: str, now_ms: int) -> None:
        if self._coordinator_id is None:
            return
        self._coordinator_id = None
        self._find_not_before_ms = now_ms
        for token, sent in list(self._in_flight.items()):
            if sent.kind != "find":
                del self._in_flight[token]
                self._abandon(token, sent, now_ms)

    def _reset_generation(self, reason: str, reset_member_id: bool) -> None:
        member_id = m.UNKNOWN_MEMBER_ID if reset_member_id else self._generation.member_id
        self._generation = Generation(NO_GENERATION, member_id, None)
        self._is_leader = False
        self._assignment_snapshot = None
        if self._fsm.state not in (_STATE.UNJOINED, _STATE.FATAL):
            self._fsm.transition_to(_STATE.UNJOINED)
        if self._owned:
            self._prepared = False  # the owned partitions must be reported lost first

    def _maybe_prepare_join(self, now_ms: int) -> None:
        if (not self._rejoin_needed or self._prepared or not self._subscription
                or self._coordinator_id is None or self._join_token is not None or self._sync_token is not None):
            return
        lost = not self._generation.is_valid
        if self.config.enable_auto_commit and not lost and self._positions:
            self._prejoin_commit = self._enqueue_commit(self._positions, now_ms + self.config.effective_rebalance_timeout_ms, now_ms)
        if lost:
            if self._owned:
                self._emit_gating(PartitionsLost(self._owned))
                self._owned = frozenset()
        elif self.protocol is RebalanceProtocol.EAGER:
            if self._owned:
                self._emit_gating(PartitionsRevoked(self._owned))
                self._owned = frozenset()
        else:
            gone = frozenset(tp for tp in self._owned if tp.topic not in self._subscription)
            if gone:
                self._emit_gating(PartitionsRevoked(gone))
                self._owned -= gone
        self._prepared = True

    def _emit_gating(self, event) -> None:
        """An event the app must see before the member rejoins."""
        self._events.append(event)
        self._gate_pending = True
        self._gate_taken = False

    def _release_partitions(self) -> None:
        if self._owned:
            lost = not self._generation.is_valid
            self._events.append(PartitionsLost(self._owned) if lost else PartitionsRevoked(self._owned))
            self._owned = frozenset()

    def _fail(self, error: KGroupError) -> None:
        self.last_error = error
        for token in self._commits.tokens():
            self._finish_commit(token, error)
        self._queue.clear()
        self._in_flight.clear()
        if self._owned:
            self._events.append(PartitionsLost(self._owned))
            self._owned = frozenset()
        self._fsm.transition_to(_STATE.FATAL)
        self._events.append(FatalError(error))
