"""A driver for the KIP-848 side of one GroupCoordinator on a mock clock (shared by tests/consumer_group)."""
from __future__ import annotations

import itertools
from typing import Iterable, Optional

from kgroup.assignors import AssignmentMember, ServerAssignor
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.values import TopicPartition

GROUP = "grp"


def tps(spec: dict[str, Iterable[int]]) -> frozenset[TopicPartition]:
    """``{"foo": [0, 1]}`` -> the partitions, as Kafka's tests write mkAssignment."""
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


class PreparedAssignor(ServerAssignor):
    """Kafka's MockPartitionAssignor: answers whatever the test prepared (empty for members not named)."""

    name = "prepared"

    def __init__(self) -> None:
        self.prepared: dict[str, frozenset[TopicPartition]] = {}
        self.calls: list[dict[str, AssignmentMember]] = []

    def prepare(self, assignment: dict[str, frozenset[TopicPartition]]) -> None:
        self.prepared = dict(assignment)

    def assign(self, members, partitions_per_topic):
        self.calls.append(dict(members))
        return {member_id: self.prepared.get(member_id, frozenset()) for member_id in members}


#: A config whose default server assignor is the test's prepared one.
PREPARED_CONFIG = GroupCoordinatorConfig(consumer_group_assignors=("prepared", "uniform", "range"))


class Driver:
    def __init__(self, topics: Optional[dict[str, int]] = None,
                 config: Optional[GroupCoordinatorConfig] = None, records: Iterable = ()):
        self.topics: dict[str, int] = dict(topics or {})
        self.config = config or GroupCoordinatorConfig()
        self.now_ms = 0
        self.records: list = list(records)
        self._keys = itertools.count()
        self.assignor = PreparedAssignor()
        self._assignors = {"prepared": self.assignor}
        # Kafka's tests build a group by replaying records; a coordinator loaded from them does the same.
        self.coordinator = GroupCoordinator.load(self.records, 0, self.config, topic_metadata=self.topics.get,
                                                 server_assignors=self._assignors,
                                                 topic_names=self.topics.keys)

    def send(self, request: object) -> list:
        """The responses ready right away (none for a parked JoinGroup)."""
        result = self.coordinator.handle(next(self._keys), request, self.now_ms)
        self.records.extend(result.records)
        self.coordinator.assert_invariants()
        return [d.response for d in result.deliveries]

    def call(self, request: object):
        responses = self.send(request)
        assert len(responses) == 1
        return responses[0]

    def heartbeat(self, member_id: str, member_epoch: int, *, group_id: str = GROUP,
                  **fields) -> ConsumerGroupHeartbeatResponse:
        request = ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id,
                                                member_epoch=member_epoch, **fields)
        response = self.call(request)
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def join(self, member_id: str, topics: Iterable[str], **fields) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", 5000)
        fields.setdefault("topic_partitions", ())
        return self.heartbeat(member_id, 0, subscribed_topic_names=tuple(topics), **fields)

    def advance(self, ms: int) -> list:
        """Move the clock and fire due timers; the responses they released."""
        self.now_ms += ms
        result = self.coordinator.handle_timer(self.now_ms)
        self.records.extend(result.records)
        self.coordinator.assert_invariants()
        return [d.response for d in result.deliveries]

    def group(self, group_id: str = GROUP):
        group = self.coordinator.consumer_group(group_id)
        assert group is not None
        return group

    def assert_replays(self) -> GroupCoordinator:
        """The records written so far rebuild the same groups (what a coordinator failover loads)."""
        loaded = GroupCoordinator.load(self.records, self.now_ms, self.config, topic_metadata=self.topics.get,
                                       server_assignors=self._assignors, topic_names=self.topics.keys)
        assert loaded.persisted_view() == self.coordinator.persisted_view()
        loaded.assert_invariants()
        return loaded


def ok(response: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
    assert response.error_code is ErrorCode.NONE, response
    return response


def group_records(group_id: str, group_epoch: int, members, targets: dict, *,
                  assignment_epoch: Optional[int] = None, metadata: Optional[dict[str, int]] = None) -> list:
    """The records of an existing group, as Kafka's tests replay them (ConsumerGroupBuilder)."""
    from kgroup.core.consumer_group.records import (
        ConsumerGroupMemberRecord, ConsumerGroupMetadataRecord, ConsumerGroupTargetAssignmentRecord,
    )
    header = ConsumerGroupMetadataRecord(group_id, group_epoch,
                                         group_epoch if assignment_epoch is None else assignment_epoch,
                                         tuple(sorted((metadata or {}).items())))
    return ([header] + [ConsumerGroupMemberRecord(group_id, m) for m in members]
            + [ConsumerGroupTargetAssignmentRecord(group_id, mid, parts) for mid, parts in targets.items()])
