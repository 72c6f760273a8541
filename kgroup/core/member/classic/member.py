"""The group member: a sans-I/O driver of Kafka's classic consumer group protocol.

Everything enters as a method call with an integer ``now_ms``; everything
leaves as :class:`Outbound` requests (``outbound``) and application events
(``take_events``).  The adapter owns the transport, the clock and the
threads; see ``kgroup/core/member/__init__.py`` for the contract and
``docs/member.md`` for where this departs from Java's ConsumerCoordinator.

This module is the protocol: which request goes out when and what each
answer does.  The member's state and read-only API are in ``view.py``; what
the protocol drives is split as Java splits AbstractCoordinator
(``coordinator_link.py``, ``membership.py``, ``requests.py``, ``reactions.py``,
``states.py``) from ConsumerCoordinator (``rejoin.py``, ``assignment.py``,
``leader.py``, ``committer.py``); ``docs/member.md`` lists every module.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.classic import leader, membership, reactions
from kgroup.core.member.classic.assignment import assignment_change
from kgroup.core.member.classic.config import MemberConfig
from kgroup.core.member.classic.reactions import Reaction
from kgroup.core.member.classic.rejoin import Rejoin
from kgroup.core.member.classic.states import ClassicMemberState
from kgroup.core.member.classic.view import MemberView
from kgroup.core.member.shared.events import NO_GENERATION_VALUE, FatalError, Generation
from kgroup.core.member.shared.offsets import normalize_offsets
from kgroup.core.member.shared.requests import Outbound, RequestKind, Sent
from kgroup.errors import ConfigError, KGroupError, ProtocolError
from kgroup.values import INTERNAL_TOPICS, NO_GENERATION, Subscription, TopicPartition

__all__ = ["GroupMember", "NO_GENERATION_VALUE", "Outbound"]

_log = logging.getLogger(__name__)
_STATE = ClassicMemberState
_KIND = RequestKind
#: An answer to a JoinGroup / SyncGroup counts only in the state that sent it (others are stale).
_ANSWERED_IN = {_KIND.JOIN: _STATE.PREPARING_REBALANCE, _KIND.SYNC: _STATE.COMPLETING_REBALANCE}


class GroupMember(MemberView):
    """One consumer's membership of one group: the protocol (see the package docstring)."""

    def __init__(self, config: MemberConfig, now_ms: int) -> None:
        super().__init__(config, now_ms)
        #: Successes that are more than a reaction-table row.
        self._on_success: dict[RequestKind, Callable[[int, Sent, Any, int], None]] = {
            _KIND.FIND: self._found_coordinator, _KIND.JOIN: self._joined, _KIND.SYNC: self._synced,
        }

    # -- application side -----------------------------------------------------

    def _subscription_changed(self) -> None:
        self._rejoin.request("subscription changed")

    def unsubscribe(self, now_ms: int) -> None:
        """Give up every partition and leave the group (dynamic members)."""
        self._check_open()
        self._subscription = frozenset()
        self._subscription_pattern = self._pattern = None
        self._stop(not self.config.is_static, "the consumer unsubscribed", now_ms)

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
        self._commits.record_positions(positions)
        if self._fsm.state is _STATE.STABLE:
            self._commits.auto_commit_on_interval(self._generation, now_ms)
        self._rejoin.app_polled(self._events.delivered_count)
        self._maybe_prepare_join(now_ms)

    def subscribe(self, topics: Sequence[str], now_ms: int) -> None:
        self._pattern = None
        super().subscribe(topics, now_ms)

    def subscribe_pattern(self, pattern: str, now_ms: int) -> None:
        """Java's ``subscribe(Pattern)`` with the classic protocol: the member matches ``pattern``
        against the topics ``update_metadata`` names (whole names, internal topics excluded, as
        ``ConsumerCoordinator.updatePatternSubscription``) and follows them."""
        self._check_open()
        try:
            compiled = re.compile(pattern)
        except (re.error, TypeError) as error:
            raise ConfigError(f"invalid subscription pattern {pattern!r}: {error}") from None
        self._subscription_pattern, self._pattern = pattern, compiled
        self._follow_pattern(now_ms)

    def _follow_pattern(self, now_ms: int) -> None:
        if self._pattern is not None:
            matched = [t for t in sorted(self._known_topics)
                       if t not in INTERNAL_TOPICS and self._pattern.fullmatch(t)]
            if matched:
                self._subscribe_topics(matched, now_ms)

    def update_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None:
        """Partition counts of the known topics; the leader rejoins when its group's counts changed."""
        self._known_topics = frozenset(partitions_per_topic)
        self._follow_pattern(now_ms)
        if self._leader.update(partitions_per_topic) and self.is_leader and self._fsm.state is _STATE.STABLE:
            self._rejoin.request("partition count of a subscribed topic changed")

    def request_rejoin(self, reason: str) -> None:
        self._check_open()
        self._rejoin.request(reason)

    def commit_offsets(self, offsets: Mapping[TopicPartition, Union[int, m.OffsetAndMetadata]],
                       now_ms: int, deadline_ms: Optional[int] = None,
                       generation: Optional[Generation] = None) -> int:
        """Queue a commit with the current generation; its result is a CommitCompleted(token).

        ``generation`` stamps the commit with the generation the offsets were produced in when the
        application read them earlier (default: the current one).  A commit whose generation is
        no longer the member's fails without being sent, as any commit of a gone generation.
        Retriable failures are retried until ``deadline_ms`` (None: reported at once).
        """
        self._check_open()
        stamp = self._generation if generation is None else generation
        return self._commits.commit(normalize_offsets(offsets), deadline_ms, stamp, now_ms)

    def fetch_committed(self, partitions: Sequence[TopicPartition], now_ms: int) -> int:
        """Queue an OffsetFetch; its result is a CommittedFetched(token)."""
        self._check_open()
        return self._commits.fetch(partitions, now_ms)

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
        self._commits.record_positions(positions)
        if self._fsm.state is _STATE.STABLE:
            self._commits.auto_commit(self._generation, now_ms)
        # The closing commit still goes out in the generation it was made in.
        self._commits.close(self._generation)
        self._requests.drop((_KIND.JOIN, _KIND.SYNC))
        self._closing = True
        self._stop(self.config.leaves_on_close(leave_group), "the consumer is closing", now_ms)

    # -- protocol side --------------------------------------------------------

    def outbound(self, now_ms: int) -> list[Outbound]:
        """Requests due now.  Safe from any thread holding the adapter's lock."""
        if self._fsm.state is _STATE.FATAL:
            return []
        self._check_liveness(now_ms)
        if not self._coordinator.known:
            return self._coordinator.find(now_ms, self._generation) if self._wants_coordinator() else []
        out = self._coordinator.heartbeat(now_ms, self._generation) if self._heartbeating() else []
        # Commits first: one made in a revocation callback must reach the coordinator before the
        # JoinGroup that may end its generation (Java commits synchronously before it rejoins).
        out.extend(self._commits.send_due(now_ms, self._generation, self._coordinator.node_id,
                                          group_managed=bool(self._subscription)))
        if self._join_ready(now_ms):
            out.append(self._send_join())
        # A LeaveGroup must not overtake a commit made before it (close commits, then leaves).
        for item in self._requests.take_due(now_ms, hold_leaves=self._commits.has_waiting()):
            # A leave, an offset fetch, or the sync built when the join completed.
            out.append(self._send(item.kind, item.payload, token=item.token, payload=item.payload))
        return out

    def on_response(self, token: int, response, now_ms: int) -> None:
        sent = self._requests.pop(token)
        if sent is None or self._fsm.state is _STATE.FATAL:
            return  # abandoned (coordinator changed) or stale
        expected_state = _ANSWERED_IN.get(sent.kind)
        if expected_state is not None and (self._fsm.state is not expected_state or self._closing):
            return  # the rebalance it belonged to is over
        code = reactions.answer_code(sent.kind, response)
        on_success = self._on_success.get(sent.kind) if code is ErrorCode.NONE else None
        if on_success is not None:
            on_success(token, sent, response, now_ms)
        else:
            self._react(sent.kind, code, token, sent, response, now_ms)

    def get_timer(self) -> Optional[int]:
        """The earliest instant at which ``outbound`` may have something new to do."""
        if self._fsm.state is _STATE.FATAL:
            return None
        if not self._coordinator.known:
            return self._coordinator.find_due_ms() if self._wants_coordinator() else None
        # The earliest of the candidates below, without building a list of them: a driver asks after
        # every poll and every step (the simulator about 11,000 times a seed).
        best: Optional[int] = None
        if self._heartbeating():
            best = self._coordinator.earliest_heartbeat_deadline_ms()
        if self._join_ready(None):
            due = self._requests.not_before_ms(_KIND.JOIN)
            if best is None or due < best:
                best = due
        if self._requests.has_queued():
            due = min(self._requests.queued_not_before_ms())
            if best is None or due < best:
                best = due
        commit_due_ms = self._commits.get_timer()
        if commit_due_ms is not None and (best is None or commit_due_ms < best):
            best = commit_due_ms
        return best

    # -- sending ----------------------------------------------------------------

    def _wants_coordinator(self) -> bool:
        return (bool(self._subscription) or self._requests.has_queued() or bool(self._commits)
                or self._rejoin.needed)

    def _heartbeating(self) -> bool:
        return (not self._closing and self._generation.is_valid
                and self._fsm.state in (_STATE.STABLE, _STATE.COMPLETING_REBALANCE))

    def _join_ready(self, now_ms: Optional[int]) -> bool:
        """The gate is open and no JoinGroup/SyncGroup is outstanding (``now_ms`` None: any time)."""
        return (self._rejoin.state is Rejoin.READY and not self._requests.outstanding(_KIND.JOIN, _KIND.SYNC)
                and (now_ms is None or self._requests.may_retry(_KIND.JOIN, now_ms)))

    def _send(self, kind: RequestKind, request: object, **sent: Any) -> Outbound:
        """Send to the coordinator, in the current generation."""
        return self._requests.send(kind, request, self._coordinator.node_id, self._generation, **sent)

    def _subscription_value(self, assignor) -> Subscription:
        """What the member joins with, for ``assignor``'s protocol entry (``leader.py``)."""
        return leader.member_subscription(self.config, assignor, self._subscription,
                                          self._ownership.partitions, self._generation.generation_id,
                                          self._last_assignment)

    def _send_join(self) -> Outbound:
        if self._fsm.state is not _STATE.PREPARING_REBALANCE:
            self._fsm.transition_to(_STATE.PREPARING_REBALANCE)
        self._joined_topics = self._subscription
        return self._send(_KIND.JOIN, membership.join_request(
            self.config, self._generation.member_id, self._subscription_value, self._rejoin.reason))

    def _enqueue_leave(self, reason: str, now_ms: int) -> None:
        request = membership.leave_request(self.config, self._generation.member_id, reason)
        self._requests.enqueue(_KIND.LEAVE, request, now_ms)

    # -- answers ----------------------------------------------------------------

    def _react(self, kind: RequestKind, code: ErrorCode, token: int, sent: Sent, response,
               now_ms: int) -> None:
        """Run the steps the reaction tables list for ``code`` (``reactions.py``), in their fixed order."""
        generation_current = sent.generation == self._generation
        reaction = reactions.reaction_to(kind, code, generation_current)
        error = reactions.request_error(kind, code, generation_current)
        for step in reactions.steps_of(reaction):
            if step is Reaction.SESSION_ALIVE:
                self._hb.received(now_ms)
            elif step is Reaction.HEARTBEAT_FAILED:
                self._hb.fail()
            elif step is Reaction.RECORD_ERROR:
                self.last_error = error
            elif step is Reaction.MARK_COORDINATOR_UNKNOWN:
                self._lose_coordinator(now_ms)
            elif step is Reaction.ADOPT_MEMBER_ID:
                self._generation = Generation(NO_GENERATION, response.member_id, None)
            elif step is Reaction.RESET_GENERATION:
                self._reset_generation(reset_member_id=code is ErrorCode.UNKNOWN_MEMBER_ID)
            elif step is Reaction.REJOIN:
                self._rejoin.request(reactions.rejoin_reason(kind, code))
            elif step is Reaction.RETRY_NOW:
                self._requests.retry_at(_KIND.JOIN, now_ms)
            elif step is Reaction.RETRY:
                self._retry(kind, token, sent, code, now_ms)
            elif step is Reaction.REPORT:
                self._commits.report(token, sent, response, error)
            elif step is Reaction.FAIL and error is not None:  # never a success's row
                self._fail(error)

    def _retry(self, kind: RequestKind, token: int, sent: Sent, code: ErrorCode, now_ms: int) -> None:
        if kind in (_KIND.COMMIT, _KIND.FETCH):
            self._commits.retry(token, sent, code, now_ms)
        elif kind is _KIND.FIND:
            self._coordinator.retry_find(now_ms)
        else:  # a JoinGroup, or a SyncGroup redone by rejoining
            self._requests.retry_at(_KIND.JOIN, now_ms + self.config.retry_backoff_ms)

    def _found_coordinator(self, token: int, sent: Sent, response: m.FindCoordinatorResponse,
                           now_ms: int) -> None:
        self._coordinator.found(response, now_ms)

    def _joined(self, token: int, sent: Sent, response: m.JoinGroupResponse, now_ms: int) -> None:
        error = membership.join_answer_error(self._fsm.state, response)
        if isinstance(error, ProtocolError):  # a broker bug: record it and join again after the backoff
            self.last_error = error
            _log.warning("group %s: %s", self.config.group_id, error)
            self._retry(_KIND.JOIN, token, sent, ErrorCode.NONE, now_ms)
            return
        if error is not None:
            self._fail(error)
            return
        self._generation = Generation(response.generation_id, response.member_id, response.protocol_name)
        self._fsm.transition_to(_STATE.COMPLETING_REBALANCE)
        self._hb.reset_timeouts(now_ms)
        try:
            assignments = self._leader.joined(self.config, response)
        except KGroupError as exc:
            self._fail(exc)
            return
        request = membership.sync_request(self.config, response, assignments)
        self._requests.enqueue(_KIND.SYNC, request, now_ms, first=True)

    def _synced(self, token: int, sent: Sent, response: m.SyncGroupResponse, now_ms: int) -> None:
        try:
            membership.check_sync_answer(response, self._generation)
            change = assignment_change(self._ownership.partitions, response.assignment, self._subscription,
                                       self._joined_topics)
        except KGroupError as exc:
            self._fail(exc)
            return
        self._fsm.transition_to(_STATE.STABLE)
        self._rejoin.cancel()
        if change.revoked:  # only cooperative members still own partitions here (eager revoked them)
            self._commits.auto_commit(self._generation, now_ms)  # before the revocation callback runs
        self._ownership.assign(change, self._generation)
        self._last_assignment = (change.owned, self._generation.generation_id)
        if change.rejoin_reason is not None:
            self._rejoin.request(change.rejoin_reason)
        elif self.is_leader and self._leader.outdated():
            # A count changed while the rebalance was running (update_metadata only acts when Stable).
            self._rejoin.request("partition count of a subscribed topic changed")
        if self.config.fetch_committed_on_assignment and change.added:
            self.fetch_committed(sorted(change.added), now_ms)

    def _abandon(self, token: int, sent: Sent, now_ms: int) -> None:
        """A coordinator request that will get no answer (transport error, coordinator moved)."""
        if sent.kind is _KIND.HEARTBEAT:
            self._hb.fail()
        elif sent.kind is _KIND.SYNC:
            self._rejoin.request("sync got no answer")
        elif sent.kind is not _KIND.LEAVE:  # a join, commit or fetch: retried as if it timed out
            self._retry(sent.kind, token, sent, ErrorCode.REQUEST_TIMED_OUT, now_ms)

    # -- membership ---------------------------------------------------------------

    def _check_liveness(self, now_ms: int) -> None:
        if not self._coordinator.known or not self._heartbeating():
            return
        if self._hb.session_expired(now_ms):
            # No heartbeat answer for a whole session: suspect the coordinator (Java
            # AbstractCoordinator.HeartbeatThread: "session timed out without receiving a response").
            self._lose_coordinator(now_ms)
        elif self._hb.poll_expired(now_ms):
            # The app stalled between polls.  Dynamic members leave so the group
            # rebalances now; static members only stop heartbeating (as Java does)
            # and the coordinator expires them after the session timeout.
            if not self.config.is_static:
                self._enqueue_leave("consumer poll timeout has expired", now_ms)
            self._reset_generation(reset_member_id=not self.config.is_static)
            self._rejoin.request("poll timeout expired")

    def _lose_coordinator(self, now_ms: int) -> None:
        for token, sent in self._coordinator.lose(now_ms):
            self._abandon(token, sent, now_ms)

    def _reset_generation(self, reset_member_id: bool) -> None:
        member_id = m.UNKNOWN_MEMBER_ID if reset_member_id else self._generation.member_id
        self._generation = Generation(NO_GENERATION, member_id, None)
        self._leader.reset()
        if self._fsm.state not in (_STATE.UNJOINED, _STATE.FATAL):
            self._fsm.transition_to(_STATE.UNJOINED)
        if self._ownership.partitions:
            self._rejoin.unprepare()  # the owned partitions must be reported lost first

    def _stop(self, leave: bool, reason: str, now_ms: int) -> None:
        """Java onLeavePrepare + maybeLeaveGroup: give up every partition, leave, forget the generation."""
        self._rejoin.cancel()
        self._ownership.release(lost=not self._generation.is_valid)
        if leave and self._generation.member_id and self._fsm.state is not _STATE.UNJOINED:
            self._enqueue_leave(reason, now_ms)
        self._reset_generation(reset_member_id=True)

    def _maybe_prepare_join(self, now_ms: int) -> None:
        """Java ConsumerCoordinator.onJoinPrepare: pre-join commit, then revoke (eager) or lose."""
        if (self._rejoin.state is not Rejoin.NEEDED or not self._subscription or not self._coordinator.known
                or self._requests.in_flight(_KIND.JOIN) or self._requests.in_flight(_KIND.SYNC)):
            return
        prejoin_commit = None
        if self._generation.is_valid:
            prejoin_commit = self._commits.auto_commit(self._generation, now_ms,
                                                       now_ms + self.config.effective_rebalance_timeout_ms)
        self._ownership.give_up_before_join(self._subscription, self.protocol, self._generation)
        self._rejoin.prepared(prejoin_commit, self._events.delivered_count)

    def _fail(self, error: KGroupError) -> None:
        self.last_error = error
        self._commits.fail_all(error)
        self._requests.clear()
        self._ownership.release(lost=True)
        self._fsm.transition_to(_STATE.FATAL)
        self._events.append(FatalError(error))
