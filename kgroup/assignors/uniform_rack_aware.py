"""The server-side ``uniform-rack-aware`` assignor: ``uniform``'s balance, then rack locality, then
stickiness.

Kafka's server assignors ignore racks (apache/kafka PR #20000, KAFKA-19909, is open; its reviewers call
the missing rack awareness a regression against KIP-881's client-side assignors).  This one keeps
``uniform``'s guarantees and adds KIP-881's: a partition is *rack-local* to a member when one of the
partition's replicas is on the member's rack, and among the balanced assignments it picks one with as
many rack-local partitions as possible, then keeps what members own.

When rack awareness cannot help it is exactly ``uniform`` (KIP-881's useRackAwareAssignment rule, as in
Kafka's AbstractPartitionAssignor and PR #20000's step 1): no member has a rack, no partition has a
replica on a member's rack, or every partition has the same replica racks.

* Identical subscriptions: every member's quota is ``P // M`` or one more, as ``uniform``'s.  The most
  rack-local partitions a balanced assignment can have is a maximum flow on a small graph (racks of
  members -> groups of partitions with the same replica racks, the extra partitions ``P % M`` as a
  shared pool that at most one per member can use), started from what members already own locally so
  that the flow moves as little as it can.  Members then keep their rack-local partitions within that
  flow, keep their other partitions where that leaves room for the flow, the flow's remaining
  rack-local partitions are handed out in partition order, and the rest fill the quotas as ``uniform``.
* Differing subscriptions: ``uniform``'s answer, then two members swap partitions while that makes more
  of them rack-local (each keeps its count, so ``uniform``'s balance stays).

Either way no balanced answer ``uniform`` gives for the same input has more rack-local partitions.
Members are visited in member-id order, so the result is deterministic.
"""
from __future__ import annotations

import collections
from typing import AbstractSet, Callable, Iterable, Mapping, Optional, Sequence

from kgroup.assignors.base import PartitionRacks
from kgroup.assignors.server_base import AssignmentMember, ServerAssignor
from kgroup.assignors.uniform import UniformAssignor
from kgroup.values import TopicPartition

__all__ = ["UniformRackAwareAssignor", "rack_local_count"]

_NO_RACKS: frozenset = frozenset()


class UniformRackAwareAssignor(ServerAssignor):
    name = "uniform-rack-aware"
    uses_partition_racks = True

    def assign(self, members: Mapping[str, AssignmentMember], partitions_per_topic: Mapping[str, int],
               partition_racks: Optional[PartitionRacks] = None) -> dict[str, frozenset[TopicPartition]]:
        if not members:
            return {}
        racks = _RackClasses(members, partitions_per_topic, partition_racks or {})
        if not racks.rack_aware():
            return UniformAssignor().assign(members, partitions_per_topic)
        if len({m.subscribed_topics for m in members.values()}) == 1:
            return _assign_homogeneous(members, partitions_per_topic, racks)
        assignment = {member_id: set(owned) for member_id, owned
                      in UniformAssignor().assign(members, partitions_per_topic).items()}
        _swap_for_locality(assignment, members, racks)
        return {member_id: frozenset(owned) for member_id, owned in assignment.items()}


def rack_local_count(assignment: Mapping[str, Iterable[TopicPartition]],
                     members: Mapping[str, AssignmentMember],
                     partition_racks: PartitionRacks) -> int:
    """How many assigned partitions have a replica on their member's rack (KIP-881's rack-local)."""
    local = 0
    for member_id, owned in assignment.items():
        rack = members[member_id].rack_id
        if rack is None:
            continue
        for tp in owned:
            racks = partition_racks.get(tp.topic, ())
            if tp.partition < len(racks) and rack in racks[tp.partition]:
                local += 1
    return local


class _RackClasses:
    """The replica racks of the subscribed partitions, as seen by the members' racks.

    A partition's *class* is the set of member racks holding one of its replicas (racks no member is
    on do not matter), numbered in order of first appearance; class 0 is the empty set.
    """

    def __init__(self, members: Mapping[str, AssignmentMember], partitions_per_topic: Mapping[str, int],
                 partition_racks: PartitionRacks) -> None:
        self.member_racks = frozenset(m.rack_id for m in members.values() if m.rack_id is not None)
        self._partition_racks = partition_racks
        topics = {t for m in members.values() for t in m.subscribed_topics if t in partitions_per_topic}
        self.counts = {topic: partitions_per_topic[topic] for topic in sorted(topics)}
        self.class_sets: list[frozenset] = [_NO_RACKS]
        self._class_index: dict[AbstractSet[str], int] = {_NO_RACKS: 0}
        self._distinct_replica_racks: set[AbstractSet[str]] = set()
        #: topic -> the class of each of its partitions.
        self.classes: dict[str, list[int]] = {}
        for topic, count in self.counts.items():
            replica_racks: Sequence[AbstractSet[str]] = partition_racks.get(topic, ())
            if len(replica_racks) < count:
                replica_racks = list(replica_racks) + [_NO_RACKS] * (count - len(replica_racks))
            self._distinct_replica_racks.update(replica_racks[:count])
            self.classes[topic] = [self._index(racks) for racks in replica_racks[:count]]

    def _index(self, replica_racks: AbstractSet[str]) -> int:
        index = self._class_index.get(replica_racks)
        if index is None:
            local = frozenset(replica_racks) & self.member_racks
            index = self._class_index.get(local)
            if index is None:
                index = len(self.class_sets)
                self.class_sets.append(local)
                self._class_index[local] = index
            self._class_index[replica_racks] = index
        return index

    def rack_aware(self) -> bool:
        """KIP-881's useRackAwareAssignment: some partition is on a member's rack, and the partitions'
        replica racks differ (when they are all the same, every balanced answer is as local)."""
        return len(self.class_sets) > 1 and len(self._distinct_replica_racks) > 1

    def class_of(self, tp: TopicPartition) -> int:
        classes = self.classes.get(tp.topic)
        if classes is None or not 0 <= tp.partition < len(classes):
            return 0
        return classes[tp.partition]

    def is_local(self, rack: Optional[str], tp: TopicPartition) -> bool:
        return rack is not None and rack in self.class_sets[self.class_of(tp)]


# -- identical subscriptions ---------------------------------------------------------------


def _assign_homogeneous(members: Mapping[str, AssignmentMember], partitions_per_topic: Mapping[str, int],
                        racks: _RackClasses) -> dict[str, frozenset[TopicPartition]]:
    member_ids = sorted(members)
    counts = racks.counts
    min_quota, extras = divmod(sum(counts.values()), len(member_ids))
    rack_of = {m: members[m].rack_id for m in member_ids}
    rack_names = sorted(racks.member_racks)
    members_on: dict[str, list[str]] = {rack: [] for rack in rack_names}
    for member_id in member_ids:
        own_rack = rack_of[member_id]
        if own_rack is not None:
            members_on[own_rack].append(member_id)

    # What each member owns that is still a subscribed partition, with each partition's class (looked
    # up once: at a million partitions every lookup counts), and which of them are rack-local.
    # Partitions and their classes are kept in two parallel lists, not as (partition, class) pairs: a
    # million small tuples cost more in allocation and garbage-collector passes than the rest.
    classes_of = racks.classes
    taken: set[TopicPartition] = set()
    valid: dict[str, _Owned] = {}
    local: dict[str, _Owned] = {}
    is_local = {rack: [rack in class_set for class_set in racks.class_sets] for rack in rack_names}
    for member_id in member_ids:
        owned = [tp for tp in members[member_id].current_partitions
                 if 0 <= tp.partition < counts.get(tp.topic, 0) and tp not in taken]
        taken.update(owned)
        owned_classes = [classes_of[topic][partition] for topic, partition in owned]
        valid[member_id] = (owned, owned_classes)
        own_rack = rack_of[member_id]
        if own_rack is not None:
            flags = is_local[own_rack]
            local[member_id] = ([tp for tp, c in zip(owned, owned_classes) if flags[c]],
                                [c for c in owned_classes if flags[c]])
    class_sizes: collections.Counter[int] = collections.Counter()
    for classes in classes_of.values():
        class_sizes.update(classes)

    flow = _LocalityFlow(rack_names, members_on, racks.class_sets, min_quota, extras)
    flow.solve(member_ids, rack_of, valid, local, class_sizes, classes_of)

    # Quotas: a rack gets the extra partitions its flow uses (to the members owning the most), the
    # rest go as uniform's do: to members owning more than the minimum, then in member-id order.
    quota = {member_id: min_quota for member_id in member_ids}
    extras_left = extras
    for rack in rack_names:
        owners = sorted(members_on[rack], key=lambda m: (-len(valid[m][0]), m))
        for member_id in owners[:flow.extras_used(rack)]:
            quota[member_id] += 1
            extras_left -= 1
    for member_id in member_ids:
        if extras_left and quota[member_id] == min_quota and len(valid[member_id][0]) > min_quota:
            quota[member_id] += 1
            extras_left -= 1
    for member_id in member_ids:
        if extras_left and quota[member_id] == min_quota:
            quota[member_id] += 1
            extras_left -= 1

    budget = flow.rack_class_flow()  # rack -> class -> rack-local partitions still to place
    assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in member_ids}
    taken = set()
    class_unplaced = class_sizes.copy()
    # 1. Members keep their rack-local partitions, within the flow.
    for member_id in member_ids:
        own_rack = rack_of[member_id]
        if own_rack is None:
            continue
        mine, mine_classes = local[member_id]
        rack_budget = budget[own_rack]
        by_class = collections.Counter(mine_classes)
        room = quota[member_id]
        kept = assignment[member_id]
        if len(mine) > room or any(n > rack_budget[c] for c, n in by_class.items()):
            # Not all of them fit: the lowest partitions first, as uniform keeps (the flow sorted
            # those of a member owning more than the minimum quota already).
            if len(mine) <= min_quota:
                mine, mine_classes = _sorted_owned(mine, classes_of)
            by_class = collections.Counter(mine_classes[:room])
        if all(n <= rack_budget[c] for c, n in by_class.items()):
            # The usual case, in bulk: the lowest ``room`` fit their rack's budget.
            mine = mine[:room]
            kept.extend(mine)
            taken.update(mine)
            for c, n in by_class.items():
                rack_budget[c] -= n
                class_unplaced[c] -= n
            continue
        for tp, c in zip(mine, mine_classes):
            if room == 0:
                break
            if rack_budget[c] > 0:
                rack_budget[c] -= 1
                class_unplaced[c] -= 1
                room -= 1
                kept.append(tp)
                taken.add(tp)

    # 2. Members keep their other partitions while the flow's remaining rack-local partitions still fit:
    # a member's rack keeps room for its rack's share, and each class keeps enough unplaced partitions.
    rack_room = {rack: sum(quota[m] - len(assignment[m]) for m in members_on[rack]) for rack in rack_names}
    rack_demand = {rack: sum(budget[rack].values()) for rack in rack_names}
    class_demand: collections.Counter[int] = collections.Counter()
    for rack in rack_names:
        class_demand.update(budget[rack])
    for member_id in member_ids:
        own_rack = rack_of[member_id]
        owned, owned_classes = valid[member_id]
        rest = [tp for tp in owned if tp not in taken]
        if not rest:
            continue
        rest_classes = [c for tp, c in zip(owned, owned_classes) if tp not in taken]
        room = quota[member_id] - len(assignment[member_id])
        by_class = collections.Counter(rest_classes)
        spare = rack_room[own_rack] - rack_demand[own_rack] if own_rack is not None else room
        if (len(rest) > min(room, spare)
                or any(class_unplaced[c] - n < class_demand[c] for c, n in by_class.items())):
            rest, rest_classes = _sorted_owned(rest, classes_of)
        for tp, c in zip(rest, rest_classes):
            if room == 0 or (own_rack is not None and rack_room[own_rack] <= rack_demand[own_rack]
                             and not _shift_demand(own_rack, budget, rack_room, rack_demand,
                                                   racks.class_sets)):
                break
            if class_unplaced[c] <= class_demand[c]:
                continue
            class_unplaced[c] -= 1
            room -= 1
            if own_rack is not None:
                rack_room[own_rack] -= 1
            assignment[member_id].append(tp)
            taken.add(tp)

    # 3. The unplaced partitions, in partition order, by class.
    unplaced: dict[int, list[TopicPartition]] = collections.defaultdict(list)
    for topic, count in counts.items():
        classes = racks.classes[topic]
        for partition in range(count):
            if (topic, partition) not in taken:
                unplaced[classes[partition]].append(TopicPartition(topic, partition))
    #: class -> how many of its unplaced partitions are handed out
    next_of: collections.Counter[int] = collections.Counter()

    # 4. The flow's remaining rack-local partitions fill their rack's members, in member-id order.
    for rack in rack_names:
        rack_members = iter(members_on[rack])
        filling = next(rack_members, None)
        for c in sorted(budget[rack]):
            want = budget[rack][c]
            while want > 0 and filling is not None:
                room = quota[filling] - len(assignment[filling])
                if room == 0:
                    filling = next(rack_members, None)
                    continue
                take = min(room, want)
                start = next_of[c]
                assignment[filling].extend(unplaced[c][start:start + take])
                next_of[c] = start + take
                want -= take
            if want:  # the flow never asks a rack for more than its quotas hold
                raise AssertionError(f"rack {rack!r} has no room for {want} rack-local partitions")

    # 5. Everything left fills the quotas, in partition order, members in member-id order.
    leftovers = sorted(tp for c, tps in unplaced.items() for tp in tps[next_of[c]:])
    position = 0
    for member_id in member_ids:
        room = quota[member_id] - len(assignment[member_id])
        if room > 0:
            assignment[member_id].extend(leftovers[position:position + room])
            position += room
    return {member_id: frozenset(owned) for member_id, owned in assignment.items()}


#: A member's partitions and, in the same order, their classes.
_Owned = tuple[list[TopicPartition], list[int]]


def _sorted_owned(owned: list[TopicPartition], classes_of: Mapping[str, list[int]]) -> _Owned:
    ordered = sorted(owned)
    return ordered, [classes_of[topic][partition] for topic, partition in ordered]


def _shift_demand(rack: str, budget: Mapping[str, collections.Counter], rack_room: dict[str, int],
                  rack_demand: dict[str, int], class_sets: list[frozenset]) -> bool:
    """Hand one of ``rack``'s remaining rack-local partitions to another rack of its class that has room
    to spare, so a member of ``rack`` can keep what it owns; False when no rack can take one."""
    for c in sorted(budget[rack]):
        if budget[rack][c] <= 0:
            continue
        for other in sorted(class_sets[c] - {rack}):
            if rack_room[other] > rack_demand[other]:
                budget[rack][c] -= 1
                budget[other][c] += 1
                rack_demand[rack] -= 1
                rack_demand[other] += 1
                return True
    return False


class _LocalityFlow:
    """The most rack-local partitions a balanced assignment holds, moving the fewest: a min-cost max flow.

    source -> rack r (its members' minimum quotas), source -> extras (``P % M``) -> rack r (one per
    member), rack r -> class c when r is one of c's racks, class c -> sink (its partitions).  It starts
    from what members own rack-locally (that flow is kept unless moving it makes more rack-local), and
    a unit costs one when it takes a partition away from a rack that holds it locally or from a member
    that holds it off-rack, so among the maximum flows it picks one that moves the fewest.  A handful of
    racks and classes, so the shortest augmenting paths (Bellman-Ford) are cheap whatever the sizes.
    """

    def __init__(self, rack_names: list[str], members_on: Mapping[str, list[str]],
                 class_sets: list[frozenset], min_quota: int, extras: int) -> None:
        self._racks = rack_names
        self._members_on = members_on
        self._local_classes = {rack: [c for c in range(1, len(class_sets)) if rack in class_sets[c]]
                               for rack in rack_names}
        self._classes = range(1, len(class_sets))
        self._min_quota = min_quota
        self._extras = extras
        self._head: list[int] = []
        self._capacity: list[int] = []
        self._cost: list[int] = []
        self._flow: list[int] = []
        self._out: list[list[int]] = []
        self._pool_edge: dict[str, int] = {}
        self._rack_class_edges: dict[tuple[str, int], list[int]] = collections.defaultdict(list)

    def _node(self) -> int:
        self._out.append([])
        return len(self._out) - 1

    def _edge(self, tail: int, head: int, capacity: int, cost: int = 0, flow: int = 0) -> int:
        for a, b, cap, price, amount in ((tail, head, capacity, cost, flow), (head, tail, 0, -cost, -flow)):
            self._out[a].append(len(self._head))
            self._head.append(b)
            self._capacity.append(cap)
            self._cost.append(price)
            self._flow.append(amount)
        return len(self._head) - 2

    def solve(self, member_ids: list[str], rack_of: Mapping[str, Optional[str]],
              valid: Mapping[str, _Owned], local: dict[str, _Owned], class_sizes: Mapping[int, int],
              classes_of: Mapping[str, list[int]]) -> None:
        # What members own rack-locally: each keeps up to the minimum quota (the lowest first), then one
        # more while extras last.
        kept: collections.Counter[tuple[str, int]] = collections.Counter()
        kept_base: collections.Counter[str] = collections.Counter()
        kept_extra: collections.Counter[str] = collections.Counter()
        extras_left = self._extras
        wanting_extra: list[tuple[str, int]] = []
        for member_id in member_ids:
            rack = rack_of[member_id]
            if rack is None:
                continue
            mine, mine_classes = local[member_id]
            if len(mine) > self._min_quota:
                # Sorted once, here: the caller keeps them in that order.
                mine, mine_classes = local[member_id] = _sorted_owned(mine, classes_of)
                wanting_extra.append((rack, mine_classes[self._min_quota]))
            for c in mine_classes[:self._min_quota]:
                kept[rack, c] += 1
            kept_base[rack] += min(len(mine), self._min_quota)
        for rack, c in wanting_extra[:extras_left]:
            kept[rack, c] += 1
            kept_extra[rack] += 1
        held: collections.Counter[int] = collections.Counter()
        for _, owned_classes in valid.values():
            held.update(owned_classes)
        kept_of_class: collections.Counter[int] = collections.Counter()
        for (rack, c), n in kept.items():
            kept_of_class[c] += n

        unbounded = sum(class_sizes.values()) + 1
        source, pool, sink = self._node(), self._node(), self._node()
        self._source, self._sink = source, sink
        self._edge(source, pool, self._extras, flow=sum(kept_extra.values()))
        class_node = {c: self._node() for c in self._classes}
        for rack in self._racks:
            node = self._node()
            members = len(self._members_on[rack])
            self._edge(source, node, members * self._min_quota, flow=kept_base[rack])
            self._pool_edge[rack] = self._edge(pool, node, members, flow=kept_extra[rack])
            for c in self._local_classes[rack]:
                self._rack_class_edges[rack, c].append(self._edge(node, class_node[c], unbounded))
                if kept[rack, c]:
                    # Giving up what the rack holds locally costs one a unit (the reverse of cost -1).
                    holding = self._node()
                    self._edge(node, holding, kept[rack, c], cost=-1, flow=kept[rack, c])
                    self._rack_class_edges[rack, c].append(
                        self._edge(holding, class_node[c], kept[rack, c], flow=kept[rack, c]))
        for c in self._classes:
            free = class_sizes.get(c, 0) - held[c]
            self._edge(class_node[c], sink, kept_of_class[c] + free, flow=kept_of_class[c])
            taken_from_owner = held[c] - kept_of_class[c]
            if taken_from_owner:
                owner = self._node()
                self._edge(class_node[c], owner, taken_from_owner, cost=1)
                self._edge(owner, sink, taken_from_owner)
        self._augment()

    def _augment(self) -> None:
        """Successive shortest paths: no negative cycle to start with (every cost -1 edge is full)."""
        while True:
            distance: list[Optional[int]] = [None] * len(self._out)
            via: list[int] = [-1] * len(self._out)
            distance[self._source] = 0
            queue = collections.deque([self._source])
            queued = {self._source}
            while queue:
                node = queue.popleft()
                queued.discard(node)
                base = distance[node]
                assert base is not None
                for edge in self._out[node]:
                    if self._capacity[edge] - self._flow[edge] <= 0:
                        continue
                    head, reach = self._head[edge], base + self._cost[edge]
                    known = distance[head]
                    if known is None or reach < known:
                        distance[head], via[head] = reach, edge
                        if head not in queued:
                            queued.add(head)
                            queue.append(head)
            if distance[self._sink] is None:
                return
            path, node = [], self._sink
            while node != self._source:
                edge = via[node]
                path.append(edge)
                node = self._head[edge ^ 1]
            amount = min(self._capacity[edge] - self._flow[edge] for edge in path)
            for edge in path:
                self._flow[edge] += amount
                self._flow[edge ^ 1] -= amount

    def extras_used(self, rack: str) -> int:
        return self._flow[self._pool_edge[rack]]

    def rack_class_flow(self) -> dict[str, collections.Counter]:
        out: dict[str, collections.Counter] = {rack: collections.Counter() for rack in self._racks}
        for (rack, c), edges in self._rack_class_edges.items():
            amount = sum(self._flow[edge] for edge in edges)
            if amount > 0:
                out[rack][c] = amount
        return out


# -- differing subscriptions ---------------------------------------------------------------


def _swap_for_locality(assignment: dict[str, set[TopicPartition]], members: Mapping[str, AssignmentMember],
                       racks: _RackClasses) -> None:
    """Swap a partition not local to its member for one of a member on its rack while both subscribe the
    other's topic and the swap makes at least one more partition rack-local; counts never change."""
    member_ids = sorted(members)
    rack_of = {m: members[m].rack_id for m in member_ids}
    members_on: dict[str, list[str]] = collections.defaultdict(list)
    for member_id in member_ids:
        own_rack = rack_of[member_id]
        if own_rack is not None:
            members_on[own_rack].append(member_id)
    # member -> topic -> its partitions of that topic that are not local to it
    remote: dict[str, dict[str, set[TopicPartition]]] = {m: collections.defaultdict(set) for m in member_ids}
    for member_id in member_ids:
        for tp in assignment[member_id]:
            if not racks.is_local(rack_of[member_id], tp):
                remote[member_id][tp.topic].add(tp)

    def move(tp: TopicPartition, giver: str, taker: str) -> None:
        assignment[giver].discard(tp)
        assignment[taker].add(tp)
        remote[giver][tp.topic].discard(tp)
        if not racks.is_local(rack_of[taker], tp):
            remote[taker][tp.topic].add(tp)

    # Counts never change, so neither does the lightest subscriber of each topic; a partition may only
    # go to a member no more than one above it, or uniform's balance (no move narrows a gap of two)
    # would break.
    loads = {member_id: len(owned) for member_id, owned in assignment.items()}
    lightest: dict[str, int] = {}
    for member_id in member_ids:
        for topic in members[member_id].subscribed_topics:
            lightest[topic] = min(lightest.get(topic, loads[member_id]), loads[member_id])

    def may_hold(member_id: str, tp: TopicPartition) -> bool:
        return loads[member_id] - lightest[tp.topic] <= 1

    swapped = True
    while swapped:
        swapped = False
        for member_id in member_ids:
            if rack_of[member_id] is None:
                continue
            topics = members[member_id].subscribed_topics
            for tp in sorted(tp for owned in remote[member_id].values() for tp in owned):
                partner = _swap_partner(tp, member_id, topics, members, members_on, remote, racks, may_hold)
                if partner is None:
                    continue
                other, their_tp = partner
                move(tp, member_id, other)
                move(their_tp, other, member_id)
                swapped = True


def _swap_partner(tp: TopicPartition, member_id: str, topics: AbstractSet[str],
                  members: Mapping[str, AssignmentMember], members_on: Mapping[str, list[str]],
                  remote: Mapping[str, Mapping[str, set[TopicPartition]]],
                  racks: _RackClasses, may_hold: Callable[[str, TopicPartition], bool],
                  ) -> Optional[tuple[str, TopicPartition]]:
    """A member on one of ``tp``'s racks subscribing its topic, and the lowest of its partitions not local
    to it whose topic ``member_id`` subscribes: the swap gains ``tp``, and maybe theirs too."""
    for rack in sorted(racks.class_sets[racks.class_of(tp)]):
        for other in members_on[rack]:
            if (other == member_id or tp.topic not in members[other].subscribed_topics
                    or not may_hold(other, tp)):
                continue
            theirs = [p for topic, owned in remote[other].items() if topic in topics for p in owned
                      if may_hold(member_id, p)]
            if theirs:
                return other, min(theirs)
    return None
