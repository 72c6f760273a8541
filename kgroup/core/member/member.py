"""The group member: a sans-I/O driver of Kafka's classic consumer group protocol.

Everything enters as a method call with an integer ``now_ms``; everything
leaves as :class:`Outbound` requests (``outbound``) and application events
(``take_events``).  The adapter owns the transport, the clock and the
threads; see ``kgroup/core/member/__init__.py`` for the contract and
``docs/member.md`` for where this departs from Java's ConsumerCoordinator.

This module is the protocol; its data lives next door: the member's states
(``states.py``), when it may rejoin (``rejoin.py``), its requests
(``requests.py``), how it reacts to each error code (``reactions.py``),
its commits (``commits.py``, ``offsets.py``) and the leader's assignment
(``leader.py``).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from kgroup.assignors import RebalanceProtocol
from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import codec, leader
from kgroup.core.member.commits import CommitBook
from kgroup.core.member.config import MemberConfig
from kgroup.core.member.events import (
    CommitCompleted,
    CommittedFetched,
    EventQueue,
    FatalError,
    Generation,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from kgroup.core.member.heartbeat import HeartbeatTimer
from kgroup.core.member.offsets import (
    commit_error,
    commit_error_code,
    commit_generation_error,
    commit_request,
    fetched_offsets,
    normalize_offsets,
)
from kgroup.core.member.reactions import STEP_ORDER, Reaction, reaction_to, rejoin_reason, request_error
from kgroup.core.member.rejoin import Rejoin, RejoinGate
from kgroup.core.member.requests import Outbound, Queued, RequestBook, RequestKind, Sent
from kgroup.core.member.states import MemberState, new_member_state_machine
from kgroup.errors import GroupMemberError, KGroupError, MemberClosedError, ProtocolError
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition

__all__ = ["GroupMember", "NO_GENERATION_VALUE", "Outbound"]

NO_GENERATION_VALUE = Generation(NO_GENERATION, m.UNKNOWN_MEMBER_ID, None)
_log = logging.getLogger(__name__)
_STATE = MemberState
_KIND = RequestKind
#: An answer to a JoinGroup / SyncGroup counts only in the state that sent it (others are stale).
_ANSWERED_IN = {_KIND.JOIN: _STATE.PREPARING_REBALANCE, _KIND.SYNC: _STATE.COMPLETING_REBALANCE}


class GroupMember:
    """One consumer's membership of one group (see the package docstring)."""

    def __init__(self, config: MemberConfig, now_ms: int) -> None:
        self.config = config
        self._fsm = new_member_state_machine(f"member[{config.group_id}]")
        self._rejoin = RejoinGate(f"rejoin[{config.group_id}]")
        self._hb = HeartbeatTimer(config.session_timeout_ms, config.heartbeat_interval_ms,
                                  config.max_poll_interval_ms, config.retry_backoff_ms, now_ms)
        self._requests = RequestBook(now_ms)
        self._commits = CommitBook()
        self._events = EventQueue()
        self._generation = NO_GENERATION_VALUE
        self._generation_at_close = NO_GENERATION_VALUE
        self._subscription: frozenset = frozenset()
        self._joined_topics: frozenset = frozenset()
        self._owned: frozenset = frozenset()
        self._last_assignment: tuple[frozenset, int] = (frozenset(), NO_GENERATION)
        self._metadata: dict[str, int] = {}
        self._assignment_snapshot: Optional[dict] = None
        #: The snapshot came from a skipped assignment (KIP-814): unknown counts are adopted when learnt.
        self._adopt_unknown_counts = False
        self._is_leader = False
        self._coordinator_id: Optional[int] = None
        self._positions: dict = {}
        self._next_auto_commit_ms = now_ms + config.auto_commit_interval_ms
        self._closing = False
        self.last_error: Optional[KGroupError] = None
        #: Successes that are more than a reaction-table row.
        self._on_success: dict[RequestKind, Callable[[int, Sent, Any, int], None]] = {
            _KIND.FIND: self._found_coordinator, _KIND.JOIN: self._joined, _KIND.SYNC: self._synced,
        }

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
        return self._rejoin.needed

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
        return (self._closing and not self._requests.has_queued() and not self._requests.has_in_flight()
                and not self._commits)

    def has_in_flight(self) -> bool:
        return self._requests.has_in_flight()

    def in_flight_tokens(self) -> frozenset:
        """Tokens the member still expects an answer for (others may be forgotten)."""
        return self._requests.in_flight_tokens()

    def has_events(self) -> bool:
        return bool(self._events)

    # -- application side -----------------------------------------------------

    def subscribe(self, topics: Sequence[str], now_ms: int) -> None:
        self._check_open()
        wanted = frozenset(topics)
        if not wanted:
            self.unsubscribe(now_ms)
            return
        if wanted != self._subscription:
            self._subscription = wanted
            self._rejoin.request("subscription changed")

    def unsubscribe(self, now_ms: int) -> None:
        """Give up every partition and leave the group (dynamic members)."""
        self._check_open()
        self._subscription = frozenset()
        self._rejoin.cancel()
        self._release_partitions()
        if (self._generation.member_id and self._fsm.state is not _STATE.UNJOINED
                and not self.config.is_static):
            self._enqueue_leave("the consumer unsubscribed", now_ms)
        self._reset_generation(reset_member_id=True)

    def on_app_poll(self, now_ms: int, positions: Optional[Mapping] = None) -> None:
        """The application polled (polling thread only).

        Records the poll for ``max_poll_interval_ms``, auto-commits
        ``positions`` (the next offsets to consume) on the interval, and
        prepares a pending rejoin: pre-join commit and revocation events.
        The JoinGroup goes out only once a later call finds those events
        taken (``rejoin.py``), so the adapter's callbacks ran before the
        member rejoins.
        """
        if self._closing or self._fsm.state is _STATE.FATAL:
            return
        self._hb.poll(now_ms)
        if positions is not None:
            self._positions = normalize_offsets(positions)
        if (self.config.enable_auto_commit and now_ms >= self._next_auto_commit_ms
                and self._fsm.state is _STATE.STABLE and self._positions):
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            self._enqueue_commit(self._positions, None, now_ms)
        self._rejoin.app_polled(self._events.delivered_count)
        self._maybe_prepare_join(now_ms)

    def update_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None:
        """Partition counts of the known topics; the leader rejoins when its group's counts changed."""
        self._metadata = dict(partitions_per_topic)
        snapshot = self._assignment_snapshot
        if snapshot is not None and self.is_leader and self._fsm.state is _STATE.STABLE:
            if self._adopt_unknown_counts:
                # A returning static leader told to skip the assignment (KIP-814) assigned nothing, so a
                # count it did not know at the join is no change: it becomes the baseline, as Java's
                # onLeaderElected takes assignmentSnapshot = metadataSnapshot.  Rejoining here made
                # every static leader bounce that beat its first metadata answer rebalance the group.
                snapshot.update({t: self._metadata[t] for t, n in snapshot.items()
                                 if n is None and t in self._metadata})
            if {t: self._metadata.get(t) for t in snapshot} != snapshot:
                self._rejoin.request("partition count of a subscribed topic changed")

    def request_rejoin(self, reason: str) -> None:
        self._check_open()
        self._rejoin.request(reason)

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
        return self._requests.enqueue(_KIND.FETCH, tuple(partitions), now_ms)

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
        self._requests.drop((_KIND.JOIN, _KIND.SYNC))
        self._closing = True
        self._rejoin.cancel()
        self._reset_generation(reset_member_id=True)

    def take_events(self) -> list:
        """Events since the last call, oldest first; the adapter runs them as callbacks.

        A pure read of the event queue: the rejoin gate notices that the
        gating events were taken on the next ``on_app_poll`` (``EventQueue``).
        """
        return self._events.take()

    # -- protocol side --------------------------------------------------------

    def outbound(self, now_ms: int) -> list[Outbound]:
        """Requests due now.  Safe from any thread holding the adapter's lock."""
        if self._fsm.state is _STATE.FATAL:
            return []
        self._check_liveness(now_ms)
        requests = self._requests
        if self._coordinator_id is None:
            if self._may_find_coordinator() and requests.may_retry(_KIND.FIND, now_ms):
                request = m.FindCoordinatorRequest(self.config.group_id)
                return [requests.send(_KIND.FIND, request, None, self._generation)]
            return []
        out: list[Outbound] = []
        if (self._heartbeating() and not requests.in_flight(_KIND.HEARTBEAT)
                and self._hb.should_heartbeat(now_ms)):
            out.append(self._send_heartbeat(now_ms))
        # Commits first: one made in a revocation callback must reach the coordinator before the
        # JoinGroup that may end its generation (Java commits synchronously before it rejoins).
        out.extend(self._send_due_commits(now_ms))
        if self._join_ready(now_ms):
            out.append(self._send_join())
        # A LeaveGroup must not overtake a commit made before it (close commits, then leaves).
        for item in requests.take_due(now_ms, hold_leaves=self._commits.has_waiting()):
            out.append(self._send_queued(item))
        return out

    def on_response(self, token: int, response, now_ms: int) -> None:
        sent = self._requests.pop(token)
        if sent is None or self._fsm.state is _STATE.FATAL:
            return  # abandoned (coordinator changed) or stale
        expected_state = _ANSWERED_IN.get(sent.kind)
        if expected_state is not None and (self._fsm.state is not expected_state or self._closing):
            return  # the rebalance it belonged to is over
        if sent.kind is _KIND.COMMIT:
            code = commit_error_code(response)
        elif sent.kind is _KIND.FETCH:
            code = fetched_offsets(response)[0]
        else:
            code = response.error_code
        on_success = self._on_success.get(sent.kind) if code is ErrorCode.NONE else None
        if on_success is not None:
            on_success(token, sent, response, now_ms)
        else:
            self._react(sent.kind, code, token, sent, response, now_ms)

    def on_transport_error(self, token: int, now_ms: int) -> None:
        sent = self._requests.pop(token)
        if sent is None or self._fsm.state is _STATE.FATAL:
            return
        if sent.kind is _KIND.FIND:
            self._requests.retry_at(_KIND.FIND, now_ms + self.config.retry_backoff_ms)
            return
        self._abandon(token, sent, now_ms)
        self._mark_coordinator_unknown(now_ms)

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest instant at which ``outbound`` may have something new to do."""
        if self._fsm.state is _STATE.FATAL:
            return None
        requests = self._requests
        candidates = []
        if self._coordinator_id is None:
            if self._may_find_coordinator():
                candidates.append(requests.not_before_ms(_KIND.FIND))
        else:
            if self._heartbeating():
                if not requests.in_flight(_KIND.HEARTBEAT):
                    candidates.append(self._hb.next_heartbeat_ms())
                candidates.append(self._hb.session_deadline_ms())
                candidates.append(self._hb.poll_deadline_ms())
            if self._join_ready(None):
                candidates.append(requests.not_before_ms(_KIND.JOIN))
            candidates.extend(requests.queued_not_before_ms())
            commit_due_ms = self._commits.next_deadline_ms()
            if commit_due_ms is not None:
                candidates.append(commit_due_ms)
        return min(candidates) if candidates else None

    # -- sending ----------------------------------------------------------------

    def _may_find_coordinator(self) -> bool:
        wanted = (bool(self._subscription) or self._requests.has_queued() or bool(self._commits)
                  or self._rejoin.needed)
        return wanted and not self._requests.in_flight(_KIND.FIND)

    def _heartbeating(self) -> bool:
        return (not self._closing and self._generation.is_valid
                and self._fsm.state in (_STATE.STABLE, _STATE.COMPLETING_REBALANCE))

    def _join_ready(self, now_ms: Optional[int]) -> bool:
        """The gate is open and no JoinGroup/SyncGroup is outstanding (``now_ms`` None: any time)."""
        return (self._rejoin.state is Rejoin.READY and not self._requests.outstanding(_KIND.JOIN, _KIND.SYNC)
                and (now_ms is None or self._requests.may_retry(_KIND.JOIN, now_ms)))

    def _send_heartbeat(self, now_ms: int) -> Outbound:
        self._hb.sent(now_ms)
        gen = self._generation
        request = m.HeartbeatRequest(self.config.group_id, gen.generation_id, gen.member_id,
                                     self.config.group_instance_id)
        return self._requests.send(_KIND.HEARTBEAT, request, self._coordinator_id, gen)

    def _subscription_value(self, assignor) -> Subscription:
        return leader.member_subscription(self.config, assignor, self._subscription, self._owned,
                                          self._generation.generation_id, self._last_assignment)

    def _send_join(self) -> Outbound:
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
            reason=self._rejoin.reason or None, client_id=self.config.client_id,
        )
        return self._requests.send(_KIND.JOIN, request, self._coordinator_id, self._generation)

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
                current = self._generation_at_close if self._closing else self._generation
                error = commit_generation_error(gen, current, self._generation.generation_id)
                if error is not None:
                    self._finish_commit(commit.token, error)
                    continue
            request = commit_request(self.config.group_id, commit.offsets, gen, instance_id)
            self._commits.mark_sent(commit.token)
            out.append(self._requests.send(_KIND.COMMIT, request, self._coordinator_id, gen,
                                           token=commit.token))
        return out

    def _send_queued(self, item: Queued) -> Outbound:
        request: object = item.payload  # a leave, or the sync built when the join completed
        if item.kind is _KIND.FETCH:
            request = m.OffsetFetchRequest(self.config.group_id, item.payload, require_stable=True)
        return self._requests.send(item.kind, request, self._coordinator_id, self._generation,
                                   token=item.token, payload=item.payload)

    def _enqueue_commit(self, offsets: Mapping, deadline_ms: Optional[int], now_ms: int) -> int:
        """A commit stamped with the generation it is made in (see ``commits.py``)."""
        token = self._requests.next_token()
        self._commits.add(token, offsets, deadline_ms, self._generation, now_ms)
        return token

    def _enqueue_leave(self, reason: str, now_ms: int) -> None:
        identity = m.MemberIdentity(self._generation.member_id, self.config.group_instance_id, reason)
        self._requests.enqueue(_KIND.LEAVE, m.LeaveGroupRequest(self.config.group_id, (identity,)), now_ms)

    # -- answers ----------------------------------------------------------------

    def _react(self, kind: RequestKind, code: ErrorCode, token: int, sent: Sent, response,
               now_ms: int) -> None:
        """Run the steps the reaction tables list for ``code`` (``reactions.py``), in their fixed order."""
        generation_current = sent.generation == self._generation
        reaction = reaction_to(kind, code, generation_current)
        error = request_error(kind, code, generation_current)
        for step in STEP_ORDER:
            if step not in reaction:
                continue
            if step is Reaction.SESSION_ALIVE:
                self._hb.received(now_ms)
            elif step is Reaction.HEARTBEAT_FAILED:
                self._hb.fail()
            elif step is Reaction.RECORD_ERROR:
                self.last_error = error
            elif step is Reaction.MARK_COORDINATOR_UNKNOWN:
                self._mark_coordinator_unknown(now_ms)
            elif step is Reaction.ADOPT_MEMBER_ID:
                self._generation = Generation(NO_GENERATION, response.member_id, None)
            elif step is Reaction.RESET_GENERATION:
                self._reset_generation(reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
            elif step is Reaction.REJOIN:
                self._rejoin.request(rejoin_reason(kind, code))
            elif step is Reaction.RETRY_NOW:
                self._requests.retry_at(_KIND.JOIN, now_ms)
            elif step is Reaction.RETRY:
                self._retry(kind, token, sent, code, now_ms)
            elif step is Reaction.REPORT:
                self._report(kind, token, response, error)
            elif step is Reaction.FAIL and error is not None:  # never a success's row
                self._fail(error)

    def _retry(self, kind: RequestKind, token: int, sent: Sent, code: ErrorCode, now_ms: int) -> None:
        retry_at_ms = now_ms + self.config.retry_backoff_ms
        if kind is _KIND.COMMIT:
            self._retry_or_fail_commit(token, code, now_ms)
        elif kind is _KIND.FETCH:
            self._requests.enqueue(_KIND.FETCH, sent.payload, retry_at_ms, token=token)
        elif kind is _KIND.FIND:
            self._requests.retry_at(_KIND.FIND, retry_at_ms)
        else:  # a JoinGroup, or a SyncGroup redone by rejoining
            self._requests.retry_at(_KIND.JOIN, retry_at_ms)

    def _report(self, kind: RequestKind, token: int, response, error: Optional[KGroupError]) -> None:
        if kind is _KIND.COMMIT:
            self._finish_commit(token, error)
        else:
            self._events.append(CommittedFetched(token, fetched_offsets(response)[1], error))

    def _found_coordinator(self, token: int, sent: Sent, response: m.FindCoordinatorResponse,
                           now_ms: int) -> None:
        if response.node_id < 0:
            self._retry(_KIND.FIND, token, sent, ErrorCode.NONE, now_ms)
            return
        self._coordinator_id = response.node_id
        self._hb.reset_session(now_ms)

    def _joined(self, token: int, sent: Sent, response: m.JoinGroupResponse, now_ms: int) -> None:
        if response.generation_id < 0 or not response.member_id:
            # A broker bug, not a generation: joining it would let the member heartbeat and commit
            # as generation -1 (a simple consumer).  Record it and join again after the backoff.
            self.last_error = ProtocolError(self._fsm.state, response,
                                            "a successful JoinGroup response must carry a generation "
                                            f"and a member id (got {response.generation_id}, "
                                            f"{response.member_id!r})")
            _log.warning("group %s: %s", self.config.group_id, self.last_error)
            self._retry(_KIND.JOIN, token, sent, ErrorCode.NONE, now_ms)
            return
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
        self._assignment_snapshot = None
        self._adopt_unknown_counts = self._is_leader and response.skip_assignment
        if self._is_leader:
            try:
                self._assignment_snapshot, assignments = leader.leader_assignments(
                    self.config, response, self._metadata)
            except KGroupError as exc:
                self._fail(exc)
                return
        request = m.SyncGroupRequest(
            self.config.group_id, response.generation_id, response.member_id,
            self.config.group_instance_id, m.CONSUMER_PROTOCOL_TYPE, response.protocol_name, assignments)
        self._requests.enqueue(_KIND.SYNC, request, now_ms, first=True)

    def _synced(self, token: int, sent: Sent, response: m.SyncGroupResponse, now_ms: int) -> None:
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
        self._rejoin.cancel()
        revoked = self._owned - new
        added = new - self._owned
        if revoked:
            # Only cooperative members still own partitions here (eager revoked all before joining).
            if self.config.enable_auto_commit and self._positions:
                self._enqueue_commit(self._positions, None, now_ms)
            self._emit_gating(PartitionsRevoked(revoked))
            self._rejoin.request("partitions were revoked (KIP-429 second round)")
        self._owned = new
        self._last_assignment = (new, self._generation.generation_id)
        self._events.append(PartitionsAssigned(added, new, self._generation, decoded.user_data))
        if self._joined_topics != self._subscription:
            self._rejoin.request("subscription changed during the rebalance")
        elif any(tp.topic not in self._subscription for tp in new):
            self._rejoin.request("assigned a topic this member does not subscribe to")
        if self.config.fetch_committed_on_assignment and added:
            self.fetch_committed(sorted(added), now_ms)

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
            self._rejoin.commit_finished(finished.token)
            self._events.append(CommitCompleted(finished.token, finished.requested, error))

    def _abandon(self, token: int, sent: Sent, now_ms: int) -> None:
        """A coordinator request that will get no answer (transport error, coordinator moved)."""
        if sent.kind is _KIND.HEARTBEAT:
            self._hb.fail()
        elif sent.kind is _KIND.JOIN:
            self._retry(_KIND.JOIN, token, sent, ErrorCode.REQUEST_TIMED_OUT, now_ms)
        elif sent.kind is _KIND.SYNC:
            self._rejoin.request("sync got no answer")
        elif sent.kind in (_KIND.COMMIT, _KIND.FETCH):
            self._retry(sent.kind, token, sent, ErrorCode.REQUEST_TIMED_OUT, now_ms)

    # -- membership ---------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closing:
            raise MemberClosedError("the group member is closed")
        if self._fsm.state is _STATE.FATAL:
            raise MemberClosedError(f"the group member failed: {self.last_error}")

    def _check_liveness(self, now_ms: int) -> None:
        if self._coordinator_id is None or not self._heartbeating():
            return
        if self._hb.session_expired(now_ms):
            # No heartbeat answer for a whole session: suspect the coordinator (Java
            # AbstractCoordinator.HeartbeatThread: "session timed out without receiving a response").
            self._mark_coordinator_unknown(now_ms)
        elif self._hb.poll_expired(now_ms):
            # The app stalled between polls.  Dynamic members leave so the group
            # rebalances now; static members only stop heartbeating (as Java does)
            # and the coordinator expires them after the session timeout.
            if not self.config.is_static:
                self._enqueue_leave("consumer poll timeout has expired", now_ms)
            self._reset_generation(reset_member_id=not self.config.is_static)
            self._rejoin.request("poll timeout expired")

    def _mark_coordinator_unknown(self, now_ms: int) -> None:
        if self._coordinator_id is None:
            return
        self._coordinator_id = None
        self._requests.retry_at(_KIND.FIND, now_ms)
        for token, sent in self._requests.abandon_coordinator_requests():
            self._abandon(token, sent, now_ms)

    def _reset_generation(self, reset_member_id: bool) -> None:
        member_id = m.UNKNOWN_MEMBER_ID if reset_member_id else self._generation.member_id
        self._generation = Generation(NO_GENERATION, member_id, None)
        self._is_leader = False
        self._assignment_snapshot = None
        if self._fsm.state not in (_STATE.UNJOINED, _STATE.FATAL):
            self._fsm.transition_to(_STATE.UNJOINED)
        if self._owned:
            self._rejoin.unprepare()  # the owned partitions must be reported lost first

    def _maybe_prepare_join(self, now_ms: int) -> None:
        """Java ConsumerCoordinator.onJoinPrepare: pre-join commit, then revoke (eager) or lose."""
        if (self._rejoin.state is not Rejoin.NEEDED or not self._subscription or self._coordinator_id is None
                or self._requests.in_flight(_KIND.JOIN) or self._requests.in_flight(_KIND.SYNC)):
            return
        lost = not self._generation.is_valid
        prejoin_commit = None
        if self.config.enable_auto_commit and not lost and self._positions:
            prejoin_commit = self._enqueue_commit(
                self._positions, now_ms + self.config.effective_rebalance_timeout_ms, now_ms)
        if lost:
            gone = self._owned
        elif self.protocol is RebalanceProtocol.EAGER:
            gone = self._owned
        else:
            gone = frozenset(tp for tp in self._owned if tp.topic not in self._subscription)
        if gone:
            self._emit_gating(PartitionsLost(gone) if lost else PartitionsRevoked(gone))
            self._owned -= gone
        self._rejoin.prepared(prejoin_commit, self._events.delivered_count)

    def _emit_gating(self, event) -> None:
        """An event the app must see before the member rejoins."""
        self._rejoin.gate_on(self._events.append(event))

    def _release_partitions(self) -> None:
        if self._owned:
            lost = not self._generation.is_valid
            self._events.append(PartitionsLost(self._owned) if lost else PartitionsRevoked(self._owned))
            self._owned = frozenset()

    def _fail(self, error: KGroupError) -> None:
        self.last_error = error
        for token in self._commits.tokens():
            self._finish_commit(token, error)
        self._requests.clear()
        if self._owned:
            self._events.append(PartitionsLost(self._owned))
            self._owned = frozenset()
        self._fsm.transition_to(_STATE.FATAL)
        self._events.append(FatalError(error))
