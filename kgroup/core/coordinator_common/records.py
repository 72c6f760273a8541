"""The records both group types write: committed offsets and the group tombstone.

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
