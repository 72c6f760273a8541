"""The rejoin gate: when the member may send its next JoinGroup.

Java's ConsumerCoordinator rejoins from the polling thread in one blocking
sequence (``onJoinPrepare``: commit synchronously, run the revocation
callbacks, then send the JoinGroup).  A sans-I/O member cannot block, so the
sequence is a state machine with one table of legal previous states
(:mod:`kgroup.core.fsm`)::

    NOT_NEEDED -> NEEDED -> GATED -> COMMITTING -> READY
                             (either may be skipped)

- NEEDED: a rejoin was requested; it is prepared on the application's next
  ``on_app_poll`` (pre-join commit, revocation/lost events).
- GATED: events the application must see before the member rejoins are
  still in the event queue, or were taken but the application has not
  polled since (its callbacks may still be running).
- COMMITTING: the pre-join auto-commit has not completed.
- READY: a JoinGroup may go out (once none is outstanding and the retry
  backoff has passed: that is request bookkeeping, ``requests.py``).

Losing the generation while owning partitions sends a prepared gate back to
NEEDED (the partitions must be reported lost first); a completed
SyncGroup, ``unsubscribe`` and ``close`` return it to NOT_NEEDED.
"""
from __future__ import annotations

import enum
from typing import Optional

from kgroup.core.fsm import StateMachine


class Rejoin(enum.Enum):
    NOT_NEEDED = "not_needed"
    NEEDED = "needed"
    GATED = "gated"
    COMMITTING = "committing"
    READY = "ready"


_R = Rejoin
_PREPARED = frozenset({_R.GATED, _R.COMMITTING, _R.READY})

LEGAL_PREVIOUS: dict[Rejoin, frozenset] = {
    # A completed sync, unsubscribe or close, from wherever the rejoin was.
    _R.NOT_NEEDED: frozenset({_R.NEEDED}) | _PREPARED,
    # Requested; or the generation was lost while owning partitions (prepare again).
    _R.NEEDED: frozenset({_R.NOT_NEEDED}) | _PREPARED,
    _R.GATED: frozenset({_R.NEEDED}),
    _R.COMMITTING: frozenset({_R.NEEDED, _R.GATED}),
    _R.READY: frozenset({_R.NEEDED, _R.GATED, _R.COMMITTING}),
}


class RejoinGate:
    """The gate plus the data its transitions read (no flags: the state says it all)."""

    __slots__ = ("_fsm", "reason", "prejoin_commit_token", "gating_event_seq")

    def __init__(self, name: str) -> None:
        self._fsm = StateMachine(name, _R.NOT_NEEDED, LEGAL_PREVIOUS)
        #: Why the rejoin was requested (JoinGroup's reason, KIP-800): the first reason wins.
        self.reason = ""
        #: The pre-join auto-commit the JoinGroup waits for (None: none pending).
        self.prejoin_commit_token: Optional[int] = None
        #: Sequence number (``EventQueue.append``) of the last event the app must see first.
        self.gating_event_seq = 0

    @property
    def state(self) -> Rejoin:
        return self._fsm.state

    @property
    def needed(self) -> bool:
        return self._fsm.state is not _R.NOT_NEEDED

    def request(self, reason: str) -> None:
        if self._fsm.state is _R.NOT_NEEDED:
            self.reason = reason
            self._fsm.transition_to(_R.NEEDED)

    def cancel(self) -> None:
        """No rejoin any more (completed, unsubscribed, closing)."""
        self.reason = ""
        if self._fsm.state is not _R.NOT_NEEDED:
            self._fsm.transition_to(_R.NOT_NEEDED)

    def unprepare(self) -> None:
        """The generation was lost while owning partitions: prepare again (report them lost)."""
        if self._fsm.state in _PREPARED:
            self._fsm.transition_to(_R.NEEDED)

    def gate_on(self, event_seq: int) -> None:
        """The event ``event_seq`` must reach the app (and the app poll again) before the JoinGroup."""
        self.gating_event_seq = event_seq

    def prepared(self, prejoin_commit_token: Optional[int], events_delivered: int) -> None:
        """The polling thread prepared the rejoin (NEEDED -> GATED / COMMITTING / READY)."""
        if prejoin_commit_token is not None:
            self.prejoin_commit_token = prejoin_commit_token
        self._advance(events_delivered, gated=True)

    def app_polled(self, events_delivered: int) -> None:
        """The app polled having been given ``events_delivered`` events: GATED may open."""
        if self._fsm.state is _R.GATED:
            self._advance(events_delivered, gated=True)

    def commit_finished(self, token: int) -> None:
        if token == self.prejoin_commit_token:
            self.prejoin_commit_token = None
            if self._fsm.state is _R.COMMITTING:
                self._advance(0, gated=False)

    def _advance(self, events_delivered: int, gated: bool) -> None:
        if gated and events_delivered < self.gating_event_seq:
            target = _R.GATED
        elif self.prejoin_commit_token is not None:
            target = _R.COMMITTING
        else:
            target = _R.READY
        if target is not self._fsm.state:
            self._fsm.transition_to(target)

    def __repr__(self) -> str:
        return f"RejoinGate({self._fsm.state.name}, reason={self.reason!r})"
