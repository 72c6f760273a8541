"""The records both group types write: committed offsets (plain and transactional), the
transaction markers of ``__consumer_offsets`` and the group tombstone.

Each group type's own records live with it (:mod:`kgroup.core.coordinator.records` for classic
groups, :mod:`kgroup.core.consumer_group.records` for KIP-848 consumer groups); the union of all
of them and their replay are the coordinator's (:mod:`kgroup.core.coordinator.records`).
"""
from __future__ import annotations

import attrs

from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition


@attrs.frozen
class GroupTombstone:
    """The group is deleted, with its members and its offsets."""

    group_id: str


@attrs.frozen
class OffsetCommitRecord:
    group_id: str
    topic_partition: TopicPartition
    committed: OffsetAndMetadata


@attrs.frozen
class OffsetTombstone:
    group_id: str
    topic_partition: TopicPartition


@attrs.frozen
class TxnOffsetCommitRecord:
    """An offset committed inside producer ``producer_id``'s transaction (TxnOffsetCommit).

    Kafka writes it as an OffsetCommit record in a transactional batch of that producer; it stays
    pending (invisible to OffsetFetch) until a :class:`TxnMarkerRecord` of the producer follows."""

    group_id: str
    topic_partition: TopicPartition
    committed: OffsetAndMetadata
    producer_id: int
    producer_epoch: int


@attrs.frozen
class TxnMarkerRecord:
    """The end of producer ``producer_id``'s transaction on this offsets partition (Kafka's COMMIT /
    ABORT control record): its pending offsets become committed (``commit``) or are dropped."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
