"""The KIP-848 group member: a sans-I/O driver of the "consumer" group protocol.

Kafka's ``ConsumerMembershipManager`` / ``AbstractMembershipManager`` (the
member's states, reconciliation, fencing and leaving) and
``ConsumerHeartbeatRequestManager`` (when a heartbeat goes out and what it
carries), driven like kgroup's classic :class:`~kgroup.core.member.GroupMember`:
everything enters as a method call with an integer ``now_ms`` and leaves as
:class:`~kgroup.core.member.shared.requests.Outbound` requests and application
events, so the adapters drive both members the same way (see the package
docstring).

Where kgroup departs from Kafka's client, and why:

- Callbacks are events the adapter runs on the polling thread; a step that
  waits on a callback (revoke, assign, release on fencing or leaving)
  completes on the application's next ``on_app_poll`` after the event was
  taken, as the classic member's rejoin gate does.
- A JOINING or ACKNOWLEDGING heartbeat still honours the retry backoff
  after a failure (Kafka sends those at once, backoff or not).
- The leave heartbeat waits for the commits made before it and the member
  keeps its epoch until that heartbeat is built, so a commit made in the
  last revocation callback still carries a valid epoch.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Sequence, Union

import attrs

from kgroup.core import messages as m
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatResponse
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.consumer import heartbeat_errors
from kgroup.core.member.consumer.config import ConsumerProtocolConfig
from kgroup.core.member.consumer.heartbeat_errors import HeartbeatReaction
from kgroup.core.member.consumer.heartbeat_fields import build_heartbeat
from kgroup.core.member.consumer.member_id import RandomBytes
from kgroup.core.member.consumer.reconciler import ConsumerAssignmentReconciler
from kgroup.core.member.consumer.states import (
    CAN_HANDLE_NEW_ASSIGNMENT,
    HEARTBEATS_NOW,
    LEAVING_GROUP,
    NOT_IN_GROUP,
    SKIPS_HEARTBEAT,
    ConsumerMemberState,
)
from kgroup.core.member.shared.events import NO_GENERATION_VALUE, Generation
from kgroup.core.member.shared.offsets import COORDINATOR_MOVED, normalize_offsets
from kgroup.core.member.shared.requests import Outbound, RequestKind, Sent
from kgroup.errors import ConfigError
from kgroup.values import TopicPartition

__all__ = ["ConsumerProtocolMember"]

_log = logging.getLogger(__name__)
_S = ConsumerMemberState
_KIND = RequestKind
#: States in which the member holds an epoch and auto-commits.
_MEMBER_WITH_EPOCH = frozenset({_S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING})


@attrs.frozen
class HeartbeatSent:
    """What a heartbeat in flight belonged to: its membership, and whether it was the leave."""

    membership: int
    leaving: bool


class ConsumerProtocolMember(ConsumerAssignmentReconciler):
    """One consumer's membership of one KIP-848 group (see the module docstring)."""

    def __init__(self, config: ConsumerProtocolConfig, now_ms: int, random_bytes: RandomBytes) -> None:
        super().__init__(config, now_ms, random_bytes)
        self._commits.on_finished = self._commit_finished

    # -- application side ------------------------------------------------------------

    def _subscription_changed(self) -> None:
        """Kafka ``onSubscriptionUpdated``: joins on the next poll; in a group, the next heartbeat says it."""
        self._subscription_updated = True

    def subscribe_pattern(self, pattern: str, now_ms: int) -> None:
        """Subscribe to the topics matching ``pattern``, resolved by the coordinator (KIP-848's
        SubscribedTopicRegex, Java's ``subscribe(SubscriptionPattern)``): RE2/J syntax, matched against
        whole topic names; a regex the coordinator refuses fails the member (INVALID_REGULAR_EXPRESSION)."""
        self._check_open()
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(f"a subscription pattern must be a non-empty string, got {pattern!r}")
        if self.config.heartbeat_api_version < 1:
            raise ConfigError("regex subscriptions need ConsumerGroupHeartbeat v1 (heartbeat_api_version=1)")
        if pattern != self._subscription_pattern or self._subscription:
            self._subscription_pattern = pattern
            self._subscription = frozenset()
            self._subscription_changed()

    def unsubscribe(self, now_ms: int) -> None:
        """Release every partition (callbacks) and leave the group."""
        self._check_open()
        self._subscription = frozenset()
        self._subscription_pattern = None
        self._subscription_updated = False
        self._leave_group()

    def update_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None:
        """Nothing to do: the coordinator watches the topics and reassigns (KIP-848)."""

    def request_rejoin(self, reason: str) -> None:
        """Kafka's consumer ignores ``enforceRebalance`` with this protocol: the coordinator decides."""
        self._check_open()
        _log.debug("group %s: rejoin requested (%s) ignored with group_protocol='consumer'",
                   self.config.group_id, reason)

    def on_app_poll(self, now_ms: int, positions: Optional[Mapping] = None) -> None:
        """The application polled (polling thread only); it ran the callbacks of the events it took.

        Resets the poll timer (a STALE member then rejoins), records the
        positions for auto-commit, joins after a subscription, and moves a
        reconciliation, a fencing or a leave on past the callbacks it waited for.
        """
        if self._fsm.state is _S.FATAL:
            return
        if not self._closing:
            if self._schedule.poll_expired(now_ms) or self._left_on_poll_timeout:
                # Kafka ``resetPollTimer`` -> ``maybeRejoinStaleMember``.
                self._left_on_poll_timeout = False
                self._stale_may_rejoin = True
            self._schedule.poll(now_ms)
            self._commits.record_positions(positions)
            if self._fsm.state in _MEMBER_WITH_EPOCH and self.member_epoch > 0:
                self._commits.auto_commit_on_interval(self._stamp(), now_ms)
            if self._subscription_updated:
                # Kafka ``onConsumerPoll``: a new subscription joins only from a poll.
                self._subscription_updated = False
                if self._fsm.state is _S.UNSUBSCRIBED and self._subscribed():
                    self._transition_to_joining()
        self._advance(now_ms)

    def commit_offsets(self, offsets: Mapping[TopicPartition, Union[int, m.OffsetAndMetadata]], now_ms: int,
                       deadline_ms: Optional[int] = None, generation: Optional[Generation] = None) -> int:
        """Queue a commit; its result is a CommitCompleted(token).  Retried until ``deadline_ms``.

        ``generation`` is the classic member's (the generation the offsets were read in); this
        protocol stamps every commit with the member epoch of the moment it is sent, so it refuses one.
        """
        if generation is not None:
            raise ConfigError("commit(generation=...) is for the classic group protocol")
        self._check_open()
        stamp = self._stamp() if self._group_managed() else NO_GENERATION_VALUE
        return self._commits.commit(normalize_offsets(offsets), deadline_ms, stamp, now_ms)

    def fetch_committed(self, partitions: Sequence[TopicPartition], now_ms: int) -> int:
        """Queue an OffsetFetch (v9: with the member id and epoch); its result is CommittedFetched(token)."""
        self._check_open()
        in_group = self.member_epoch > 0 and self._fsm.state not in NOT_IN_GROUP
        return self._commits.fetch(partitions, self.member_id if in_group else None,
                                   self.member_epoch if in_group else -1, now_ms)

    def close(self, now_ms: int, leave_group: Optional[bool] = None,
              positions: Optional[Mapping] = None) -> None:
        """Auto-commit, release the partitions (callbacks) and leave; drive ``outbound`` until ``closed``."""
        if self._closing:
            return
        self._closing = True
        if self._fsm.state is _S.FATAL:
            return
        self._commits.record_positions(positions)
        if self._fsm.state in _MEMBER_WITH_EPOCH and self.member_epoch > 0:
            self._commits.auto_commit(self._stamp(), now_ms)
        self._stay_in_group_on_close = not self.config.leaves_on_close(leave_group)
        self._leave_group()

    # -- protocol side -----------------------------------------------------------------

    def outbound(self, now_ms: int) -> list[Outbound]:
        """Requests due now.  Safe from any thread holding the adapter's lock."""
        if self._fsm.state is _S.FATAL:
            return []
        if self.coordinator_id is None:
            if self._fsm.state is _S.LEAVING:
                # Kafka ``onHeartbeatRequestSkipped``: no coordinator, no leave heartbeat.
                self._left(now_ms)
            return self._find_coordinator(now_ms) if self._wants_coordinator() else []
        out: list[Outbound] = []
        if self._poll_timer_expired(now_ms):
            _log.warning("group %s: no poll within max_poll_interval_ms (%d ms); the member leaves the "
                         "group and rejoins on its next poll", self.config.group_id,
                         self.config.max_poll_interval_ms)
            self._transition_to_sending_leave(due_to_poll_timeout=True)
            self._requests.drop((_KIND.HEARTBEAT,))  # the leave answers for the member now
        # Commits first: one made in a callback reaches the coordinator before the heartbeat after it.
        out.extend(self._commits.send_due(now_ms, self._stamp(), self.member_epoch, self.coordinator_id,
                                          group_managed=self._group_managed()))
        if self._heartbeat_due(now_ms):
            out.append(self._send_heartbeat(now_ms))
        for item in self._requests.take_due(now_ms, hold_leaves=False):
            request = self._with_member_info(item.payload)
            out.append(self._requests.send(item.kind, request, self.coordinator_id, self.generation,
                                           token=item.token, payload=request))
        return out

    def _with_member_info(self, request: Any) -> Any:
        """An offset fetch asked as a member carries the member id and epoch of now (Kafka's memberInfo)."""
        if isinstance(request, m.OffsetFetchRequest) and request.member_id is not None:
            if self._fsm.state not in NOT_IN_GROUP and self.member_epoch > 0:
                return attrs.evolve(request, member_id=self.member_id, member_epoch=self.member_epoch)
        return request

    def on_response(self, token: int, response: Any, now_ms: int) -> None:
        sent = self._requests.pop(token)
        if sent is None or self._fsm.state is _S.FATAL:
            return
        if sent.kind is _KIND.FIND:
            self._found_coordinator(response, now_ms)
        elif sent.kind is _KIND.HEARTBEAT:
            self._heartbeat_answered(sent, response, now_ms)
        elif sent.kind is _KIND.LEAVE:
            pass  # Kafka ignores what the coordinator says to a leave
        elif sent.kind is _KIND.COMMIT:
            pending = self._commits.stamp_of(token)
            code = self._commits.on_commit_answer(token, response, now_ms,
                                                  still_member=pending == self._stamp() and pending.is_valid,
                                                  owned=self._owned)
            if code in COORDINATOR_MOVED:
                self._lose_coordinator(now_ms)
        elif sent.kind is _KIND.FETCH:
            still_member = self._fsm.state not in NOT_IN_GROUP and self.member_epoch > 0
            code = self._commits.on_fetch_answer(token, sent, response, now_ms, still_member)
            if code in COORDINATOR_MOVED:
                self._lose_coordinator(now_ms)

    def get_timer(self) -> Optional[int]:
        """The earliest instant at which ``outbound`` may have something new to do."""
        if self._fsm.state is _S.FATAL:
            return None
        if self.coordinator_id is None:
            if self._fsm.state is _S.LEAVING:
                return 0  # the skipped leave completes on the next outbound
            if not self._wants_coordinator() or self._requests.in_flight(_KIND.FIND):
                return None
            return self._requests.not_before_ms(_KIND.FIND)
        candidates = list(self._requests.queued_not_before_ms())
        commit_due_ms = self._commits.get_timer()
        if commit_due_ms is not None:
            candidates.append(commit_due_ms)
        if self._fsm.state not in SKIPS_HEARTBEAT:
            if self._fsm.state is _S.LEAVING:
                if not self._commits.has_waiting():  # else the leave waits for a commit's answer
                    candidates.append(0)
            elif not self._requests.in_flight(_KIND.HEARTBEAT):
                candidates.append(self._next_heartbeat_ms())
            if self._fsm.state not in LEAVING_GROUP and not self._closing:
                candidates.append(self._schedule.poll_deadline_ms())
        return min(candidates) if candidates else None

    # -- coordinator ---------------------------------------------------------------------

    def _group_managed(self) -> bool:
        """Subscribed, or still in the group (leaving): commits are the member's, not a simple consumer's."""
        return self._subscribed() or self._closing or self._fsm.state not in NOT_IN_GROUP

    def _wants_coordinator(self) -> bool:
        return (self._subscribed() or self._requests.has_queued() or bool(self._commits)
                or self._fsm.state in LEAVING_GROUP)

    def _find_coordinator(self, now_ms: int) -> list[Outbound]:
        if self._requests.in_flight(_KIND.FIND) or not self._requests.may_retry(_KIND.FIND, now_ms):
            return []
        request = m.FindCoordinatorRequest(self.config.group_id)
        return [self._requests.send(_KIND.FIND, request, None, self.generation)]

    def _found_coordinator(self, response: m.FindCoordinatorResponse, now_ms: int) -> None:
        if response.error_code.is_error or response.node_id < 0:
            self._requests.retry_at(_KIND.FIND, now_ms + self.config.retry_backoff_ms)
            return
        self.coordinator_id = response.node_id

    def _lose_coordinator(self, now_ms: int) -> None:
        """Kafka ``markCoordinatorUnknown``: forget it, look it up again, and redo what was in flight."""
        if self.coordinator_id is None:
            return
        self.coordinator_id = None
        self._requests.retry_at(_KIND.FIND, now_ms)
        for token, sent in self._requests.abandon_coordinator_requests():
            self._abandon(token, sent, now_ms)

    def _abandon(self, token: int, sent: Sent, now_ms: int) -> None:
        """A request that will get no answer: a failed heartbeat, or a commit or fetch to retry."""
        if sent.kind is _KIND.LEAVE:
            return  # the leave was sent once; Kafka does not retry it
        if sent.kind is _KIND.HEARTBEAT:
            self._sent_fields.reset()
            self._schedule.failed(now_ms)
        else:
            self._commits.abandoned(token, sent, now_ms)

    # -- heartbeats ------------------------------------------------------------------------

    def _poll_timer_expired(self, now_ms: int) -> bool:
        return (self._fsm.state not in SKIPS_HEARTBEAT and self._fsm.state not in LEAVING_GROUP
                and not self._closing and self._schedule.poll_expired(now_ms))

    def _next_heartbeat_ms(self) -> int:
        if self._fsm.state in HEARTBEATS_NOW:
            backoff_until = self._schedule.backoff_until_ms()
            return 0 if backoff_until is None else backoff_until
        return self._schedule.next_heartbeat_ms()

    def _heartbeat_due(self, now_ms: int) -> bool:
        state = self._fsm.state
        if state in SKIPS_HEARTBEAT:
            return False
        if state is _S.LEAVING:
            # The leave waits for the commits made before it (they still carry the member's epoch).
            return not self._commits.has_waiting()
        if self._requests.in_flight(_KIND.HEARTBEAT):
            return False
        if state in HEARTBEATS_NOW:
            return self._schedule.backoff_passed(now_ms)
        return self._schedule.heartbeat_due(now_ms)

    def _send_heartbeat(self, now_ms: int) -> Outbound:
        state = self._fsm.state
        leaving = state is _S.LEAVING
        request = build_heartbeat(
            self.config, self._sent_fields, member_id=self.member_id,
            member_epoch=self._leave_epoch() if leaving else self.member_epoch,
            subscription=self._subscription, regex=self._subscription_pattern, assignment=self._current,
            full=state is _S.JOINING,
            incoming=self._incoming())
        self._schedule.sent(now_ms)
        sent = HeartbeatSent(self._membership, leaving)
        # The leave is its own kind: another heartbeat may follow it before its answer (a stale
        # member rejoining; Kafka resets the request state after sending it).
        kind = _KIND.LEAVE if leaving else _KIND.HEARTBEAT
        out = self._requests.send(kind, request, self.coordinator_id, self.generation, payload=sent)
        self._heartbeat_generated(now_ms)
        return out

    def _incoming(self) -> frozenset:
        """Partitions of the last assignment received that the member has not reconciled yet.

        A departure from Kafka's client, which reports only the reconciled assignment: between an
        answer that adds partitions and the end of their reconciliation, that report omits them,
        and a coordinator whose newer target takes them away reads the omission as their revocation
        (``CurrentAssignmentBuilder.ownsRevokedPartitions``) and hands them on while this member is
        about to start consuming them.  Reporting them as owned makes the coordinator wait for
        their real revocation (found by the simulator; docs/guide/consumer-protocol.md).
        """
        if self._target.is_none:
            return frozenset()
        return self._target.partitions - self._current.partitions

    def _heartbeat_generated(self, now_ms: int) -> None:
        """Kafka ``onHeartbeatRequestGenerated``: ACKNOWLEDGING and LEAVING end with their heartbeat."""
        state = self._fsm.state
        if state is _S.ACKNOWLEDGING:
            self._fsm.transition_to(_S.STABLE if self._target == self._current else _S.RECONCILING)
        elif state is _S.LEAVING:
            self.member_epoch = self._leave_epoch()
            if self._left_on_poll_timeout:
                self._transition_to_stale()
            else:
                self._left(now_ms)

    def _heartbeat_answered(self, sent: Sent, response: ConsumerGroupHeartbeatResponse, now_ms: int) -> None:
        info = sent.payload
        if not isinstance(info, HeartbeatSent) or info.membership != self._membership:
            return  # sent before the member rejoined: stale
        if self._fsm.state in NOT_IN_GROUP:
            return  # fenced or stale since it was sent: nothing it says applies
        code = response.error_code
        if code is ErrorCode.NONE:
            self._schedule.succeeded(now_ms, response.heartbeat_interval_ms)
            self._heartbeat_succeeded(response)
            return
        self._sent_fields.reset()
        self._schedule.failed(now_ms)
        reaction = heartbeat_errors.reaction_to(code)
        _log.info("group %s: ConsumerGroupHeartbeat of member %s (epoch %d) failed with %s: %s",
                  self.config.group_id, self.member_id, self.member_epoch, code.name, reaction.value)
        if reaction is HeartbeatReaction.REDISCOVER:
            self._lose_coordinator(now_ms)
            self._schedule.skip_backoff(now_ms)
        elif reaction is HeartbeatReaction.FENCE:
            self._transition_to_fenced()
            self._schedule.skip_backoff(now_ms)
        elif reaction is HeartbeatReaction.FATAL:
            self._fail(heartbeat_errors.fatal_error(code, response.error_message, self.config.group_id,
                                                    self.config.group_instance_id))

    def _heartbeat_succeeded(self, response: ConsumerGroupHeartbeatResponse) -> None:
        """Kafka ``ConsumerMembershipManager.onHeartbeatSuccess``."""
        state = self._fsm.state
        if state is _S.LEAVING or state in NOT_IN_GROUP:
            return
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        if response.assignment is None or state not in CAN_HANDLE_NEW_ASSIGNMENT:
            return  # no new assignment, or one the member cannot take now (preparing to leave)
        updated = self._target.updated_with(response.assignment)
        if updated is not None:
            self._target = updated
        if self._target != self._current:
            if state is not _S.RECONCILING:
                self._fsm.transition_to(_S.RECONCILING)
        elif state in (_S.RECONCILING, _S.JOINING):
            self._fsm.transition_to(_S.STABLE)

    def __repr__(self) -> str:
        return (f"ConsumerProtocolMember({self.config.group_id!r}, {self.member_id!r}, "
                f"epoch={self.member_epoch}, "
                f"{self._fsm.state.name})")
