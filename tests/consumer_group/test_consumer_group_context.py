"""The KIP-848 manager works on one context object, not on the coordinator's callbacks and dicts
(issue 25, point 5), and the consumer_group package no longer needs the coordinator (point 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Hashable, Mapping, Optional, Sequence

from kgroup.core.consumer_group.context import GroupConversionRefused
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.manager import ConsumerGroupManager, session_timer_key
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupRecord, PersistedConsumerGroup,
)
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.coordinator_common.timer import CoordinatorTimer, TimerOperation
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.messages import OffsetAndMetadata
from kgroup.values import TopicPartition

_WORKTREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FakeContext:
    """Only what ConsumerGroupContext declares: records, a timer, topics and the classic side."""

    def __init__(self, topics: dict[str, int], classic: Optional[dict[str, str]] = None) -> None:
        self.records: list[ConsumerGroupRecord] = []
        self.timer = CoordinatorTimer()
        self.topics = topics
        self.classic = dict(classic or {})
        self.released: list[str] = []

    def emit(self, record: ConsumerGroupRecord) -> None:
        self.records.append(record)

    def schedule_timer(self, key: Hashable, deadline_ms: int, operation: TimerOperation) -> None:
        self.timer.schedule(key, deadline_ms, operation)

    def cancel_timer(self, key: Hashable) -> None:
        self.timer.cancel(key)

    def partition_count(self, topic: str) -> Optional[int]:
        return self.topics.get(topic)

    def partition_racks(self, topic: str) -> Sequence[frozenset]:
        return ()

    def classic_group_state(self, group_id: str) -> Optional[str]:
        return self.classic.get(group_id)

    def release_classic_group(self, group_id: str) -> Mapping[TopicPartition, OffsetAndMetadata]:
        self.released.append(group_id)
        self.classic.pop(group_id, None)
        return {TopicPartition("t", 0): OffsetAndMetadata(7)}

    def upgraded_classic_group(self, group_id: str) -> PersistedConsumerGroup:
        raise GroupConversionRefused(f"Group {group_id} is not a consumer group.")

    def downgrade_consumer_group(self, group: ConsumerGroup, leaving_member_id: Optional[str], now_ms: int,
                                 *, rebalance: bool = True) -> None:
        raise AssertionError("no test here has a classic member to downgrade to")

    def is_timer_scheduled(self, key: Hashable) -> bool:
        return key in self.timer


def _join(member_id: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member_id=member_id, member_epoch=0, rebalance_timeout_ms=5_000,
                                         subscribed_topic_names=("t",), topic_partitions=())


def test_the_manager_takes_an_empty_classic_group_id_and_arms_a_session_that_fences_on_expiry():
    context = FakeContext({"t": 2}, classic={"g": "Empty"})
    manager = ConsumerGroupManager(GroupCoordinatorConfig(), context)
    response = manager.heartbeat(_join("m1"), 0)
    # A new group starts at epoch 1, so its first assignment is epoch 2 (KAFKA-20268, Kafka 4.4).
    assert response.error_code is E.NONE and response.member_epoch == 2
    group = manager.group("g")
    assert group is not None and set(group.members) == {"m1"}
    assert context.released == ["g"] and group.offsets == {TopicPartition("t", 0): OffsetAndMetadata(7)}
    assert any(isinstance(r, ConsumerGroupMemberRecord) for r in context.records)
    session_ms = GroupCoordinatorConfig().consumer_group_session_timeout_ms
    assert context.timer.deadline_of(session_timer_key("g", "m1")) == session_ms
    context.timer.handle_timer(session_ms)  # the timer runs the operation the manager scheduled
    assert "m1" not in group.members


def test_the_manager_refuses_a_non_empty_classic_group_id_through_the_context():
    context = FakeContext({"t": 2}, classic={"g": "Stable"})
    manager = ConsumerGroupManager(GroupCoordinatorConfig(), context)
    assert manager.heartbeat(_join("m1"), 0).error_code is E.GROUP_ID_NOT_FOUND
    assert manager.group("g") is None and context.released == [] and context.records == []


def test_loading_the_consumer_group_package_loads_no_coordinator_module():
    """core.consumer_group sits below core.coordinator (docs/architecture.md): it must import on its own."""
    probe = ("import json, sys, kgroup.core.consumer_group.manager, kgroup.core.consumer_group.records; "
             "print(json.dumps(sorted(sys.modules)))")
    completed = subprocess.run([sys.executable, "-c", probe], cwd=_WORKTREE, capture_output=True, text=True,
                               check=True, timeout=120)
    loaded = json.loads(completed.stdout.strip().splitlines()[-1])
    coordinator_modules = [m for m in loaded if m.split(".")[:3] == ["kgroup", "core", "coordinator"]]
    assert coordinator_modules == []


def test_loading_the_broker_seam_loads_no_core_subpackage():
    """The seam (kgroup.core.broker) is a core base module: only values, errors and base modules below it."""
    probe = "import json, sys, kgroup.core.broker; print(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", probe], cwd=_WORKTREE, capture_output=True, text=True,
                               check=True, timeout=120)
    loaded = json.loads(completed.stdout.strip().splitlines()[-1])
    subpackages = ("coordinator", "coordinator_common", "consumer_group", "cluster", "member")
    assert [m for m in loaded if m.split(".")[:3] in [["kgroup", "core", p] for p in subpackages]] == []
