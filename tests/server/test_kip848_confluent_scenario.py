"""KIP-848 with stock confluent-kafka members joining and leaving over time, on kgroup's wire server.

Three confluent-kafka 2.16 consumers with ``group.protocol=consumer`` (each in its own process,
``server_client_worker.py``) join one after another while 1,000 records are being consumed from a
6-partition topic; the first one then leaves, and a kgroup ``KafkaConsumer(group_protocol="consumer")``
joins the same group.  Checked:

* every record is consumed; a record is handed out again only if no commit past it had succeeded;
* no partition is owned by two members at any instant, both from the consumers' assign/revoke
  callbacks and from the coordinator's own view (each member's assigned partitions plus those
  pending revocation, read after every group-API answer);
* the coordinator really moved members through ``UNREVOKED_PARTITIONS`` and
  ``UNRELEASED_PARTITIONS`` (Kafka's ``CurrentAssignmentBuilder`` states), i.e. the handovers were
  the protocol's incremental ones and not a stop-the-world.
"""
from __future__ import annotations

import threading
import time
from typing import Dict, FrozenSet, List, Set, Tuple

import pytest

from kgroup.core.consumer_group.member import MemberState
from kgroup.core.coordinator import GroupCoordinatorConfig

pytest.importorskip("confluent_kafka")

TOPIC = "kip848-scenario"
GROUP = "kip848-scenario-group"
RECORDS = 1000
#: Short broker heartbeats (Kafka's group.consumer.heartbeat.interval.ms) so each handover takes
#: a few hundred ms; the session timeout stays well above a loaded machine's scheduling hiccups.
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=200,
                                consumer_group_session_timeout_ms=10_000)
#: Longest wait for one step of the scenario (a few hundred ms on an idle machine).
STEP_S = 20.0
#: Every wait also ends by this many seconds after the start, so the test ends in < 60 s.
TOTAL_S = 55.0


class CoordinatorView:
    """The group's members as the coordinator holds them after every group-API answer (server thread)."""

    def __init__(self, server) -> None:
        self._server = server
        self._lock = threading.Lock()
        #: (monotonic time, {member id: (state, epoch, owned partitions)}) whenever something changed.
        self.snapshots: List[Tuple[float, Dict[str, Tuple[MemberState, int, FrozenSet[int]]]]] = []
        self.states_seen: Set[MemberState] = set()

    def __call__(self, request, answer, now_ms: int) -> None:
        coordinator = self._server.hosting.coordinator_for(GROUP) if self._server.hosting else None
        group = None if coordinator is None else coordinator.consumer_group(GROUP)
        if group is None:
            return
        members = {member_id: (m.state, m.member_epoch, frozenset(tp.partition for tp in m.owned()))
                   for member_id, m in group.members.items()}
        with self._lock:
            if not self.snapshots or self.snapshots[-1][1] != members:
                self.snapshots.append((time.monotonic(), members))
                self.states_seen.update(state for state, _, _ in members.values())

    def assert_no_partition_owned_twice(self) -> None:
        with self._lock:
            snapshots = list(self.snapshots)
        for t, members in snapshots:
            holders: Dict[int, str] = {}
            for member_id, (state, epoch, owned) in members.items():
                for p in owned:
                    assert p not in holders, (f"at {t:.3f} the coordinator gave partition {p} to "
                                              f"{holders[p]} and {member_id}: {members}")
                    holders[p] = member_id


@pytest.mark.kafka_broker(brokers=3, coordinator=CONFIG)
def test_confluent_consumers_join_and_leave_over_time(kafka_broker, broker_client_matrix):
    started = time.monotonic()

    def budget() -> float:
        """What one wait may take: a step, but never past the whole test's bound."""
        return max(0.1, min(STEP_S, started + TOTAL_S - time.monotonic()))
    matrix = broker_client_matrix
    view = CoordinatorView(kafka_broker)
    kafka_broker.observe_groups(view)
    matrix.create_topic("confluent", TOPIC)
    matrix.produce("confluent", TOPIC, 0, RECORDS // 2)

    def start(kind: str):
        # Small batches with a pause: the group is still consuming while members come and go.
        return matrix.start(kind, TOPIC, GROUP, group_protocol="consumer", max_records=5,
                            batch_sleep_ms=10, commit_every=3)

    first = start("confluent")
    matrix.wait_settled(GROUP, [first], "the first consumer to own every partition", budget())
    # Every partition gets a committed offset before any handover.  In 2 of ~60 runs without this,
    # a confluent-kafka 2.16 member that had started a partition from auto.offset.reset (nothing
    # committed yet) rewound it to offset 0 right after an unrelated partition was revoked
    # incrementally, though it had committed far beyond since: no Fetch error preceded its
    # ListOffsets, so it looks like a librdkafka resume quirk (cf. confluentinc/librdkafka#4686),
    # which would fail the duplicates check below for a client reason.
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    second = start("confluent")
    matrix.wait_settled(GROUP, [first, second], "two consumers to split the partitions", budget())
    matrix.produce("confluent", TOPIC, RECORDS // 2, RECORDS - RECORDS // 2)
    third = start("confluent")
    matrix.wait_settled(GROUP, [first, second, third], "three consumers to split the partitions", budget())
    first.close(timeout_s=budget())
    matrix.wait_settled(GROUP, [second, third], "the leaver's partitions to move on", budget())
    # Mixed group: kgroup's own KIP-848 member joins the confluent ones.
    fourth = start("kgroup")
    matrix.wait_settled(GROUP, [second, third, fourth], "kgroup's consumer to get its share", budget())

    matrix.wait_consumed(RECORDS, timeout_s=budget(), group_id=GROUP)
    matrix.wait_caught_up(TOPIC, GROUP, timeout_s=budget())
    for member in (second, third, fourth):
        member.close(timeout_s=budget())

    matrix.assert_every_record_consumed()
    matrix.ledger.assert_duplicates_only_uncommitted()
    matrix.ledger.assert_no_partition_owned_twice()
    view.assert_no_partition_owned_twice()
    reconciling = {MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS}
    assert reconciling <= view.states_seen, f"the coordinator only reached {view.states_seen}"
    # Every member, including kgroup's, is in the coordinator's view of the group at some point.
    assert len({member_id for _, members in view.snapshots for member_id in members}) == 4
    assert time.monotonic() - started < 60
