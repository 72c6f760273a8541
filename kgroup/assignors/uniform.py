"""The server-side ``uniform`` assignor (Kafka's UniformAssignor, KIP-848).

Balance first, stickiness second, as Kafka's:

* homogeneous subscriptions (every member subscribes the same topics), after
  UniformHomogeneousAssignmentBuilder (OptimizedUniformAssignmentBuilder in
  Kafka 3.x): each member gets ``P // M`` partitions, ``P % M`` of them one
  more; a member keeps as many of its current partitions as its quota allows
  and the rest are handed to members under quota;
* heterogeneous subscriptions, after UniformHeterogeneousAssignmentBuilder:
  current partitions the member still subscribes stay, unassigned ones go to
  the least loaded subscribed member, then partitions move from a member to a
  less loaded subscribed one while that narrows a gap of two or more.

Members are visited in member-id order, so the result is deterministic.
"""
from __future__ import annotations

from typing import Mapping

from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.values import TopicPartition

__all__ = ["UniformAssignor"]


class UniformAssignor(ServerAssignor):
    name = "uniform"

    def assign(self, members: Mapping[str, AssignmentMember],
               partitions_per_topic: Mapping[str, int]) -> dict[str, frozenset[TopicPartition]]:
        if not members:
            return {}
        subscriptions = {m.subscribed_topics for m in members.values()}
        if len(subscriptions) == 1:
            return _assign_homogeneous(members, partitions_per_topic)
        return _assign_heterogeneous(members, partitions_per_topic)


def _assign_homogeneous(members: Mapping[str, AssignmentMember],
                        partitions_per_topic: Mapping[str, int]) -> dict[str, frozenset[TopicPartition]]:
    member_ids = sorted(members)
    topics = members[member_ids[0]].subscribed_topics
    # No list of every partition up front: at KIP-848's scale (a million partitions) building one
    # TopicPartition each cost more than the assignment itself when members keep what they own.
    counts = {topic: partitions_per_topic[topic] for topic in sorted(topics) if topic in partitions_per_topic}
    min_quota, extra = divmod(sum(counts.values()), len(member_ids))
    assignment: dict[str, list[TopicPartition]] = {}
    taken: set[TopicPartition] = set()
    # Stickiness within the quota: a member keeps up to min_quota (min_quota + 1 while extras last),
    # its lowest partitions first.
    for member_id in member_ids:
        kept = [tp for tp in members[member_id].current_partitions
                if 0 <= tp.partition < counts.get(tp.topic, 0) and tp not in taken]
        quota = min_quota
        if len(kept) > min_quota and extra > 0:
            quota += 1
            extra -= 1
        if len(kept) == quota + 1:
            kept.remove(max(kept))  # one too many (a member joined): no need to sort them all
        elif len(kept) > quota:
            kept.sort()
            del kept[quota:]
        assignment[member_id] = kept
        taken.update(kept)
    # Plain (topic, partition) tuples hash and compare like TopicPartition: only the unassigned ones
    # are built.
    unassigned = [TopicPartition(topic, p) for topic, count in counts.items() for p in range(count)
                  if (topic, p) not in taken]
    unassigned.reverse()  # pop() hands them out in partition order
    # Fill every member up to min_quota, then hand the remaining extras out one each.
    for member_id in member_ids:
        owned = assignment[member_id]
        while len(owned) < min_quota:
            owned.append(unassigned.pop())
    for member_id in member_ids:
        if not unassigned or extra == 0:
            break
        owned = assignment[member_id]
        if len(owned) == min_quota:
            owned.append(unassigned.pop())
            extra -= 1
    return {member_id: frozenset(owned) for member_id, owned in assignment.items()}


def _assign_heterogeneous(members: Mapping[str, AssignmentMember],
                          partitions_per_topic: Mapping[str, int]) -> dict[str, frozenset[TopicPartition]]:
    member_ids = sorted(members)
    subscribers: dict[str, list[str]] = {}
    for member_id in member_ids:
        for topic in members[member_id].subscribed_topics:
            if topic in partitions_per_topic:
                subscribers.setdefault(topic, []).append(member_id)
    assignment: dict[str, set[TopicPartition]] = {member_id: set() for member_id in member_ids}
    owner: dict[TopicPartition, str] = {}
    for member_id in member_ids:
        member = members[member_id]
        for tp in sorted(member.current_partitions):
            still_valid = (tp.topic in member.subscribed_topics and tp.topic in partitions_per_topic
                           and tp.partition < partitions_per_topic[tp.topic])
            if still_valid and tp not in owner:
                owner[tp] = member_id
                assignment[member_id].add(tp)

    def load(member_id: str) -> tuple[int, str]:
        return (len(assignment[member_id]), member_id)

    # Topics with the fewest subscribers first: their partitions have the least freedom.
    for topic in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        for partition in range(partitions_per_topic[topic]):
            tp = TopicPartition(topic, partition)
            if tp not in owner:
                target = min(subscribers[topic], key=load)
                owner[tp] = target
                assignment[target].add(tp)
    _balance(assignment, owner, subscribers)
    return {member_id: frozenset(owned) for member_id, owned in assignment.items()}


def _balance(assignment: dict[str, set[TopicPartition]], owner: dict[TopicPartition, str],
             subscribers: Mapping[str, list[str]]) -> None:
    """Move partitions from a member to a subscribed one with two or more fewer, until none can move."""
    moved = True
    while moved:
        moved = False
        # Most loaded members give first; each gives the partition whose topic offers the least loaded taker.
        for giver in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
            best = None
            for tp in sorted(assignment[giver]):
                for taker in subscribers.get(tp.topic, ()):
                    gap = len(assignment[giver]) - len(assignment[taker])
                    if gap >= 2 and (best is None or gap > best[0]):
                        best = (gap, tp, taker)
            if best is not None:
                _, tp, taker = best
                assignment[giver].discard(tp)
                assignment[taker].add(tp)
                owner[tp] = taker
                moved = True
                break
