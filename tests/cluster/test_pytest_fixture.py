"""The kgroup_cluster fixture (pytest11 plugin): threaded consumers on the real clock, and the
mock-clock mode."""
import time

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig, GroupState
from kgroup.testing import InMemoryKafka
from kgroup.values import TopicPartition

FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
CONSUMER = dict(assignors=("range",), session_timeout_ms=1500, heartbeat_interval_ms=100, retry_backoff_ms=50,
                max_poll_interval_ms=30_000)


def _poll_until(consumers, condition, limit_s=20.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(20)
        if condition():
            return
    raise AssertionError(f"not reached in {limit_s} s: {[sorted(c.assignment()) for c in consumers]}")


def _balanced(consumers, partitions=6):
    def check():
        owned = [tp for c in consumers for tp in c.assignment()]
        sizes = {len(c.assignment()) for c in consumers}
        return len(owned) == len(set(owned)) == partitions and max(sizes) - min(sizes) <= 1
    return check


def _member_ids(kafka, group_id):
    return {m.member_id for m in kafka.describe_group(group_id).members}


def test_fixture_is_registered_as_a_plugin(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("kgroup_cluster")


@pytest.mark.kgroup_cluster(coordinator_config=FAST, offsets_partitions=5)
def test_threaded_consumers_survive_coordinator_broker_failure(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 6)
    consumers = [kgroup_cluster.consumer("billing", ["orders"], **CONSUMER) for _ in range(3)]
    _poll_until(consumers, _balanced(consumers))
    tp = TopicPartition("orders", 0)
    owner = next(c for c in consumers if tp in c.assignment())
    owner.commit({tp: 41})

    old = kgroup_cluster.coordinator_node("billing")
    kgroup_cluster.kill_broker(old)
    assert kgroup_cluster.coordinator_node("billing") not in (None, old)
    # Members may find the new coordinator while it still loads; wait for it to be Stable with them.
    _poll_until(consumers, lambda: kgroup_cluster.group_state("billing") is GroupState.STABLE
                and all(c.member.coordinator_id == kgroup_cluster.coordinator_node("billing")
                        for c in consumers)
                and _balanced(consumers)())
    assert owner.committed([tp])[tp].offset == 41


@pytest.mark.kgroup_cluster(coordinator_config=FAST, brokers=1, replication_factor=1, offsets_partitions=1)
def test_isolated_consumer_is_evicted_and_rejoins_when_healed(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 6)
    consumers = [kgroup_cluster.consumer("billing", ["orders"], **CONSUMER) for _ in range(3)]
    _poll_until(consumers, _balanced(consumers))
    cut_off, *others = consumers
    kgroup_cluster.isolate_member(cut_off)
    # The others poll; the isolated one also polls but reaches nobody, so its session expires.
    _poll_until(consumers, _balanced(others))
    assert cut_off.member.member_id not in _member_ids(kgroup_cluster, "billing")
    kgroup_cluster.heal_member(cut_off)
    _poll_until(consumers, _balanced(consumers))


@pytest.mark.kgroup_cluster(mock_clock=True, coordinator_config=FAST, brokers=1, replication_factor=1,
                            offsets_partitions=3)
def test_mock_clock_mode_drives_pure_members(kgroup_cluster):
    assert isinstance(kgroup_cluster, InMemoryKafka)
    kgroup_cluster.create_topic("t", 4)
    for name in "ab":
        kgroup_cluster.member(name, "g", ["t"], assignors=("roundrobin",), session_timeout_ms=1000,
                              heartbeat_interval_ms=100)
    took_ms = kgroup_cluster.run_until(lambda: kgroup_cluster.group_settled("g"))
    assert took_ms < 2_000
    assert sorted(len(m.assignment) for m in kgroup_cluster.members().values()) == [2, 2]
    with pytest.raises(Exception, match="real clock"):
        kgroup_cluster.consumer("g", ["t"])


@pytest.mark.kgroup_cluster(coordinator_config=FAST, offsets_partitions=5)
def test_group_settled_sees_threaded_consumers(kgroup_cluster):
    """README "Testing consumers without a broker": poll threaded consumer()s until group_settled."""
    kgroup_cluster.create_topic("orders", 6)
    assert not kgroup_cluster.group_settled("billing")  # nobody has joined yet
    consumers = [kgroup_cluster.consumer("billing", ["orders"], **CONSUMER) for _ in range(3)]
    _poll_until(consumers, lambda: kgroup_cluster.group_settled("billing"))
    assert _member_ids(kgroup_cluster, "billing") == {c.member.member_id for c in consumers}
    assert _balanced(consumers)()

    # A consumer that leaves unsettles the group until the others have rebalanced without it.
    leaving, *staying = consumers
    leaving.close()
    _poll_until(staying, lambda: kgroup_cluster.group_settled("billing") and _balanced(staying)())
    assert _member_ids(kgroup_cluster, "billing") == {c.member.member_id for c in staying}
