"""The sticky assignment engine shared by ``sticky`` and ``cooperative-sticky``.

Semantics follow Java's AbstractStickyAssignor: keep valid owned partitions,
hand out the rest to the least-loaded eligible member, then balance.

Two paths, chosen like Java does:

* identical subscriptions ("constrained", Java's ConstrainedAssignmentBuilder):
  quotas are known up front (``P // M``, ``P % M`` members get one more).
  Each member keeps its owned partitions up to its quota, lowest partition
  numbers first across topics (KAFKA-16277), and the rest, ordered by topic
  then partition, are dealt round-robin to the members below quota, so a
  member gets a share of every topic rather than whole topics.  O(P + M):
  runs of full passes over the same members are strided slices.
* anything else ("general"): greedy least-loaded placement (topics with
  fewest subscribers first, partitions in order) with heaps, then per-topic
  balancing moves from the heaviest holder to the lightest eligible member
  while their loads differ by two or more.  Newly placed partitions move
  first, so owned ones stay put.

Rack awareness (KIP-881), when Java's ``useRackAwareAssignment`` holds
(member racks known, some hosting replicas, not every partition on every
rack): a member gives up owned partitions with no replica on its rack, even
within quota, as Java's ``RackInfo.racksMismatch`` filter does (we keep one
when no member that could take it is on a replica's rack, see
``_Racks.movable``).  The constrained path then deals to rack-local members
first (Java's ``assignRackAwareRoundRobin``), the general path places every
partition that has a rack-local eligible member on the least-loaded such
member before placing the rest.  Balancing moves ignore racks.

Cooperative mode (``cooperative=True``, KIP-429): a partition that would go
to a member other than one that claims it is withheld this round; its
claimer revokes it and rejoins, and the next round (in which it is unowned)
hands it over.  A partition two members claim in the same generation
(Java's ``partitionsWithMultiplePreviousOwners``) is withheld from everyone,
claimers included, until both have revoked it.  For the next round to move
nothing else, the general path simulates it before answering: it removes the
withheld partitions, places them and balances exactly as the next call will
(the engine is deterministic, and the order in which a member lists its
owned partitions never changes a placement or balancing decision, only which
of them a move takes), and if that would take a partition from a member that
keeps it now, withholds that partition too and simulates again.  The answer
is the state the simulation starts from, so the follow-up round only adds
partitions and a membership change settles in at most two rounds.  The
general path does not give up rack-remote owned partitions in cooperative
mode (see ``_general``).  The constrained path needs no simulation: every
member keeps at most its quota, so the next round revokes nothing.

Every iteration that can decide a result runs over lists or sorted keys,
never over a set, so results do not depend on ``PYTHONHASHSEED``.

Partition ownership per topic is held in int lists indexed by partition,
which avoids building a ``TopicPartition`` for anything that does not move.
"""
from __future__ import annotations

import heapq
from functools import partial
from itertools import repeat
from typing import Mapping, NamedTuple, Optional, Sequence

from kgroup.values import TopicPartition

_UNCLAIMED = -1
_CONFLICT = -2  # two members claim it in the same (highest) generation
_LISTED = -3  # claim accepted and copied to its owner's kept list: _LISTED - owner index


class MemberInput(NamedTuple):
    topics: Sequence[str]
    owned: Sequence[TopicPartition]
    generation_id: int
    rack_id: Optional[str]


# Builds a TopicPartition from a (topic, partition) pair without a Python-level
# __new__ frame: this is the hottest allocation of a fresh assignment.
_make_tp = partial(tuple.__new__, TopicPartition)


def _topic_partitions(topic: str, count: int) -> list[TopicPartition]:
    return list(map(_make_tp, zip(repeat(topic, count), range(count))))


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, MemberInput],
    partition_racks: Optional[Mapping[str, Sequence[frozenset]]] = None,
    cooperative: bool = False,
) -> dict[str, list[TopicPartition]]:
    """Return each member's sorted partition list.

    ``cooperative``: withhold every partition that another member still
    claims (see the module docstring).
    """
    member_ids = sorted(members)
    inputs = [members[m] for m in member_ids]
    subs = []
    by_topics: dict = {}  # members usually share subscriptions: build each set once
    for mi in inputs:
        key = tuple(mi.topics)
        sub = by_topics.get(key)
        if sub is None:
            sub = by_topics[key] = frozenset(t for t in key if partitions_per_topic.get(t, 0) > 0)
        subs.append(sub)
    contested: Optional[dict] = {} if cooperative else None
    kept, owner_by_topic = _resolve_claims(partitions_per_topic, inputs, subs, contested)
    racks = _rack_info(partition_racks, inputs, partitions_per_topic, subs)

    if not member_ids:
        return {}
    # Only claims can make a partition unsafe to hand out: skip the bookkeeping without any.
    claims = None
    if contested is not None and (owner_by_topic or contested):  # contested is a dict iff cooperative
        claims = _Claims(owner_by_topic, contested)
    first = subs[0]
    if all(s is first or s == first for s in subs):
        result = _constrained(partitions_per_topic, sorted(subs[0]), kept, owner_by_topic, racks, claims)
    else:
        result = _general(partitions_per_topic, subs, kept, owner_by_topic, racks, claims)
    return {m: sorted(parts) for m, parts in zip(member_ids, result)}


def _resolve_claims(partitions_per_topic, inputs, subs, contested=None):
    """Accept, per partition, the unique claim of the highest generation.

    Claims on deleted topics, absent partitions or topics the claimer no
    longer subscribes to are dropped.  Returns each member's kept list and,
    per claimed topic, a list mapping partition -> owner index (or a
    negative marker; ``_LISTED - idx`` once accepted for member ``idx``).

    ``contested`` (a dict, cooperative mode) receives, for every existing
    partition with more than one claimer or a claimer that no longer
    subscribes to its topic, the set of all its claimers' indexes.  Those are
    the rare branches, so the common path (first claim of a partition) pays
    nothing for it.
    """
    owner_by_topic: dict[str, list[int]] = {}
    gen_by_topic: dict[str, list[int]] = {}
    for idx, (mi, sub) in enumerate(zip(inputs, subs)):
        gen = mi.generation_id
        for topic, partition in mi.owned:
            if topic not in sub or not 0 <= partition < partitions_per_topic[topic]:
                if contested is not None and 0 <= partition < partitions_per_topic.get(topic, 0):
                    # It still holds it until it revokes it.
                    contested.setdefault(TopicPartition(topic, partition), set()).add(idx)
                continue
            owners = owner_by_topic.get(topic)
            if owners is None:
                count = partitions_per_topic[topic]
                owners = owner_by_topic[topic] = [_UNCLAIMED] * count
                gen_by_topic[topic] = [0] * count
            gens = gen_by_topic[topic]
            current = owners[partition]
            if current == _UNCLAIMED:
                owners[partition] = idx
                gens[partition] = gen
            elif current != idx:
                if contested is not None:
                    claimers = contested.setdefault(TopicPartition(topic, partition), set())
                    claimers.add(idx)
                    if current >= 0:
                        claimers.add(current)
                if gen > gens[partition]:
                    owners[partition] = idx
                    gens[partition] = gen
                elif gen == gens[partition]:
                    owners[partition] = _CONFLICT
            elif gen > gens[partition]:
                gens[partition] = gen
    kept: list[list[TopicPartition]] = []
    for idx, mi in enumerate(inputs):
        mine = []
        listed = _LISTED - idx
        for tp in mi.owned:
            owners = owner_by_topic.get(tp[0])
            if owners is not None and 0 <= tp[1] < len(owners) and owners[tp[1]] == idx:
                owners[tp[1]] = listed  # also drops duplicates within one member's list
                mine.append(tp if type(tp) is TopicPartition else TopicPartition(*tp))
        kept.append(mine)
    return kept, owner_by_topic


class _Claims(NamedTuple):
    """Who claims what, for cooperative withholding."""

    owner_by_topic: dict  # topic -> per-partition owner marker (see _resolve_claims)
    contested: dict  # partition -> every claimer's index, where that is not just the accepted owner

    def safe(self, tp: TopicPartition, holder: int) -> bool:
        """May ``holder`` be given ``tp`` now?  Yes if nobody claims it or ``holder`` does."""
        owners = self.owner_by_topic.get(tp[0])
        if owners is not None:
            marker = owners[tp[1]]
            if marker == _LISTED - holder:
                return True
            if marker == _CONFLICT:
                # Java's partitionsWithMultiplePreviousOwners: claimed by two members
                # in one generation, so nobody gets it until both have revoked it.
                return False
        claimers = self.contested.get(tp)
        if claimers is not None:
            return holder in claimers
        return owners is None or owners[tp[1]] > _LISTED


def _pool(topic: str, count: int, owner_by_topic) -> list[TopicPartition]:
    """Partitions of ``topic`` that no accepted claim holds, in partition order."""
    owners = owner_by_topic.get(topic)
    if owners is None:
        return _topic_partitions(topic, count)
    return [TopicPartition(topic, p) for p, o in enumerate(owners) if o > _LISTED]


class _Racks:
    """Rack metadata of one assignment (KIP-881)."""

    __slots__ = ("partition_racks", "member_racks", "all_member_racks", "racks_by_topic")

    def __init__(self, partition_racks: Mapping[str, Sequence[frozenset]], member_racks: list) -> None:
        self.partition_racks = partition_racks
        self.member_racks = member_racks  # rack id per member index (None when unknown)
        self.all_member_racks = frozenset(r for r in member_racks if r is not None)
        # topic -> racks of the members subscribed to it (general path; None: every member's)
        self.racks_by_topic: Optional[dict] = None

    def racks_of(self, tp) -> frozenset:
        racks = self.partition_racks.get(tp[0])
        return racks[tp[1]] if racks is not None and tp[1] < len(racks) else _NO_RACKS

    def matches(self, tp, member: int) -> bool:
        """The member has a rack and a replica of ``tp`` lives there."""
        rack = self.member_racks[member]
        return rack is not None and rack in self.racks_of(tp)

    def mismatch(self, tp, member: int) -> bool:
        """Java's ``RackInfo.racksMismatch``: a member without a rack never mismatches."""
        rack = self.member_racks[member]
        return rack is not None and rack not in self.racks_of(tp)

    def movable(self, tp, member: int) -> bool:
        """Should ``member`` give up owned ``tp`` for rack alignment?

        Java gives up every rack mismatch.  We keep a mismatched partition
        when no member that could take it is on a replica's rack: moving it
        could not align it, only churn it (and, for cooperative-sticky, cost
        a revocation round each time).
        """
        if not self.mismatch(tp, member):
            return False
        if self.racks_by_topic is None:
            local = self.all_member_racks
        else:
            local = self.racks_by_topic.get(tp[0], _NO_RACKS)
        return not local.isdisjoint(self.racks_of(tp))


_NO_RACKS: frozenset = frozenset()


def _rack_info(partition_racks, inputs, partitions_per_topic, subs) -> Optional[_Racks]:
    """Rack metadata when Java would assign rack-aware (KIP-881), else ``None``.

    Java's AbstractPartitionAssignor.useRackAwareAssignment: some member has
    a rack, some member rack hosts a replica, and not every partition is
    replicated on every rack (then racks cannot make a difference).  Only
    subscribed topics count, as Java only sees those.
    """
    if not partition_racks:
        return None
    member_racks = [mi.rack_id or None for mi in inputs]  # Java ignores an empty rack id
    if all(r is None for r in member_racks):
        return None
    topics = sorted(set().union(*subs))
    all_racks: set = set()
    for topic in topics:
        for racks in partition_racks.get(topic, ()):
            all_racks.update(racks)
    if all_racks.isdisjoint(r for r in member_racks if r is not None):
        return None
    everywhere = True
    for topic in topics:
        racks_of_topic = partition_racks.get(topic, ())
        if len(racks_of_topic) < partitions_per_topic[topic] or any(r != all_racks for r in racks_of_topic):
            everywhere = False
            break
    if everywhere:
        return None
    return _Racks(partition_racks, member_racks)


def _trim_order(tp):
    # KAFKA-16277: keep owned partitions by partition number, then topic, so a
    # member that owns whole topics gives up part of each, not a whole topic.
    return (tp[1], tp[0])


def _constrained(partitions_per_topic, topics, kept, owner_by_topic, racks, claims=None):
    """Java's ConstrainedAssignmentBuilder (identical subscriptions).

    1. Each member keeps its owned partitions up to its quota (rack-remote
       ones are given up when rack-aware), keeping the lowest partition
       numbers first across topics (KAFKA-16277).
    2. Rack-aware only: unassigned partitions (fewest rack-local members
       first) are dealt round-robin to unfilled members on a replica's rack.
    3. The rest, ordered by topic then partition, are dealt round-robin to
       the members below the minimum quota; the members that reached it
       then take the remaining extras, one each, first come first served.
    """
    members = len(kept)
    total = sum(partitions_per_topic[t] for t in topics)
    min_quota, extras = divmod(total, members)
    max_quota = min_quota + 1 if extras else min_quota
    result: list[list[TopicPartition]] = []
    given_up: dict = {}  # partition -> the member that owned it and gives it up
    under: list[int] = []  # below min quota, in member id order
    at_min: list[int] = []  # at min quota, may still take an extra (first in, first out)
    at_max = 0
    for idx, own in enumerate(kept):
        if racks is not None and own:
            local = [tp for tp in own if not racks.movable(tp, idx)]
            if len(local) != len(own):
                for tp in own:
                    if racks.movable(tp, idx):
                        given_up[tp] = idx
                own = local
        if len(own) < min_quota:
            keep = len(own)
            under.append(idx)
        elif len(own) >= max_quota and at_max < extras:
            keep = max_quota
            at_max += 1
            if at_max == extras:
                at_min.clear()
        else:
            keep = min_quota
            if at_max < extras:
                at_min.append(idx)
        if keep < len(own):
            own = sorted(own, key=_trim_order)
            for tp in own[keep:]:
                given_up[tp] = idx
            own = own[:keep]
        result.append(list(own))
    kept_counts = [len(own) for own in result]

    pool: list[TopicPartition] = []
    for topic in topics:
        pool.extend(_pool(topic, partitions_per_topic[topic], owner_by_topic))
    if given_up:
        pool.extend(given_up)
        pool.sort()  # topic, then partition, as Java's getUnassignedPartitions
    if racks is not None:
        pool, at_max = _deal_rack_aware(
            result, pool, under, at_min, at_max, min_quota, max_quota, extras, racks
        )
    _deal_round_robin(result, pool, under, at_min, min_quota)
    if claims is not None:
        # Withhold what another member still holds.  Every member keeps at
        # most its quota, so the next round revokes nothing: two rounds.
        for idx, own in enumerate(result):
            k = kept_counts[idx]
            if len(own) > k:
                own[k:] = [tp for tp in own[k:] if claims.safe(tp, idx)]
    return result


def _deal_round_robin(result, pool, under, at_min, min_quota) -> None:
    """Java's ``assignRoundRobin``: cycle over ``under`` until each reaches min quota, then extras.

    Each full pass over the members still below the quota gives each one
    partition, so a run of passes over the same members is a strided slice.
    """
    pos = 0
    need = {idx: min_quota - len(result[idx]) for idx in under}
    while under and pos < len(pool):
        width = len(under)
        passes = min(min(need[i] for i in under), (len(pool) - pos + width - 1) // width)
        segment = pool[pos:pos + width * passes]
        for offset, idx in enumerate(under):
            result[idx].extend(segment[offset::width])
        pos += len(segment)
        still = []
        for idx in under:
            need[idx] -= passes
            if need[idx] > 0:
                still.append(idx)
            else:
                at_min.append(idx)
        under[:] = still
    for idx, tp in zip(at_min, pool[pos:]):
        result[idx].append(tp)


def _deal_rack_aware(result, pool, under, at_min, at_max, min_quota, max_quota, extras, racks):
    """Java's ``assignRackAwareRoundRobin``: returns the partitions left and the count at max quota."""
    rack_members: dict = {}
    for rack in racks.member_racks:
        if rack is not None:
            rack_members[rack] = rack_members.get(rack, 0) + 1

    def rack_consumers(tp) -> int:
        return sum(rack_members.get(r, 0) for r in racks.racks_of(tp))

    pool = sorted(pool, key=rack_consumers)  # stable: fewest rack-local members first
    member_racks = racks.member_racks
    # How many candidates of each list sit on each rack: a partition with no
    # candidate on its racks is skipped without scanning the list.
    under_racks = _rack_counts(under, member_racks)
    at_min_racks = _rack_counts(at_min, member_racks)
    left = []
    next_index = 0
    for tp in pool:
        chosen = None
        partition_racks = racks.racks_of(tp)
        index = _next_rack_member(partition_racks, under, under_racks, next_index, member_racks)
        if index >= 0:
            chosen = under[index]
            count = len(result[chosen]) + 1
            if count >= min_quota:
                del under[index]
                under_racks[member_racks[chosen]] -= 1
                if count < max_quota and at_max < extras:
                    at_min.append(chosen)
                    at_min_racks[member_racks[chosen]] = at_min_racks.get(member_racks[chosen], 0) + 1
            else:
                index += 1
            next_index = index % len(under) if under else 0
        elif at_min:
            index = _next_rack_member(partition_racks, at_min, at_min_racks, 0, member_racks)
            if index >= 0:
                chosen = at_min[index]
                if len(result[chosen]) + 1 == max_quota:
                    del at_min[index]
                    at_min_racks[member_racks[chosen]] -= 1
                    at_max += 1
                    if at_max == extras:
                        at_min.clear()
                        at_min_racks.clear()
        if chosen is None:
            left.append(tp)
        else:
            result[chosen].append(tp)
    return left, at_max


def _rack_counts(candidates, member_racks) -> dict:
    counts: dict = {}
    for idx in candidates:
        rack = member_racks[idx]
        if rack is not None:
            counts[rack] = counts.get(rack, 0) + 1
    return counts


def _next_rack_member(partition_racks, candidates, rack_counts, first, member_racks) -> int:
    """Java's ``RackInfo.nextRackConsumer``: index of the first candidate from ``first`` on
    (cyclically) whose rack holds a replica, else -1."""
    if not any(rack_counts.get(r) for r in partition_racks):
        return -1
    n = len(candidates)
    for step in range(n):
        index = (first + step) % n
        rack = member_racks[candidates[index]]
        if rack is not None and rack in partition_racks:
            return index
    return -1


def _general(partitions_per_topic, subs, kept, owner_by_topic, racks, claims=None):
    members = len(kept)
    eligible: dict[str, list[int]] = {}
    for idx, sub in enumerate(subs):
        for topic in sorted(sub):
            eligible.setdefault(topic, []).append(idx)
    # Rack-aware (Java's GeneralAssignmentBuilder.assignOwnedPartitions): a
    # member gives up owned partitions with no replica on its rack, and they
    # are placed again with the unowned ones, rack-local members first.
    # Not in cooperative mode: a partition that balance then leaves on a
    # rack-remote member would be given up again next round and could land
    # elsewhere, so no round would be final (the constrained path has quotas
    # and does not have this problem).
    given_up: dict[str, list[TopicPartition]] = {}
    if racks is not None and claims is None:
        racks.racks_by_topic = {
            t: frozenset(racks.member_racks[i] for i in elig) - {None} for t, elig in eligible.items()
        }
        for idx, own in enumerate(kept):
            if any(racks.movable(tp, idx) for tp in own):
                kept[idx] = [tp for tp in own if not racks.movable(tp, idx)]
                for tp in own:
                    if racks.movable(tp, idx):
                        given_up.setdefault(tp[0], []).append(tp)
    loads = [len(k) for k in kept]
    # Fewest subscribers first: constrained topics get placed before flexible ones.
    topic_order = sorted(eligible, key=lambda t: (len(eligible[t]), t))

    # holdings[idx][topic] -> partitions, owned first so balancing moves new ones.
    holdings: list[dict[str, list[TopicPartition]]] = [{} for _ in range(members)]
    for idx, own in enumerate(kept):
        h = holdings[idx]
        for tp in own:
            h.setdefault(tp[0], []).append(tp)

    # Cooperative: log every placement and move, (partition, from or None, to).
    log: Optional[list] = [] if claims is not None else None
    pools = {}
    for topic in topic_order:
        pool = _pool(topic, partitions_per_topic[topic], owner_by_topic)
        if topic in given_up:
            pool = sorted(pool + given_up[topic])
        if pool:
            pools[topic] = pool
    _place_all(topic_order, pools, eligible, loads, holdings, racks, log)
    _balance(topic_order, eligible, loads, holdings, log)
    if log:
        _withhold(log, claims, topic_order, eligible, loads, holdings, racks)
    return [[tp for parts in h.values() for tp in parts] for h in holdings]


def _balance(topic_order, eligible, loads, holdings, log=None) -> None:
    moved = True
    while moved:
        moved = False
        for topic in topic_order:
            if len(eligible[topic]) > 1 and _balance_topic(topic, eligible[topic], loads, holdings, log):
                moved = True


def _withhold(log, claims, topic_order, eligible, loads, holdings, racks) -> None:
    """Turn the balanced target in ``holdings`` into this round's cooperative answer.

    First take out every partition whose target holder does not claim it
    while another member does.  Then simulate the next round, in which the
    withheld partitions are unowned: place them and balance with the same
    code the next call runs.  If the simulation takes a partition from a
    member that keeps it in this answer, withhold that one too and simulate
    again (each pass withholds more, so this ends).  ``holdings`` ends as the
    state the last simulation started from.
    """
    final: dict = {}
    for tp, _, dst in log:
        final[tp] = dst
    # target[tp]: where a withheld partition sits in the last known balanced state.
    target = {tp: h for tp, h in final.items() if not claims.safe(tp, h)}
    if not target:
        return
    for tp, h in target.items():
        holdings[h][tp[0]].remove(tp)
        loads[h] -= 1
    while True:
        by_topic: dict = {}
        for tp in sorted(target):
            by_topic.setdefault(tp[0], []).append(tp)
        sim: list = []
        _place_all(topic_order, by_topic, eligible, loads, holdings, racks, sim)
        # Placed exactly where a balanced state has them: balancing would move nothing.
        if any(dst != target[tp] for tp, _, dst in sim):
            _balance(topic_order, eligible, loads, holdings, sim)
        origin: dict = {}
        for tp, src, dst in sim:
            if src is not None and tp not in target:
                origin.setdefault(tp, src)
            final[tp] = dst
        taken = [(tp, src) for tp, src in origin.items() if final[tp] != src]
        # Undo the simulation, newest first: each undone partition is last in its list.
        for tp, src, dst in reversed(sim):
            holdings[dst][tp[0]].pop()
            loads[dst] -= 1
            if src is not None:
                holdings[src][tp[0]].append(tp)
                loads[src] += 1
        if not taken:
            return
        for tp, src in taken:
            holdings[src][tp[0]].remove(tp)
            loads[src] -= 1
        target = {tp: final[tp] for tp in target}
        target.update((tp, final[tp]) for tp, _ in taken)


def _place_all(topic_order, pools, eligible, loads, holdings, racks, log=None) -> None:
    """Place every pooled partition, topics in ``topic_order``.

    Rack-aware (Java's GeneralAssignmentBuilder.balance): first every
    partition that has an eligible member on a replica's rack goes to the
    least-loaded such member, then the rest to the least-loaded eligible one.
    """
    if racks is not None:
        left = {}
        for topic in topic_order:
            pool = pools.get(topic)
            if pool:
                rest = _place_rack_local(topic, pool, eligible[topic], loads, holdings, racks, log)
                if rest:
                    left[topic] = rest
        pools = left
    for topic in topic_order:
        pool = pools.get(topic)
        if pool:
            _place(topic, pool, eligible[topic], loads, holdings, log)


def _place_rack_local(topic, pool, elig, loads, holdings, racks, log=None) -> list:
    """Give each partition to the least-loaded eligible member on one of its racks; return the rest."""
    rack_heaps: dict = {}
    for i in elig:
        r = racks.member_racks[i]
        if r is not None:
            rack_heaps.setdefault(r, []).append((loads[i], i))
    for h in rack_heaps.values():
        heapq.heapify(h)
    rest = []
    for tp in pool:
        best = None
        for r in racks.racks_of(tp):
            h = rack_heaps.get(r)
            if not h:
                continue
            # Heaps are lazy: an entry is current only if its load still matches.
            while h[0][0] != loads[h[0][1]]:
                heapq.heapreplace(h, (loads[h[0][1]], h[0][1]))
            if best is None or h[0] < best:
                best = h[0]  # (load, index): a total order, so the racks' set order cannot matter
        if best is None:
            rest.append(tp)
            continue
        i = best[1]
        loads[i] += 1
        holdings[i].setdefault(topic, []).append(tp)
        if log is not None:
            log.append((tp, None, i))
        heapq.heapreplace(rack_heaps[racks.member_racks[i]], (loads[i], i))
    return rest


def _place(topic, pool, elig, loads, holdings, log=None):
    """Give each partition to the least-loaded eligible member (lowest index on ties)."""
    heap = [(loads[i], i) for i in elig]
    heapq.heapify(heap)
    for tp in pool:
        # Heaps are lazy: an entry is current only if its load still matches.
        while heap[0][0] != loads[heap[0][1]]:
            heapq.heapreplace(heap, (loads[heap[0][1]], heap[0][1]))
        best = heap[0][1]
        loads[best] += 1
        holdings[best].setdefault(topic, []).append(tp)
        if log is not None:
            log.append((tp, None, best))
        heapq.heapreplace(heap, (loads[best], best))


def _balance_topic(topic, elig, loads, holdings, log=None) -> bool:
    """Move partitions of ``topic`` from heavy holders to light members until loads differ by < 2."""
    elig_loads = list(map(loads.__getitem__, elig))
    if max(elig_loads) - min(elig_loads) < 2:
        return False  # the common case once balanced: no pair can qualify, skip the heaps
    light = [(loads[i], i) for i in elig]
    heavy = [(-loads[i], i) for i in elig if holdings[i].get(topic)]
    heapq.heapify(light)
    heapq.heapify(heavy)
    moved = False
    while heavy:
        neg, a = heavy[0]
        if -neg != loads[a] or not holdings[a].get(topic):
            heapq.heappop(heavy)
            if holdings[a].get(topic):
                heapq.heappush(heavy, (-loads[a], a))
            continue
        while light[0][0] != loads[light[0][1]]:
            heapq.heapreplace(light, (loads[light[0][1]], light[0][1]))
        b = light[0][1]
        if loads[a] - loads[b] < 2:
            break
        tp = holdings[a][topic].pop()
        holdings[b].setdefault(topic, []).append(tp)
        if log is not None:
            log.append((tp, a, b))
        loads[a] -= 1
        loads[b] += 1
        heapq.heapreplace(light, (loads[b], b))
        heapq.heapreplace(heavy, (-loads[a], a))
        moved = True
    return moved
