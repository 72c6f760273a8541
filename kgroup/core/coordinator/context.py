"""What the coordinator's group managers share: one context object (Kafka's coordinator shard
gives its GroupMetadataManager and OffsetMetadataManager the shard's timer and record sink).

It holds the timer, the responses and records the current call hands back, the topic metadata,
and the lookups across the two group types (a group id has one type at a time, so each manager
asks about, or releases, an empty group of the other type).  The KIP-848 manager sees it as
:class:`kgroup.core.consumer_group.context.ConsumerGroupContext`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Iterable, Mapping, Optional, Sequence

from kgroup.core.broker import Delivery
from kgroup.core.consumer_group.context import TopicMetadata, TopicNames, TopicPartitionRacks
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.manager import ConsumerGroupManager
from kgroup.core.consumer_group.records import PersistedConsumerGroup
from kgroup.core.coordinator.records import Record
from kgroup.core.coordinator_common.timer import CoordinatorTimer, TimerOperation
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

if TYPE_CHECKING:  # the classic manager takes this context: imported for the type only
    from kgroup.core.coordinator.classic_group_manager import ClassicGroupManager


class GroupCoordinatorContext:
    #: Both managers take this context, so they are attached once built (GroupCoordinator does it).
    classic: "ClassicGroupManager"
    consumer: ConsumerGroupManager

    def __init__(self, topic_metadata: TopicMetadata, partition_racks: TopicPartitionRacks,
                 topic_names: TopicNames) -> None:
        self.timer = CoordinatorTimer()
        #: Responses and records of the current call, handed back by GroupCoordinator's flush.
        self.deliveries: list[Delivery] = []
        self.records: list[Record] = []
        self._topic_metadata = topic_metadata
        self._partition_racks = partition_racks
        self._topic_names = topic_names

    def deliver(self, request_key: Hashable, response: object) -> None:
        self.deliveries.append(Delivery(request_key, response))

    def emit(self, record: Record) -> None:
        self.records.append(record)

    def schedule_timer(self, key: Hashable, deadline_ms: int, operation: TimerOperation) -> None:
        self.timer.schedule(key, deadline_ms, operation)

    def cancel_timer(self, key: Hashable) -> None:
        self.timer.cancel(key)

    def partition_count(self, topic: str) -> Optional[int]:
        return self._topic_metadata(topic)

    def partition_racks(self, topic: str) -> Sequence[frozenset]:
        return self._partition_racks(topic)

    def topic_names(self) -> Iterable[str]:
        return self._topic_names()

    # -- the other group type --------------------------------------------------------

    def classic_group_state(self, group_id: str) -> Optional[str]:
        return self.classic.group_state_name(group_id)

    def release_classic_group(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return self.classic.release_group(group_id)

    def upgraded_classic_group(self, group_id: str) -> PersistedConsumerGroup:
        return self.classic.upgraded_group(group_id, self._topic_metadata)

    def downgrade_consumer_group(self, group: ConsumerGroup, leaving_member_id: Optional[str], now_ms: int,
                                 *, rebalance: bool = True) -> None:
        self.classic.adopt_consumer_group(group, leaving_member_id, now_ms, rebalance=rebalance)

    def is_timer_scheduled(self, key: Hashable) -> bool:
        return key in self.timer

    def consumer_group(self, group_id: str) -> Optional[ConsumerGroup]:
        return self.consumer.group(group_id)

    def remove_consumer_group(self, group_id: str) -> None:
        self.consumer.remove_group(group_id)
