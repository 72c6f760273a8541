"""Kafka's ``AbstractMembershipManager.LocalAssignment``: partitions plus a local epoch.

The member keeps two: the *target* (the last assignment the coordinator
sent) and the *current* one (the last it reconciled).  Each new target with
different partitions bumps the local epoch, so "same partitions, newer
epoch" still differs from what was reconciled; the heartbeat resends the
owned partitions whenever the current assignment's value changes
(``heartbeat_fields.py``).  NONE (epoch -1) is "not in a group / nothing
reconciled yet".
"""
from __future__ import annotations

from typing import Iterable, Optional

import attrs

from kgroup.errors import ConfigError
from kgroup.values import TopicPartition

NONE_EPOCH = -1


def _partitions(value: Iterable[TopicPartition]) -> frozenset:
    return frozenset(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)


@attrs.frozen
class LocalAssignment:
    local_epoch: int
    partitions: frozenset = attrs.field(converter=_partitions)

    def __attrs_post_init__(self) -> None:
        if self.local_epoch == NONE_EPOCH and self.partitions:
            raise ConfigError("a LocalAssignment with partitions needs a local epoch (Kafka's invariant)")

    @property
    def is_none(self) -> bool:
        return self.local_epoch == NONE_EPOCH

    def updated_with(self, partitions: Iterable[TopicPartition]) -> Optional["LocalAssignment"]:
        """The next target for ``partitions``; None when they are what this one already holds."""
        new = _partitions(partitions)
        if not self.is_none and new == self.partitions:
            return None
        return LocalAssignment(self.local_epoch + 1, new)


NO_ASSIGNMENT = LocalAssignment(NONE_EPOCH, frozenset())
