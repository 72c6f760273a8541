"""Kafka's ``range`` assignor, with KIP-881 rack awareness.

Per topic, the subscribers are ordered (static members by instance id, then
dynamic members by member id) and given contiguous ranges; the first
``P % N`` get one extra partition.

Rack-aware mode follows Java 4.x's RangeAssignor: when a topic's partitions
are not replicated on every rack and some member has a rack, partitions are
first handed to members on a rack that hosts them, within each member's
range quota; topics with the same subscribers and the same partition count
(co-partitioned) are matched together, so partition p of each goes to one
member.  The ordinary range pass then places what is left.  Without member
racks or partition racks the output is exactly the non-rack output.
"""
from __future__ import annotations

from itertools import repeat
from typing import Callable, Mapping, Optional

from kgroup.assignors._member_order import ordered_members
from kgroup.assignors.base import Assignor, PartitionRacks, RebalanceProtocol
from kgroup.values import Assignment, Subscription, TopicPartition

__all__ = ["RangeAssignor"]


class _TopicState:
    """One topic's progress: unassigned partitions and per-member quotas."""

    def __init__(self, topic: str, count: int, members: list[str], member_racks: Mapping[str, str],
                 partition_racks: Optional[PartitionRacks]) -> None:
        self.topic = topic
        self.count = count
        self.members = tuple(members)
        self.member_racks = member_racks
        self.unassigned = dict.fromkeys(range(count))  # ordered set of partition numbers
        self.assigned = dict.fromkeys(members, 0)
        self.base, self.with_extra = divmod(count, len(members)) if members else (0, 0)
        racks_here = {member_racks[m] for m in members if m in member_racks}
        self.partition_racks: list[frozenset] = []
        if racks_here:
            by_partition = (partition_racks or {}).get(topic, ())
            self.partition_racks = [
                frozenset(by_partition[p]) if p < len(by_partition) else frozenset() for p in range(count)
            ]
        all_partition_racks = frozenset().union(*self.partition_racks)
        # Rack matching only matters if some member rack hosts partitions and
        # not every partition is on every rack (Java's useRackAwareAssignment).
        self.needs_rack_matching = bool(
            racks_here
            and not racks_here.isdisjoint(all_partition_racks)
            and not all(r == all_partition_racks for r in self.partition_racks)
        )

    def max_assignable(self, member: str) -> int:
        return max(0, self.base + (1 if self.with_extra > 0 else 0) - self.assigned[member])

    def racks_match(self, member: str, partition: int) -> bool:
        rack = self.member_racks.get(member)
        return rack is None or rack in self.partition_racks[partition]

    def take(self, member: str, partitions: list[int], out: dict[str, list]) -> None:
        out[member].extend(TopicPartition(self.topic, p) for p in partitions)
        self.assigned[member] += len(partitions)
        if self.assigned[member] > self.base:
            self.with_extra -= 1
        for p in partitions:
            del self.unassigned[p]


def _assign_ranges(state: _TopicState, may_assign: Callable[[str, int], bool], out: dict[str, list]) -> None:
    for member in state.members:
        if not state.unassigned:
            return
        limit = state.max_assignable(member)
        chosen = []
        if limit:
            for p in state.unassigned:
                if may_assign(member, p):
                    chosen.append(p)
                    if len(chosen) == limit:
                        break
        if chosen:
            state.take(member, chosen, out)


def _slice_ranges(state: _TopicState, out: dict[str, list]) -> None:
    tps = list(map(tuple.__new__, repeat(TopicPartition), zip(repeat(state.topic), range(state.count))))
    start = 0
    for index, member in enumerate(state.members):
        size = state.base + (1 if index < state.with_extra else 0)
        out[member].extend(tps[start:start + size])
        start += size


def _assign_co_partitioned(states: list[_TopicState], out: dict[str, list]) -> None:
    remaining = list(states[0].members)
    for p in range(states[0].count):
        for member in remaining:
            if all(s.racks_match(member, p) and s.max_assignable(member) > 0 for s in states):
                for s in states:
                    s.take(member, [p], out)
                if not any(s.max_assignable(member) > 0 for s in states):
                    remaining.remove(member)
                break
        if not remaining:
            return


def _assign_with_rack_matching(states: list[_TopicState], out: dict[str, list]) -> None:
    groups: dict[tuple, list[_TopicState]] = {}
    for state in states:
        # grouped by subscriber list, then by partition count (Java keys the
        # second level by the size of its partition-rack map)
        groups.setdefault((state.members, len(state.partition_racks)), []).append(state)
    for group in groups.values():
        if len(group) > 1:
            _assign_co_partitioned(group, out)
        elif group[0].needs_rack_matching:
            _assign_ranges(group[0], group[0].racks_match, out)


class RangeAssignor(Assignor):
    """Contiguous per-topic ranges; static members keep theirs across member id changes."""

    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        partition_racks: Optional[PartitionRacks] = None,
    ) -> dict[str, Assignment]:
        members_by_topic: dict[str, list[str]] = {}
        for member in ordered_members(subscriptions):
            for topic in dict.fromkeys(subscriptions[member].topics):
                members_by_topic.setdefault(topic, []).append(member)
        member_racks = {m: s.rack_id for m, s in subscriptions.items() if s.rack_id is not None}

        states = [
            _TopicState(topic, partitions_per_topic[topic], members, member_racks, partition_racks)
            for topic, members in sorted(members_by_topic.items())
            if partitions_per_topic.get(topic, 0) > 0
        ]
        out: dict[str, list] = {m: [] for m in subscriptions}
        if any(s.needs_rack_matching for s in states):
            _assign_with_rack_matching(states, out)
            for state in states:
                _assign_ranges(state, lambda member, p: True, out)
        else:
            # Without rack matching the quota walk reduces to contiguous
            # slices; computing them directly keeps 1M partitions fast.
            for state in states:
                _slice_ranges(state, out)
        return {m: Assignment(partitions=sorted(parts)) for m, parts in out.items()}
