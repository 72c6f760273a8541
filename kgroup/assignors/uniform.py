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

import heapq
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

    # Topics with the fewest subscribers first: their partitions have the least freedom.  Each
    # partition goes to the least loaded subscriber (ties: the lowest member id); a heap per topic
    # finds it without scanning every subscriber for every partition (that scan made a group of
    # 1,000 members with differing subscriptions take a second).
    for topic in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        candidates: list[tuple[int, str]] | None = None
        for partition in range(partitions_per_topic[topic]):
            tp = TopicPartition(topic, partition)
            if tp in owner:
                continue
            if candidates is None:
                candidates = [(len(assignment[m]), m) for m in subscribers[topic]]
                heapq.heapify(candidates)
            load, target = heapq.heappop(candidates)
            owner[tp] = target
            assignment[target].add(tp)
            heapq.heappush(candidates, (load + 1, target))
    _balance(assignment, owner, subscribers)
    return {member_id: frozenset(owned) for member_id, owned in assignment.items()}


def _balance(assignment: dict[str, set[TopicPartition]], owner: dict[TopicPartition, str],
             subscribers: Mapping[str, list[str]]) -> None:
    """Move partitions from a member to a subscribed one with two or more fewer, until none can move.

    Each round, the most loaded member that can give does: of its partitions, the one whose topic's
    least loaded subscriber is lightest (the lowest such partition on a tie) goes to that subscriber
    (the first in member-id order on a tie).  One move a round, as the gaps change with every move.
    """
    while True:
        loads = {member_id: len(owned) for member_id, owned in assignment.items()}
        # The least loaded subscriber of each topic, first in member-id order (min keeps the first).
        lightest: dict[str, tuple[int, str]] = {}
        for topic, members in subscribers.items():
            taker = min(members, key=loads.__getitem__)
            lightest[topic] = (loads[taker], taker)
        move = None
        for giver in sorted(assignment, key=lambda m: (-loads[m], m)):
            giver_load = loads[giver]
            best = None
            for tp in assignment[giver]:
                taker_load, taker = lightest.get(tp.topic, (giver_load, giver))
                gap = giver_load - taker_load
                if gap >= 2 and (best is None or gap > best[0] or (gap == best[0] and tp < best[1])):
                    best = (gap, tp, taker)
            if best is not None:
                move = (giver, best[1], best[2])
                break
        if move is None:
            return
        giver, tp, taker = move
        assignment[giver].discard(tp)
        assignment[taker].add(tp)
        owner[tp] = taker
