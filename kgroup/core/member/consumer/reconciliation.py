"""One reconciliation of a KIP-848 member, as a state machine (Kafka
``AbstractMembershipManager.maybeReconcile`` / ``revokeAndAssign``).

Kafka chains futures: commit (auto-commit before revocation) ->
``onPartitionsRevoked`` -> ``onPartitionsAssigned`` -> acknowledge.  A
sans-I/O member cannot wait on a callback, so each wait is a step with one
table of legal previous states (:mod:`kgroup.core.fsm`)::

    IDLE -> COMMITTING -> REVOKING -> ASSIGNING -> IDLE
            (each of the three may be skipped; any may go back to IDLE: aborted)

- COMMITTING: the auto-commit of the consumed positions has not completed
  (Kafka proceeds whatever its outcome).
- REVOKING: the PartitionsRevoked event was emitted; the application has
  not yet taken it and polled again (its callback may still be running).
- ASSIGNING: the same for PartitionsAssigned.

The member aborts a reconciliation that is no longer relevant (Kafka
``maybeAbortReconciliation``): the member left RECONCILING (fenced,
leaving, failed) or rejoined since it started (a new membership).
A target assignment that arrives meanwhile waits for the next one.
"""
from __future__ import annotations

import enum
from typing import Optional

from kgroup.core.fsm import StateMachine
from kgroup.core.member.consumer.local_assignment import NO_ASSIGNMENT, LocalAssignment


class ReconcileStep(enum.Enum):
    IDLE = "idle"
    COMMITTING = "committing"
    REVOKING = "revoking"
    ASSIGNING = "assigning"


_R = ReconcileStep

LEGAL_PREVIOUS: dict[ReconcileStep, frozenset] = {
    # Completed (from ASSIGNING) or aborted (from any step).
    _R.IDLE: frozenset({_R.COMMITTING, _R.REVOKING, _R.ASSIGNING}),
    _R.COMMITTING: frozenset({_R.IDLE}),
    _R.REVOKING: frozenset({_R.IDLE, _R.COMMITTING}),
    _R.ASSIGNING: frozenset({_R.IDLE, _R.COMMITTING, _R.REVOKING}),
}


class Reconciliation:
    """The step plus what it reconciles: the assignment it resolves to and what it revokes and adds."""

    __slots__ = ("_fsm", "target", "revoked", "added", "membership", "commit_token", "waiting_event_seq")

    def __init__(self, name: str) -> None:
        self._fsm = StateMachine(name, _R.IDLE, LEGAL_PREVIOUS)
        self.target: LocalAssignment = NO_ASSIGNMENT
        self.revoked: frozenset = frozenset()
        self.added: frozenset = frozenset()
        #: The membership (join count) it started in: a rejoin aborts it.
        self.membership = -1
        self.commit_token: Optional[int] = None
        #: The event the current step waits for the application to have taken (EventQueue sequence).
        self.waiting_event_seq = 0

    @property
    def step(self) -> ReconcileStep:
        return self._fsm.state

    @property
    def in_progress(self) -> bool:
        return self._fsm.state is not _R.IDLE

    def start(self, target: LocalAssignment, owned: frozenset, membership: int) -> None:
        """Record what this reconciliation does; the member then commits, revokes or assigns."""
        self.target = target
        self.revoked = owned - target.partitions
        self.added = target.partitions - owned
        self.membership = membership
        self.commit_token = None
        self.waiting_event_seq = 0

    def committing(self, token: int) -> None:
        self.commit_token = token
        self._fsm.transition_to(_R.COMMITTING)

    def commit_finished(self, token: int) -> None:
        if token == self.commit_token:
            self.commit_token = None

    @property
    def commit_pending(self) -> bool:
        return self.commit_token is not None

    def waiting_on(self, step: ReconcileStep, event_seq: int) -> None:
        """REVOKING or ASSIGNING, until the application has taken event ``event_seq`` and polled."""
        self.waiting_event_seq = event_seq
        self._fsm.transition_to(step)

    def delivered(self, events_delivered: int) -> bool:
        return events_delivered >= self.waiting_event_seq

    def finish(self) -> None:
        """Completed, or aborted: back to IDLE (a no-op when idle)."""
        self.commit_token = None
        if self._fsm.state is not _R.IDLE:
            self._fsm.transition_to(_R.IDLE)
