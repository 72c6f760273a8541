"""Mock time for a group to absorb one joining member: classic cooperative-sticky vs KIP-848.

Ten pure members (kgroup's own, both protocols) on the in-memory cluster with a
MockClock; an eleventh joins at a seeded moment of the heartbeat cycle, and the
clock runs until the group is settled with the newcomer holding its share.
Kafka's default timings for each protocol: the classic consumer heartbeats every
3 s (``heartbeat.interval.ms``), a KIP-848 member on the coordinator's 5 s
(``group.consumer.heartbeat.interval.ms``); a second KIP-848 run uses 3 s too, so
the two protocols are compared at one cadence.  The times are mock milliseconds:
what a real group would take, independent of the machine.
"""
from __future__ import annotations

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.testing import InMemoryKafka, MockClock

MEMBERS = 10
PARTITIONS_PER_MEMBER = 6
JOIN_OFFSETS_MS = (0, 700, 1_900, 2_900)
MEMBER = dict(enable_auto_commit=False, fetch_committed_on_assignment=False)


def absorb_ms(protocol: str, join_offset_ms: int, kip848_interval_ms: int = 5_000) -> int:
    coordinator = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0,
                                         consumer_group_heartbeat_interval_ms=kip848_interval_ms)
    kafka = InMemoryKafka(1, clock=MockClock(0), offsets_partitions=3, coordinator_config=coordinator)
    try:
        kafka.create_topic("t", PARTITIONS_PER_MEMBER * (MEMBERS + 1))
        config = dict(MEMBER)
        if protocol == "classic":
            config["assignors"] = ("cooperative-sticky",)
        else:
            config["group_protocol"] = "consumer"
        for i in range(MEMBERS):
            kafka.member(f"m{i}", "g", ["t"], **config)
        kafka.run_until(lambda: kafka.group_settled("g"), limit_ms=600_000)
        kafka.run(join_offset_ms, 10)
        kafka.member("new", "g", ["t"], **config)
        return kafka.run_until(lambda: kafka.group_settled("g")
                               and len(kafka.members()["new"].assignment) == PARTITIONS_PER_MEMBER,
                               limit_ms=600_000)
    finally:
        kafka.close()


@pytest.mark.parametrize("protocol, interval_ms",
                         [("classic", 3_000), ("consumer", 5_000), ("consumer", 3_000)])
def test_time_to_absorb_a_joining_member(protocol, interval_ms, benchmark, capsys):
    def run() -> list:
        return [absorb_ms(protocol, offset, interval_ms) for offset in JOIN_OFFSETS_MS]

    times = benchmark.pedantic(run, rounds=1, iterations=1)
    # Bounded by a few heartbeat intervals: the classic protocol's two rounds, KIP-848's one
    # heartbeat of the old members (revoke, acknowledge) and the newcomer's next heartbeat.
    assert all(0 < t <= 3 * interval_ms for t in times), times
    with capsys.disabled():
        print(f"\n{MEMBERS} members absorb one, {protocol} ({interval_ms} ms heartbeats): mock ms {times}")
