"""``uniform-rack-aware`` against ``uniform`` (KIP-848 server assignors): time, memory, rack-local share.

Same input for both, in the same run: members on 3 racks (member ``i`` on rack ``i % 3``), partitions
with 3 replicas (RF 3) on 6 brokers, 2 a rack; each partition's replicas are 3 of the 6 brokers drawn
with a fixed seed, as a placement that ignores racks gives (Kafka places replicas rack-aware only when
brokers have ``broker.rack``): 40% of the partitions have a replica on every rack, 60% on two.  With one
replica per rack (``--one-replica-per-rack``) every partition is on every rack, and the rack-aware
assignor is ``uniform`` (KIP-881's rule: nothing to gain).

Scenarios: **fresh** (nobody owns anything) and **join** (one member, rack 0, joins a group that holds the
assignor's own fresh answer).  Only the ``assign`` call is timed (best of N); memory is the peak
``tracemalloc`` reports for one more call (tracing slows that call, so it is not timed).  Rack-local % is
KIP-881's: the share of partitions whose member's rack holds one of their replicas.  Not collected by
pytest; the issue's two sizes take about 2 minutes::

    python -m benchmarks.rack_aware_assignor
    python -m benchmarks.rack_aware_assignor --sizes 1000x10000 --rounds 5
"""
from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from typing import Callable, Mapping, Optional

from kgroup.assignors import AssignmentMember, PartitionRacks, ServerAssignor, get_server_assignor
from kgroup.assignors.uniform_rack_aware import rack_local_count
from kgroup.values import TopicPartition

RACKS = ("rack-0", "rack-1", "rack-2")
BROKERS = 6
REPLICATION_FACTOR = 3
#: The issue's sizes: (members, topics, partitions a topic).
SIZES = {"1000x10000": (1000, 10, 1000), "2000x1000000": (2000, 100, 10_000)}
NEWCOMER = "consumer-99999"

Assigned = dict[str, frozenset[TopicPartition]]


def topology(topics: int, partitions_per_topic: int, one_replica_per_rack: bool,
             seed: int = 27) -> tuple[dict[str, int], PartitionRacks]:
    rng = random.Random(seed)
    broker_rack = {broker: RACKS[broker % len(RACKS)] for broker in range(BROKERS)}
    replica_sets = [frozenset(broker_rack[b] for b in combo) for combo in _combinations(BROKERS)]
    every_rack = frozenset(RACKS)
    partitions_per_topic_map = {f"topic-{t:03d}": partitions_per_topic for t in range(topics)}
    racks = {topic: [every_rack if one_replica_per_rack else rng.choice(replica_sets)
                     for _ in range(partitions_per_topic)]
             for topic in partitions_per_topic_map}
    return partitions_per_topic_map, racks


def _combinations(brokers: int) -> list[tuple[int, ...]]:
    import itertools
    return list(itertools.combinations(range(brokers), REPLICATION_FACTOR))


def members_of(count: int, topics, current: Optional[Mapping[str, frozenset]] = None,
               newcomer: bool = False) -> dict[str, AssignmentMember]:
    current = current or {}
    ids = [f"consumer-{m:05d}" for m in range(count)] + ([NEWCOMER] if newcomer else [])
    return {member_id: AssignmentMember(member_id, topics, current.get(member_id, frozenset()),
                                        rack_id=RACKS[index % len(RACKS)])
            for index, member_id in enumerate(ids)}


def call_of(assignor: ServerAssignor, members, partitions_per_topic, racks) -> Callable[[], Assigned]:
    if assignor.uses_partition_racks:
        return lambda: assignor.assign(members, partitions_per_topic, partition_racks=racks)  # type: ignore
    return lambda: assignor.assign(members, partitions_per_topic)


def measure(call: Callable[[], Assigned], rounds: int) -> tuple[float, float, Assigned]:
    """(best seconds, peak MiB, the answer)."""
    best = float("inf")
    result: Assigned = {}
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    del result
    gc.collect()
    tracemalloc.start()
    result = call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, result


def check(result: Assigned, members, total: int) -> None:
    assert sum(len(p) for p in result.values()) == total
    assert len(frozenset().union(*result.values())) == total
    sizes = [len(p) for p in result.values()]
    assert max(sizes) - min(sizes) <= 1
    assert set(result) == set(members)


def run(size: str, rounds: int, one_replica_per_rack: bool) -> list[str]:
    member_count, topics, per_topic = SIZES[size]
    partitions_per_topic, racks = topology(topics, per_topic, one_replica_per_rack)
    topic_names = tuple(partitions_per_topic)
    total = topics * per_topic
    rows = []
    for name in ("uniform", "uniform-rack-aware"):
        assignor = get_server_assignor(name)
        fresh_members = members_of(member_count, topic_names)
        fresh_s, fresh_mib, fresh = measure(call_of(assignor, fresh_members, partitions_per_topic, racks),
                                            rounds)
        check(fresh, fresh_members, total)
        joined = members_of(member_count, topic_names, fresh, newcomer=True)
        join_s, join_mib, after = measure(call_of(assignor, joined, partitions_per_topic, racks), rounds)
        check(after, joined, total)
        moved = sum(len(fresh[m] - after[m]) for m in fresh)
        for scenario, seconds, mib, result, members in (
                ("fresh", fresh_s, fresh_mib, fresh, fresh_members),
                ("join", join_s, join_mib, after, joined)):
            local = rack_local_count(result, members, racks) / total
            extra = (f"{moved:,} moved ({len(after[NEWCOMER]):,} to the newcomer)" if scenario == "join"
                     else "")
            rows.append(f"| {member_count:,} x {total:,} | {scenario} | {name} | {seconds * 1000:,.0f} | "
                        f"{mib:,.0f} | {local:.1%} | {extra} |")
        del fresh, after
    return rows


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(SIZES),
                        help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--rounds", type=int, default=0, help="timed calls a case (default 5, 2 at 1M)")
    parser.add_argument("--one-replica-per-rack", action="store_true",
                        help="every partition on every rack (rack-aware placement)")
    args = parser.parse_args(argv)
    print("| members x partitions | scenario | assignor | best ms | peak MiB | rack-local | moves |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        rounds = args.rounds or (2 if SIZES[size][1] * SIZES[size][2] >= 1_000_000 else 5)
        for row in run(size, rounds, args.one_replica_per_rack):
            print(row, flush=True)


if __name__ == "__main__":
    main()
