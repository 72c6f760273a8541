"""A KIP-848 member's reconciliation: commit, revoke, assign, acknowledge.

Kafka's ``ConsumerMembershipManager.maybeReconcile`` and the steps after it:
auto-commit before revoking, the revocation callback, the assignment callback,
then ACKNOWLEDGING so the next heartbeat reports the new assignment.  Each
step that waits on a callback completes on the application's next poll
(:meth:`ConsumerAssignmentReconciler._advance`); the step machine itself is
:class:`~kgroup.core.member.consumer.reconciliation.Reconciliation`.
"""
from __future__ import annotations

import logging

from kgroup.core.member.consumer.membership import ConsumerMembershipTransitions
from kgroup.core.member.consumer.reconciliation import ReconcileStep
from kgroup.core.member.consumer.states import ConsumerMemberState
from kgroup.core.member.shared.events import PartitionsAssigned, PartitionsRevoked

__all__ = ["ConsumerAssignmentReconciler"]

_log = logging.getLogger("kgroup.core.member.consumer.member")
_S = ConsumerMemberState


class ConsumerAssignmentReconciler(ConsumerMembershipTransitions):
    """The member's transitions plus the reconciliation of each new target assignment."""

    def _advance(self, now_ms: int) -> None:
        """Move on past the callbacks the application has run (called from ``on_app_poll``)."""
        state = self._fsm.state
        released = self._events.delivered_count >= self._release_seq
        if state is _S.FENCED and released:
            self._clear_assignment()
            self._transition_to_joining()
        elif state is _S.STALE and released and self._stale_may_rejoin:
            self._stale_may_rejoin = False
            self._transition_to_joining()
        elif state is _S.PREPARE_LEAVING and released:
            self._released_before_leaving()
        self._advance_reconciliation(now_ms)

    def _advance_reconciliation(self, now_ms: int) -> None:
        rec = self._reconciliation
        if not rec.in_progress:
            if self._fsm.state is _S.RECONCILING:
                self._start_reconciliation(now_ms)
            return
        if self._fsm.state is not _S.RECONCILING or rec.membership != self._membership:
            rec.finish()  # Kafka ``maybeAbortReconciliation``
            return
        delivered = self._events.delivered_count
        if rec.step is ReconcileStep.COMMITTING and not rec.commit_pending:
            self._revoke(now_ms)
        elif rec.step is ReconcileStep.REVOKING and rec.delivered(delivered):
            self._assign(now_ms)
        elif rec.step is ReconcileStep.ASSIGNING and rec.delivered(delivered):
            self._complete_reconciliation(now_ms)

    def _start_reconciliation(self, now_ms: int) -> None:
        """Kafka ``maybeReconcile``: commit (auto-commit), revoke, assign, acknowledge."""
        target = self._target
        if not self._current.is_none and target.partitions == self._current.partitions:
            # Same partitions under a newer local epoch: nothing to call back, acknowledge it.
            self._current = target
            self._fsm.transition_to(_S.ACKNOWLEDGING)
            return
        rec = self._reconciliation
        rec.start(target, self._owned, self._membership)
        _log.info("group %s: member %s reconciles epoch %d: adds %s, revokes %s", self.config.group_id,
                  self.member_id, self.member_epoch, sorted(rec.added), sorted(rec.revoked))
        token = None
        if self.member_epoch > 0:
            # Kafka ``maybeAutoCommitSyncBeforeRevocation``: bounded by the rebalance timeout,
            # which is what the coordinator gives the member to revoke.
            deadline_ms = now_ms + self.config.rebalance_timeout_ms
            token = self._commits.auto_commit(self._stamp(), now_ms, deadline_ms, retry_stale_epoch=True)
        if token is not None:
            rec.committing(token)
        else:
            self._revoke(now_ms)

    def _commit_finished(self, token: int) -> None:
        # The next on_app_poll moves on (Kafka proceeds whatever the commit's outcome).
        self._reconciliation.commit_finished(token)

    def _revoke(self, now_ms: int) -> None:
        rec = self._reconciliation
        revoked = rec.revoked & self._owned  # Kafka: only partitions still assigned
        if revoked:
            self._owned = self._owned - revoked
            rec.waiting_on(ReconcileStep.REVOKING, self._events.append(PartitionsRevoked(revoked)))
        else:
            self._assign(now_ms)

    def _assign(self, now_ms: int) -> None:
        rec = self._reconciliation
        self._owned = rec.target.partitions
        event = PartitionsAssigned(rec.added, self._owned, self.generation, None)
        rec.waiting_on(ReconcileStep.ASSIGNING, self._events.append(event))
        if self.config.fetch_committed_on_assignment and rec.added:
            self._commits.fetch(sorted(rec.added), self.member_id, self.member_epoch, now_ms)

    def _complete_reconciliation(self, now_ms: int) -> None:
        rec = self._reconciliation
        self._current = rec.target
        self._commits.reset_auto_commit_timer(now_ms)
        rec.finish()
        self._fsm.transition_to(_S.ACKNOWLEDGING)  # the next heartbeat, at once, acknowledges it
