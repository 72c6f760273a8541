"""A driver for the KIP-848 side of one GroupCoordinator on a mock clock (shared by tests/consumer_group)."""
from __future__ import annotations

import itertools
from typing import Iterable, Optional

from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

GROUP = "grp"


def tps(spec: dict[str, Iterable[int]]) -> frozenset[TopicPartition]:
    """``{"foo": [0, 1]}`` -> the partitions, as Kafka's tests write mkAssignment."""
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


class Driver:
    def __init__(self, topics: Optional[dict[str, int]] = None, config: Optional[GroupCoordinatorConfig] = None):
        self.topics: dict[str, int] = dict(topics or {})
        self.config = config or GroupCoordinatorConfig()
        self.now_ms = 0
        self.records: list = []
        self._keys = itertools.count()
        self.coordinator = GroupCoordinator(self.config, topic_metadata=self.topics.get)

    def call(self, request: object):
        result = self.coordinator.handle(next(self._keys), request, self.now_ms)
        self.records.extend(result.records)
        self.coordinator.assert_invariants()
        assert len(result.deliveries) == 1
        return result.deliveries[0].response

    def heartbeat(self, member_id: str, member_epoch: int, *, group_id: str = GROUP,
                  **fields) -> ConsumerGroupHeartbeatResponse:
        request = ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=member_epoch,
                                                **fields)
        response = self.call(request)
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def join(self, member_id: str, topics: Iterable[str], **fields) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", 5000)
        fields.setdefault("topic_partitions", ())
        return self.heartbeat(member_id, 0, subscribed_topic_names=tuple(topics), **fields)

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        result = self.coordinator.on_timers(self.now_ms)
        self.records.extend(result.records)
        self.coordinator.assert_invariants()

    def group(self, group_id: str = GROUP):
        group = self.coordinator.consumer_group(group_id)
        assert group is not None
        return group

    def assert_replays(self) -> GroupCoordinator:
        """The records written so far rebuild the same groups (what a coordinator failover loads)."""
        loaded = GroupCoordinator.load(self.records, self.now_ms, self.config, topic_metadata=self.topics.get)
        assert loaded.persisted_view() == self.coordinator.persisted_view()
        loaded.assert_invariants()
        return loaded


def ok(response: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
    assert response.error_code is ErrorCode.NONE, response
    return response
