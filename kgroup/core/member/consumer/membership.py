"""A KIP-848 member's moves in and out of its group: join, fence, leave, go stale, fail.

Kafka's ``AbstractMembershipManager`` transitions (``transitionToJoining``,
``transitionToFenced``, ``leaveGroup``, ``transitionToSendingLeaveGroup``,
``transitionToStale``, ``transitionToFatal``) and what each one releases.
:class:`ConsumerMembershipTransitions` adds them to the member's state
(:class:`~kgroup.core.member.consumer.view.ConsumerMemberView`); the reconciliation
(``reconciler.py``) and the protocol (``member.py``) build on it.
"""
from __future__ import annotations

from kgroup.core.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
)
from kgroup.core.member.consumer.committer import membership_stamp
from kgroup.core.member.consumer.local_assignment import NO_ASSIGNMENT
from kgroup.core.member.consumer.states import LEAVING_GROUP, NOT_IN_GROUP, ConsumerMemberState
from kgroup.core.member.consumer.view import ConsumerMemberView
from kgroup.core.member.shared.events import FatalError, Generation, PartitionsLost, PartitionsRevoked
from kgroup.errors import KGroupError

__all__ = ["ConsumerMembershipTransitions"]

_S = ConsumerMemberState


class ConsumerMembershipTransitions(ConsumerMemberView):
    """The member's state plus the transitions that take it into, out of and back into its group."""

    def _leave_epoch(self) -> int:
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.config.is_static else LEAVE_GROUP_MEMBER_EPOCH

    def _stamp(self) -> Generation:
        return membership_stamp(self._membership, self.member_id, self.member_epoch)

    def _release(self, lost: bool) -> None:
        """Give up every owned partition (an event the state waits on until the application ran it)."""
        if not self._owned:
            self._release_seq = 0
            return
        event = PartitionsLost(self._owned) if lost else PartitionsRevoked(self._owned)
        self._owned = frozenset()
        self._release_seq = self._events.append(event)

    def _clear_assignment(self) -> None:
        self._owned = frozenset()
        self._current = NO_ASSIGNMENT
        self._target = NO_ASSIGNMENT

    def _transition_to_joining(self) -> None:
        """Join (again) with epoch 0: a new membership; what was pending for the old one is dropped."""
        if self._fsm.state is _S.FATAL:
            return
        self._membership += 1
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self._fsm.transition_to(_S.JOINING)
        self._target = NO_ASSIGNMENT
        self._reconciliation.finish()

    def _transition_to_fenced(self) -> None:
        """Kafka ``transitionToFenced``: release everything as lost, then rejoin with epoch 0."""
        state = self._fsm.state
        if state is _S.PREPARE_LEAVING:
            # Already leaving: the coordinator dropped the member, so no leave heartbeat either.
            self._transition_to_sending_leave(due_to_poll_timeout=False)
        if self._fsm.state is _S.LEAVING:
            self.member_epoch = self._leave_epoch()
            self._fsm.transition_to(_S.UNSUBSCRIBED)
            self._clear_assignment()
            return
        if state in NOT_IN_GROUP:
            return
        self._fsm.transition_to(_S.FENCED)
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self._reconciliation.finish()
        self._release(lost=True)
        if self._release_seq == 0:
            # Nothing to release (no callback to wait for): rejoin at once, as Kafka does.
            self._clear_assignment()
            self._transition_to_joining()

    def _leave_group(self) -> None:
        """Kafka ``leaveGroup``: PREPARE_LEAVING releases the partitions; LEAVING sends the leave."""
        state = self._fsm.state
        if state in NOT_IN_GROUP:
            if state is _S.FENCED:
                self._clear_assignment()
                self._fsm.transition_to(_S.UNSUBSCRIBED)
            return
        if state in LEAVING_GROUP:
            return
        self._fsm.transition_to(_S.PREPARE_LEAVING)
        self._reconciliation.finish()
        # Revoked while the member holds an epoch; lost once the coordinator may have moved them on.
        self._release(lost=self.member_epoch <= 0)
        if self._release_seq == 0:
            self._released_before_leaving()

    def _released_before_leaving(self) -> None:
        if self._stay_in_group_on_close:
            self._clear_assignment()
            self._fsm.transition_to(_S.UNSUBSCRIBED)  # KIP-1092 REMAIN_IN_GROUP: no leave heartbeat
        else:
            self._transition_to_sending_leave(due_to_poll_timeout=False)

    def _transition_to_sending_leave(self, due_to_poll_timeout: bool) -> None:
        """Kafka ``transitionToSendingLeaveGroup``: the next heartbeat carries the leave epoch."""
        if self._fsm.state in (_S.FATAL, _S.UNSUBSCRIBED):
            return
        if due_to_poll_timeout:
            self._left_on_poll_timeout = True
            self._fsm.transition_to(_S.PREPARE_LEAVING)
        self._current = NO_ASSIGNMENT
        self._fsm.transition_to(_S.LEAVING)

    def _transition_to_stale(self) -> None:
        """Left on the poll timeout: release as lost; rejoin once the application polls again."""
        self._fsm.transition_to(_S.STALE)
        self._reconciliation.finish()
        self._release(lost=True)
        self._current = NO_ASSIGNMENT
        self._target = NO_ASSIGNMENT

    def _left(self, now_ms: int) -> None:
        self._fsm.transition_to(_S.UNSUBSCRIBED)
        self._clear_assignment()
        self._sent_fields.reset()
        self._schedule.skip_backoff(now_ms)
        if self._subscribed() and not self._closing:
            # Left but still subscribed (an unsubscribe/subscribe pair): join again on the next poll.
            self._subscription_updated = True

    def _fail(self, error: KGroupError) -> None:
        """Kafka ``transitionToFatal``: lose what is owned (unless already out of the group)."""
        previous = self._fsm.state
        self.last_error = error
        self._commits.fail_all(error)
        self._requests.clear()
        self._reconciliation.finish()
        self._fsm.transition_to(_S.FATAL)
        if previous not in (_S.UNSUBSCRIBED, _S.LEAVING, _S.PREPARE_LEAVING) and self._owned:
            self._events.append(PartitionsLost(self._owned))
        self._owned = frozenset()
        self._events.append(FatalError(error))
