"""Real-thread KIP-848 consumers on an in-process hub (shared by tests/consumer_member).

``OwnershipLedger`` is the invariant: every rebalance callback of every
consumer updates it, and a partition handed to one consumer while another
(live) one still holds it fails the test at that instant.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

import pytest

from kgroup.core import messages as m
from kgroup.core.broker import with_context
from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.coordinator.standalone import StandaloneCoordinator
from kgroup.core.consumer_group.records import ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone
from kgroup.io.group_consumer import GroupConsumer
from kgroup.io.inprocess import InProcessHub

TOPICS = {"t": 6}
#: Kafka's defaults are a 5 s interval and a 45 s session: scaled down for tests.
FAST_BROKER = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0,
                                     consumer_group_heartbeat_interval_ms=100,
                                     consumer_group_session_timeout_ms=800)
FAST_MEMBER = dict(max_poll_interval_ms=5000, retry_backoff_ms=50, enable_auto_commit=False)


class OwnershipLedger:
    def __init__(self) -> None:
        self.owner: dict = {}
        self.violations: list[str] = []
        self.history: list[tuple[str, str, tuple]] = []

    def listener(self, name: str) -> "LedgerListener":
        return LedgerListener(self, name)

    def assigned(self, name: str, partitions: Iterable) -> None:
        for tp in partitions:
            holder = self.owner.get(tp)
            if holder is not None and holder != name:
                self.violations.append(f"{tp} assigned to {name} while {holder} still owns it")
            self.owner[tp] = name
        self.history.append((name, "assigned", tuple(partitions)))

    def released(self, name: str, partitions: Iterable, how: str) -> None:
        for tp in partitions:
            if self.owner.get(tp) == name:
                del self.owner[tp]
        self.history.append((name, how, tuple(partitions)))

    def forget(self, name: str) -> None:
        """``name`` crashed: a dead process owns nothing."""
        for tp in [tp for tp, holder in self.owner.items() if holder == name]:
            del self.owner[tp]

    def owned_by(self, name: str) -> frozenset:
        return frozenset(tp for tp, holder in self.owner.items() if holder == name)


class LedgerListener:
    def __init__(self, ledger: OwnershipLedger, name: str) -> None:
        self._ledger = ledger
        self._name = name

    def on_partitions_assigned(self, partitions) -> None:
        self._ledger.assigned(self._name, partitions)

    def on_partitions_revoked(self, partitions) -> None:
        self._ledger.released(self._name, partitions, "revoked")

    def on_partitions_lost(self, partitions) -> None:
        self._ledger.released(self._name, partitions, "lost")


def consumer_hub(config: GroupCoordinatorConfig = FAST_BROKER, topics: Optional[dict] = None) -> InProcessHub:
    topics = dict(TOPICS if topics is None else topics)
    return InProcessHub(GroupCoordinator(config, topic_metadata=topics.get))


def kip848_consumer(hub: InProcessHub, ledger: OwnershipLedger, name: str, topics=("t",),
                    **config) -> GroupConsumer:
    settings = dict(FAST_MEMBER, **config)
    return GroupConsumer(hub.transport(client_id=name), "g", list(topics), group_protocol="consumer",
                         listener=ledger.listener(name), **settings)


def poll_until(consumers, condition: Callable[[], bool], timeout_s: float = 10.0) -> float:
    """Poll every consumer until ``condition()``; returns the seconds it took (fails past the bound)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        for c in consumers:
            c.poll(10)
        if condition():
            return time.monotonic() - start
    pytest.fail("condition not reached in time: "
                + str([(c.member.state.name, sorted(c.assignment())) for c in consumers]))


def crash(consumer: GroupConsumer) -> None:
    """The process dies: no more heartbeats, polls or answers."""
    consumer._heartbeat.stop(timeout_s=2.0)
    consumer._runner.transport.isolate()


class RecordingCoordinator(StandaloneCoordinator):
    """A standalone coordinator that keeps every record it writes: the coordinator's own trace of
    each KIP-848 member (state, epoch, assigned and pending-revocation partitions)."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        super().__init__(coordinator)
        self.member_records: list = []

    def send(self, node_id, request_key, request, now_ms, context=None):
        if isinstance(request, m.FindCoordinatorRequest):
            return super().send(node_id, request_key, request, now_ms, context)
        result = self.coordinator.handle(request_key, with_context(request, context), now_ms)
        self._keep(result.records)
        return list(result.deliveries)

    def handle_timer(self, now_ms):
        result = self.coordinator.handle_timer(now_ms)
        self._keep(result.records)
        return list(result.deliveries)

    def _keep(self, records) -> None:
        for record in records:
            if isinstance(record, (ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone)):
                self.member_records.append(record)
