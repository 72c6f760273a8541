"""What the KIP-848 manager needs from the coordinator hosting it, as one object.

Kafka hands its GroupMetadataManager the coordinator shard's timer and record sink and lets it
look groups up; kgroup's ConsumerGroupManager gets this context instead of one callback per need.
The coordinator's :class:`kgroup.core.coordinator.context.GroupCoordinatorContext` implements it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Mapping, Optional, Protocol, Sequence

from kgroup.core.consumer_group.records import ConsumerGroupRecord, PersistedConsumerGroup
from kgroup.core.coordinator_common.timer import TimerOperation
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

if TYPE_CHECKING:  # the group module imports nothing from here: for the type only
    from kgroup.core.consumer_group.group import ConsumerGroup

#: topic name -> partition count, or None when the topic does not exist.
TopicMetadata = Callable[[str], Optional[int]]
#: topic name -> the replica racks of each of its partitions, by partition (empty: none known).
TopicPartitionRacks = Callable[[str], Sequence[frozenset]]

#: The names of the cluster's topics (internal ones too, as Kafka's metadata image): what a regex can match.
TopicNames = Callable[[], Iterable[str]]


class GroupConversionRefused(Exception):
    """A group cannot change type online (the migration policy, its protocol type or size, or
    ConsumerProtocol bytes that do not parse); the message says why."""


class ConsumerGroupContext(Protocol):
    def emit(self, record: ConsumerGroupRecord) -> None:
        """Write ``record`` with the answer of the current call."""

    def schedule_timer(self, key: Hashable, deadline_ms: int, operation: TimerOperation) -> None:
        """Run ``operation`` at ``deadline_ms`` unless ``key`` is cancelled or scheduled again first."""

    def cancel_timer(self, key: Hashable) -> None: ...

    def partition_count(self, topic: str) -> Optional[int]:
        """The topic's partition count, None when there is no such topic."""

    def partition_racks(self, topic: str) -> Sequence[frozenset]:
        """The replica racks of each of the topic's partitions, by partition (KIP-881's partition
        racks, for rack-aware server assignors); empty when no broker has a rack."""

    def topic_names(self) -> Iterable[str]:
        """Every topic's name, internal ones too (a subscribed regex is resolved against them)."""

    def classic_group_state(self, group_id: str) -> Optional[str]:
        """The state of the classic group under ``group_id`` ("Empty", ...), None when there is none."""

    def release_classic_group(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """Drop the classic group under ``group_id`` (if any) so its id can become a consumer group's;
        its parked JoinGroup / SyncGroup are answered REBALANCE_IN_PROGRESS; returns its offsets (Kafka's
        maybeDeleteEmptyClassicGroup, and convertToConsumerGroup's completeAllJoinFutures)."""

    def upgraded_classic_group(self, group_id: str) -> PersistedConsumerGroup:
        """The non-empty classic group under ``group_id`` as a consumer group (Kafka's
        validateOnlineUpgrade + ConsumerGroup.fromClassicGroup); changes nothing.

        Raises GroupConversionRefused when it may not or cannot be converted."""

    def downgrade_consumer_group(self, group: "ConsumerGroup", leaving_member_id: Optional[str], now_ms: int,
                                 *, rebalance: bool = True) -> None:
        """Replace the consumer group (already unregistered) by a classic group of its members but
        ``leaving_member_id``, which rebalances if ``rebalance`` (Kafka's convertToClassicGroup)."""

    def is_timer_scheduled(self, key: Hashable) -> bool: ...
