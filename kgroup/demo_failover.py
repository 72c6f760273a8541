"""The demo's second half: a consumer group on kgroup's in-memory cluster while its coordinator fails.

Runs on a mock clock, so the timeline it prints is the same on every machine.
"""
from __future__ import annotations

import sys
from typing import TextIO

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.member import CommitCompleted, CommittedFetched, PartitionsAssigned, PartitionsRevoked
from kgroup.io.clock import MockClock
from kgroup.testing.in_memory_kafka import InMemoryKafka

GROUP = "billing"
CONSUMERS = 6
PARTITIONS = 12
MEMBER_CONFIG = dict(assignors=("cooperative-sticky",), session_timeout_ms=10_000,
                     heartbeat_interval_ms=3_000, retry_backoff_ms=100, enable_auto_commit=False,
                     fetch_committed_on_assignment=False)


class _Log:
    def __init__(self) -> None:
        self.events: list = []

    def __call__(self, name: str, events: list) -> None:
        self.events.extend((name, e) for e in events)

    def find(self, kind, name=None, token=None):
        """Events of ``kind``; with ``name`` and ``token``, that member's completion (tokens are per
        member)."""
        return [e for n, e in self.events
                if isinstance(e, kind) and (name is None or n == name)
                and (token is None or e.token == token)]


def run_failover(out: TextIO) -> dict:
    """Print the failover timeline; return its figures (tests read them)."""
    ids = iter(range(10**6))
    clock = MockClock(0)
    kafka = InMemoryKafka(3, offsets_partitions=10, clock=clock,
                          coordinator_config=GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0),
                          member_id_factory=lambda prefix: f"{prefix}-{next(ids)}")
    log = _Log()
    try:
        kafka.create_topic("orders", PARTITIONS)
        for i in range(CONSUMERS):
            kafka.member(f"consumer-{i + 1}", GROUP, ["orders"], **MEMBER_CONFIG)
        join_ms = kafka.run_until(lambda: kafka.group_settled(GROUP), on_events=log)
        members = kafka.members()
        generation = next(iter(members.values())).generation.generation_id
        out.write(f"\n[in-memory cluster] 3 brokers, __consumer_offsets x10 (RF 3), "
                  f"{CONSUMERS} cooperative-sticky consumers on orders[{PARTITIONS}]\n")
        out.write(f"  joined:   Stable after {join_ms} ms (mock clock), generation {generation}, "
                  f"coordinator broker {kafka.coordinator_node(GROUP)}\n")

        commits = {tp: 100 + tp.partition for m in members.values() for tp in m.assignment}
        tokens = {name: m.commit_offsets({tp: commits[tp] for tp in m.assignment}, clock())
                  for name, m in members.items()}
        kafka.run_until(lambda: all(log.find(CommitCompleted, n, t) for n, t in tokens.items()),
                        on_events=log)
        acknowledged = all(log.find(CommitCompleted, n, t)[0].error is None for n, t in tokens.items())
        out.write(f"  commits:  {len(commits)} offsets committed, acknowledged={acknowledged} "
                  "(only once on every in-sync replica)\n")

        old = kafka.coordinator_node(GROUP)
        assert old is not None, "a settled group has a coordinator"
        assigned_before = len(log.find(PartitionsAssigned)) + len(log.find(PartitionsRevoked))
        kafka.kill_broker(old)
        failover_ms = kafka.run_until(lambda: kafka.group_settled(GROUP), on_events=log)
        new = kafka.coordinator_node(GROUP)
        after = next(iter(kafka.members().values())).generation.generation_id
        rebalanced = len(log.find(PartitionsAssigned)) + len(log.find(PartitionsRevoked)) - assigned_before
        out.write(f"  failover: broker {old} killed; broker {new} loaded the group and it was Stable "
                  f"again after {failover_ms} ms; generation {generation}->{after}, "
                  f"rebalance callbacks {rebalanced}\n")

        reader, member = next(iter(kafka.members().items()))
        token = member.fetch_committed(sorted(commits), clock())
        kafka.run_until(lambda: bool(log.find(CommittedFetched, reader, token)), on_events=log)
        fetched = log.find(CommittedFetched, reader, token)[0].offsets
        intact = all(fetched[tp] is not None and fetched[tp].offset == off for tp, off in commits.items())
        out.write(f"  offsets:  read back from broker {new}: {'all intact' if intact else 'LOST'}\n")

        kafka.remove_member("consumer-1")
        leave_ms = kafka.run_until(lambda: kafka.group_settled(GROUP), on_events=log)
        sizes = sorted(len(m.assignment) for m in kafka.members().values())
        out.write(f"  leave:    consumer-1 left; Stable after {leave_ms} ms with sizes {sizes}\n")
        return {"join_ms": join_ms, "failover_ms": failover_ms, "generation_before": generation,
                "generation_after": after, "rebalance_callbacks": rebalanced, "offsets_intact": intact,
                "acknowledged": acknowledged, "sizes_after_leave": sizes, "old": old, "new": new}
    finally:
        kafka.close()


if __name__ == "__main__":
    run_failover(sys.stdout)
