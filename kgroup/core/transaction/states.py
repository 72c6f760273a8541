"""Kafka's transaction states (``TransactionState`` in ``TransactionMetadata.scala``) as one table.

Each state keeps Kafka's id (the byte ``TransactionLogValue.TransactionStatus`` stores) and name
(what DescribeTransactions and ListTransactions answer).  ``PrepareEpochFence`` is never written:
Kafka holds it as a pending state while it fences a producer (a timed-out transaction, an
InitProducerId over an open one) and then writes ``PrepareAbort`` with the bumped epoch; kgroup
passes through it in the same step.
"""
from __future__ import annotations

import enum
from typing import Dict, Optional

from kgroup.core.fsm import check_table


class TransactionState(enum.Enum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_kafka_name(cls, name: str) -> Optional["TransactionState"]:
        return _BY_NAME.get(name)

    @property
    def is_prepare(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


S = TransactionState

_NAMES: Dict[TransactionState, str] = {
    S.EMPTY: "Empty", S.ONGOING: "Ongoing", S.PREPARE_COMMIT: "PrepareCommit",
    S.PREPARE_ABORT: "PrepareAbort",
    S.COMPLETE_COMMIT: "CompleteCommit", S.COMPLETE_ABORT: "CompleteAbort", S.DEAD: "Dead",
    S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

#: Kafka's ``validPreviousStates`` of every state.
LEGAL_PREVIOUS: Dict[TransactionState, frozenset] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
check_table(TransactionState, LEGAL_PREVIOUS)
