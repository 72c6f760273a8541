"""Kafka's ``roundrobin`` assignor.

Every partition of every subscribed topic, ordered by topic then partition,
is dealt to the members in a fixed cycle (Java's ``MemberInfo`` order);
a partition goes to the next member in the cycle that subscribes to its
topic.

Instead of walking the cycle one partition at a time, each run of
consecutive topics with the same subscribers is dealt in slices: its
subscribers, in cycle order starting from the cursor, take every m-th
partition.  That is the same result in O(partitions + members
per run), and the per-partition work is list slicing in C.
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from typing import Mapping, Optional

from kgroup.assignors._member_order import ordered_members
from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.values import Assignment, Subscription, TopicPartition

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(Assignor):
    """Deals partitions to members in a cycle, skipping non-subscribers."""

    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Optional[PartitionRacks] = None,
    ) -> dict[str, Assignment]:
        members = ordered_members(subscriptions)
        # subscribers of each topic, as positions in the cycle (ascending)
        positions_by_topic: dict[str, list[int]] = {}
        for position, member_id in enumerate(members):
            for topic in dict.fromkeys(subscriptions[member_id].topics):  # ordered, deduplicated
                positions_by_topic.setdefault(topic, []).append(position)

        # Consecutive topics (in sorted order) with the same subscribers form
        # one run dealt as a single sequence: the cycle simply continues.
        runs: list[tuple[list[int], list]] = []
        for topic in sorted(positions_by_topic):
            count = partitions_per_topic.get(topic, 0)
            if count <= 0:
                continue
            positions = positions_by_topic[topic]
            # tuple.__new__ builds the named tuples without a Python-level call each
            tps = map(tuple.__new__, repeat(TopicPartition), zip(repeat(topic), range(count)))
            if runs and runs[-1][0] == positions:
                runs[-1][1].extend(tps)
            else:
                runs.append((positions, list(tps)))

        chunks: list[list] = [[] for _ in members]
        cursor = 0  # position in the cycle of the next member to consider
        for positions, run in runs:
            m = len(positions)
            start = bisect_left(positions, cursor)
            if start == m:
                start = 0
            for offset in range(min(m, len(run))):
                chunks[positions[(start + offset) % m]].append(run[offset::m])
            last = positions[(start + len(run) - 1) % m]
            cursor = (last + 1) % len(members)

        result = {}
        for member_id, member_chunks in zip(members, chunks):
            if len(member_chunks) == 1:
                partitions = member_chunks[0]
            else:
                partitions = [tp for chunk in member_chunks for tp in chunk]
            result[member_id] = Assignment(partitions=partitions)
        return result
