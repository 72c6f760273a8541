"""Online migration between the classic and consumer protocols with stock clients on kgroup's wire
server (issue 27: Kafka's group.consumer.migration.policy, bidirectional by default); each scenario also
runs with kgroup's own KafkaConsumer on both sides (group_protocol "classic" and "consumer").

Upgrade: two stock kafka-python consumers (classic protocol, eager ``range``) consume a 6-partition
topic in one group; a stock confluent-kafka consumer with ``group.protocol=consumer`` joins, which
converts the classic group into a consumer group that keeps the kafka-python members (served
JoinGroup / SyncGroup / Heartbeat from the coordinator's target assignment); then the kafka-python
consumers leave one by one and the confluent one ends up with every partition.

Downgrade: a kafka-python consumer joins the confluent one's group (as a classic member of the consumer
group); when the confluent consumer leaves, the group converts back to a classic group and the
kafka-python consumer takes every partition through a classic rebalance.

Checked, as in test_kip848_confluent_scenario.py: every record consumed, a record handed out again only
if no commit past it had succeeded, no partition owned by two members at any instant (from the
members' listeners, and from the coordinator's consumer-group view after every group-API answer).
Every wait is bounded by STEP_S and the whole test by TOTAL_S.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, FrozenSet, List, Set, Tuple

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig

pytest.importorskip("confluent_kafka")

TOPIC = "migration"
GROUP = "migration-group"
RECORDS = 600
#: The last records are produced once the group has settled after the final step: an eager member that
#: gets a partition back keeps its in-memory position (as Java's SubscriptionState.assignFromSubscribed
#: does) while the worker forgets what it handed out before the revocation, so records delivered just
#: before a rebalance are only committed once later records of the same partition arrive.
FINAL = 120
#: Short KIP-848 heartbeats so each handover takes a few hundred ms; sessions stay well above a loaded
#: machine's scheduling hiccups.
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=200,
                                consumer_group_session_timeout_ms=10_000)
#: Longest wait for one step of the scenario (a few seconds on an idle machine: kafka-python's classic
#: members learn of a new target assignment at their next heartbeat, every HEARTBEAT_INTERVAL_MS).
STEP_S = 30.0
#: Every wait also ends by this many seconds after the start.
TOTAL_S = 110.0


class ConsumerGroupView:
    """Who holds which partition in the coordinator's consumer group, after every group-API answer."""

    def __init__(self, server) -> None:
        self._server = server
        self._lock = threading.Lock()
        self.snapshots: List[Tuple[float, Dict[str, FrozenSet[int]]]] = []
        #: Whether the group id was seen as a consumer group holding classic members (the upgrade).
        self.classic_members_seen: Set[str] = set()
        self.consumer_group_seen = False
        self.classic_after_consumer = False

    def __call__(self, request, answer, now_ms: int) -> None:
        coordinator = self._server.hosting.coordinator_for(GROUP) if self._server.hosting else None
        if coordinator is None:
            return
        group = coordinator.consumer_group(GROUP)
        if group is None:
            with self._lock:
                if self.consumer_group_seen and coordinator.group_state(GROUP) is not None:
                    self.classic_after_consumer = True
            return
        owned = {member_id: frozenset(tp.partition for tp in m.owned()) for member_id,
                 m in group.members.items()}
        with self._lock:
            self.consumer_group_seen = True
            self.classic_members_seen.update(mid for mid,
                                             m in group.members.items() if m.uses_classic_protocol)
            if not self.snapshots or self.snapshots[-1][1] != owned:
                self.snapshots.append((time.monotonic(), owned))

    def assert_no_partition_owned_twice(self) -> None:
        with self._lock:
            snapshots = list(self.snapshots)
        for t, members in snapshots:
            holders: Dict[int, str] = {}
            for member_id, owned in members.items():
                for p in owned:
                    assert p not in holders, (f"at {t:.3f} the coordinator gave partition {p} to "
                                              f"{holders[p]} and {member_id}: {members}")
                    holders[p] = member_id


def _owns_everything(member) -> bool:
    return member.owned == frozenset(range(6))


def _handovers(ledger, since: float, until: float) -> Tuple[int, float]:
    """Partitions that changed owner in [since, until], and the partition-seconds no member owned them
    there (from the listeners); figures for the report, not asserted (they depend on the machine)."""
    by_partition: Dict[int, list] = {}
    for _, p, began, ended in ledger.ownership_intervals():
        by_partition.setdefault(p, []).append((max(began, since), min(ended, until)))
    moved, unowned = 0, 0.0
    for intervals in by_partition.values():
        spans = sorted((b, e) for b, e in intervals if b < e)
        moved += sum(1 for b, _ in spans if b > since)
        covered, cursor = 0.0, since
        for b, e in spans:
            if e > cursor:
                covered += e - max(b, cursor)
                cursor = e
        unowned += (until - since) - covered
    return moved, unowned


#: (classic member's client, consumer-protocol member's client): stock clients, and kgroup's own on both
#: sides (kgroup.KafkaConsumer with group_protocol "classic" and "consumer").
CLIENTS = pytest.mark.parametrize("classic_kind,modern_kind", [("kafka-python", "confluent"), ("kgroup",
                                                                                               "kgroup")],
                                  ids=["kafka-python+confluent", "kgroup+kgroup"])


@CLIENTS
@pytest.mark.kafka_broker(brokers=3, coordinator=CONFIG)
def test_rolling_upgrade_from_classic_to_consumer_protocol(
        kafka_broker, broker_client_matrix, classic_kind, modern_kind):
    started = time.monotonic()

    def budget() -> float:
        return max(0.1, min(STEP_S, started + TOTAL_S - time.monotonic()))

    matrix = broker_client_matrix
    view = ConsumerGroupView(kafka_broker)
    kafka_broker.observe_groups(view)
    matrix.create_topic("kafka-python", TOPIC)
    matrix.produce("kafka-python", TOPIC, 0, RECORDS // 2)

    def start(kind: str, group_protocol: str = "classic"):
        return matrix.start(kind, TOPIC, GROUP, group_protocol=group_protocol, max_records=5,
                            batch_sleep_ms=10, commit_every=3)

    # Everything is consumed and committed before the second member's eager rebalance: a kafka-python
    # member that keeps a partition through it resumes from its in-memory position (see FINAL).
    first = start(classic_kind)
    matrix.wait_settled(GROUP, [first], "the first kafka-python consumer to own every partition", budget())
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    second = start(classic_kind)
    matrix.wait_settled(GROUP, [first, second], "two kafka-python consumers to split the partitions",
                        budget())
    steps: Dict[str, float] = {}
    t = migration_started = time.monotonic()
    upgrader = start(modern_kind, "consumer")
    matrix.wait_settled(GROUP, [first, second, upgrader], "the confluent consumer to join the upgraded group",
                        budget())
    steps[f"{modern_kind} joins (upgrade)"] = time.monotonic() - t
    assert kafka_broker._call(lambda: kafka_broker.hosting.coordinator_for(GROUP).consumer_group(GROUP)) \
        is not None, "the group was not upgraded"
    matrix.produce("kafka-python", TOPIC, RECORDS // 2, RECORDS - RECORDS // 2)
    t = time.monotonic()
    first.close(timeout_s=budget())
    matrix.wait_settled(GROUP, [second, upgrader], "the first leaver's partitions to move on", budget())
    steps[f"first {classic_kind} leaves"] = time.monotonic() - t
    t = time.monotonic()
    second.close(timeout_s=budget())
    matrix.wait_until(lambda: _owns_everything(upgrader), "the confluent consumer to own every partition",
                      budget(), group_id=GROUP)
    steps[f"second {classic_kind} leaves"] = time.monotonic() - t
    moved, unowned = _handovers(matrix.ledger, migration_started, time.monotonic())
    matrix.produce("kafka-python", TOPIC, RECORDS, FINAL)

    matrix.wait_consumed(RECORDS + FINAL, timeout_s=budget(), group_id=GROUP)
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    upgrader.close(timeout_s=budget())

    matrix.assert_every_record_consumed()
    matrix.ledger.assert_duplicates_only_uncommitted()
    matrix.ledger.assert_no_partition_owned_twice()
    view.assert_no_partition_owned_twice()
    assert len(view.classic_members_seen) == 2, "the kafka-python members were not kept through the upgrade"
    print(f"upgrade steps (s): {steps}; partitions handed over {moved}, unowned partition-seconds "
          f"{unowned:.2f}")
    assert time.monotonic() - started < TOTAL_S + STEP_S


@CLIENTS
@pytest.mark.kafka_broker(brokers=3, coordinator=CONFIG)
def test_downgrade_when_the_last_consumer_protocol_member_leaves(
        kafka_broker, broker_client_matrix, classic_kind, modern_kind):
    started = time.monotonic()

    def budget() -> float:
        return max(0.1, min(STEP_S, started + TOTAL_S - time.monotonic()))

    matrix = broker_client_matrix
    view = ConsumerGroupView(kafka_broker)
    kafka_broker.observe_groups(view)
    matrix.create_topic("kafka-python", TOPIC)
    matrix.produce("kafka-python", TOPIC, 0, RECORDS // 2)

    def start(kind: str, group_protocol: str):
        return matrix.start(kind, TOPIC, GROUP, group_protocol=group_protocol, max_records=5,
                            batch_sleep_ms=10, commit_every=3)

    modern = start(modern_kind, "consumer")
    matrix.wait_settled(GROUP, [modern], "the confluent consumer to own every partition", budget())
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    classic = start(classic_kind, "classic")
    matrix.wait_settled(GROUP, [modern, classic], "a kafka-python consumer to join the consumer group",
                        budget())
    matrix.produce("kafka-python", TOPIC, RECORDS // 2, RECORDS - RECORDS // 2)
    t = time.monotonic()
    modern.close(timeout_s=budget())
    matrix.wait_until(lambda: _owns_everything(classic), "the kafka-python consumer to own every partition",
                      budget(), group_id=GROUP)
    downgrade_s = time.monotonic() - t
    moved, unowned = _handovers(matrix.ledger, t, time.monotonic())
    matrix.produce("kafka-python", TOPIC, RECORDS, FINAL)
    matrix.wait_consumed(RECORDS + FINAL, timeout_s=budget(), group_id=GROUP)
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    classic.close(timeout_s=budget())

    matrix.assert_every_record_consumed()
    matrix.ledger.assert_duplicates_only_uncommitted()
    matrix.ledger.assert_no_partition_owned_twice()
    view.assert_no_partition_owned_twice()
    assert view.classic_after_consumer, "the group was not downgraded to a classic group"
    print(f"downgrade step (s): {downgrade_s:.2f}; partitions handed over {moved}, unowned partition-seconds "
          f"{unowned:.2f}")
