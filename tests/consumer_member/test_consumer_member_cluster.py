"""KIP-848 GroupConsumers on kgroup's in-memory cluster (``kgroup_cluster`` fixture): coordinator
failover in the middle of a reconciliation, and a static member's bounce.  Real threads, every
wait bounded; the ledger fails the test if a partition is handed to a member while another live
member still owns it."""
from __future__ import annotations

import time

import pytest

from kgroup import GroupCoordinatorConfig
from kgroup.core.consumer_group.group import ConsumerGroupState
from kgroup.core.member.consumer import ConsumerMemberState

from consumer_member_inprocess_harness import OwnershipLedger

FAST = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, consumer_group_heartbeat_interval_ms=100,
                              consumer_group_session_timeout_ms=1500)
MEMBER = dict(group_protocol="consumer", enable_auto_commit=False, retry_backoff_ms=50)


def poll_until(cluster, consumers, condition, timeout_s: float = 10.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        for c in consumers:
            c.poll(10)
        if condition():
            return time.monotonic() - start
    pytest.fail("not reached in time: " + str([(c.member, sorted(c.assignment())) for c in consumers]))


def balanced(cluster, consumers) -> bool:
    sizes = sorted(len(c.assignment()) for c in consumers)
    return sizes[-1] - sizes[0] <= 1 and sum(sizes) == 6 and cluster.group_settled("billing")


@pytest.mark.kgroup_cluster(brokers=3, offsets_partitions=5, coordinator_config=FAST)
def test_coordinator_failover_in_the_middle_of_a_reconciliation(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 6)
    ledger = OwnershipLedger()
    consumers = [kgroup_cluster.consumer("billing", ["orders"], listener=ledger.listener(f"c{i}"),
                                         client_id=f"c{i}", **MEMBER) for i in range(2)]
    poll_until(kgroup_cluster, consumers, lambda: balanced(kgroup_cluster, consumers))
    old = kgroup_cluster.coordinator_node("billing")
    # A third member joins; the coordinator dies while the first two are still revoking for it.
    consumers.append(kgroup_cluster.consumer("billing", ["orders"], listener=ledger.listener("c2"),
                                             client_id="c2", **MEMBER))
    reconciling = ConsumerGroupState.RECONCILING
    poll_until(kgroup_cluster, consumers[2:], lambda: kgroup_cluster.group_state("billing") is reconciling)
    kgroup_cluster.kill_broker(old)
    poll_until(kgroup_cluster, consumers, lambda: balanced(kgroup_cluster, consumers), timeout_s=15.0)
    assert kgroup_cluster.coordinator_node("billing") != old
    assert sorted(len(c.assignment()) for c in consumers) == [2, 2, 2]
    assert ledger.violations == []


@pytest.mark.kgroup_cluster(brokers=1, offsets_partitions=3, coordinator_config=FAST)
def test_static_member_bounce_keeps_its_partitions_without_moving_the_others(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 6)
    ledger = OwnershipLedger()
    stayer = kgroup_cluster.consumer("billing", ["orders"], listener=ledger.listener("stayer"),
                                     client_id="stayer", **MEMBER)
    static = kgroup_cluster.consumer("billing", ["orders"], listener=ledger.listener("static-1"),
                                     group_instance_id="static-1", **MEMBER)
    poll_until(kgroup_cluster, [stayer, static], lambda: balanced(kgroup_cluster, [stayer, static]))
    kept, stayer_had = static.assignment(), stayer.assignment()
    before_bounce = len(ledger.history)
    static.close()  # a static member leaves with epoch -2: it will be back
    assert static.member.member_epoch == -2
    restarted = kgroup_cluster.consumer("billing", ["orders"], listener=ledger.listener("static-1"),
                                        group_instance_id="static-1", **MEMBER)
    took_s = poll_until(kgroup_cluster, [stayer, restarted],
                        lambda: restarted.assignment() == kept and restarted.member.settled, timeout_s=5.0)
    assert took_s < 1.5  # within the session timeout: the coordinator kept the assignment
    assert stayer.assignment() == stayer_had
    assert not [h for h in ledger.history[before_bounce:] if h[0] == "stayer"]  # no callback at all
    assert restarted.member.state is ConsumerMemberState.STABLE
    assert ledger.violations == []


@pytest.mark.kgroup_cluster(brokers=1, offsets_partitions=3, mock_clock=True, coordinator_config=FAST)
def test_pure_kip848_members_on_a_mock_clock_replay_exactly(kgroup_cluster):
    """InMemoryKafka.member(group_protocol="consumer"): deterministic ids (seeded by name) and timing."""
    kgroup_cluster.create_topic("orders", 6)
    members = [kgroup_cluster.member(f"m{i}", "billing", ["orders"], group_protocol="consumer",
                                     enable_auto_commit=False) for i in range(3)]
    took_ms = kgroup_cluster.run_until(lambda: kgroup_cluster.group_settled("billing"), limit_ms=10_000)
    assert sorted(len(m.assignment) for m in members) == [2, 2, 2]
    assert members[0].member_id == kgroup_cluster.members()["m0"].member_id
    assert took_ms <= 3 * FAST.consumer_group_heartbeat_interval_ms + 100
