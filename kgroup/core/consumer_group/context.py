"""What the KIP-848 manager needs from the coordinator hosting it, as one object.

Kafka hands its GroupMetadataManager the coordinator shard's timer and record sink and lets it
look groups up; kgroup's ConsumerGroupManager gets this context instead of one callback per need.
The coordinator's :class:`kgroup.core.coordinator.context.GroupCoordinatorContext` implements it.
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Mapping, Optional, Protocol

from kgroup.core.consumer_group.records import ConsumerGroupRecord
from kgroup.core.coordinator_common.timer import TimerOperation
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

#: topic name -> partition count, or None when the topic does not exist.
TopicMetadata = Callable[[str], Optional[int]]
#: The names of the cluster's user topics (internal ones excluded): what a subscribed regex can match.
TopicNames = Callable[[], Iterable[str]]


class ConsumerGroupContext(Protocol):
    def emit(self, record: ConsumerGroupRecord) -> None:
        """Write ``record`` with the answer of the current call."""

    def schedule_timer(self, key: Hashable, deadline_ms: int, operation: TimerOperation) -> None:
        """Run ``operation`` at ``deadline_ms`` unless ``key`` is cancelled or scheduled again first."""

    def cancel_timer(self, key: Hashable) -> None: ...

    def partition_count(self, topic: str) -> Optional[int]:
        """The topic's partition count, None when there is no such topic."""

    def topic_names(self) -> Iterable[str]:
        """Every user topic's name (a subscribed regex is resolved against them)."""

    def classic_group_state(self, group_id: str) -> Optional[str]:
        """The state of the classic group under ``group_id`` ("Empty", ...), None when there is none."""

    def release_empty_classic_group(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """Drop the empty classic group under ``group_id`` so its id can become a consumer group's;
        returns its offsets (Kafka's maybeDeleteEmptyClassicGroup)."""
