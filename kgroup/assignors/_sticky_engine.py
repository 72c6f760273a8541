"""The sticky assignment engine shared by ``sticky`` and ``cooperative-sticky``.

Semantics follow Java's AbstractStickyAssignor: keep valid owned partitions,
hand out the rest to the least-loaded eligible member, then balance.

Two paths, chosen like Java does:

* identical subscriptions ("constrained"): quotas are known up front
  (``P // M``, the first ``P % M`` members to qualify get one more), so one
  pass keeps owned partitions up to quota and fills the rest from the pool.
  O(P + M), no per-partition heap work.
* anything else ("general"): greedy least-loaded placement per topic
  (fewest subscribers first) with heaps, then per-topic balancing moves
  from the heaviest holder to the lightest eligible member while their
  loads differ by two or more.  Newly placed partitions move first, so
  owned ones stay put.

Rack awareness (KIP-881), when both partition racks and member racks are
known: the constrained path trims rack-remote owned partitions first and
fills quotas with rack-local ones first; the general path breaks
least-loaded ties towards a rack-local member.  Balancing moves ignore racks.

Cooperative mode (``cooperative=True``, KIP-429): a partition that would go
to a member other than one that claims it is withheld this round; its
claimer revokes it and rejoins, and the next round (in which it is unowned)
hands it over.  For that next round to move nothing else, the general path
simulates it before answering: it removes the withheld partitions, places
them and balances exactly as the next call will (the engine is
deterministic, and the order in which a member lists its owned partitions
never changes a placement or balancing decision, only which of them a move
takes), and if that would take a partition from a member that keeps it now,
withholds that partition too and simulates again.  The answer is the state the
simulation starts from, so the follow-up round only adds partitions and a
membership change settles in at most two rounds.  The constrained path needs
no simulation: every member keeps at most its quota, so the next round
revokes nothing.

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
    racks = _rack_info(partition_racks, inputs)

    if not member_ids:
        return {}
    # Only claims can make a partition unsafe to hand out: skip the bookkeeping without any.
    claims = _Claims(owner_by_topic, contested) if cooperative and (owner_by_topic or contested) else None
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
        if owners is not None and owners[tp[1]] == _LISTED - holder:
            return True
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


class _Racks(NamedTuple):
    partition_racks: Mapping[str, Sequence[frozenset]]
    member_racks: list  # rack id per member index (None when unknown)

    def matches(self, tp: TopicPartition, member: int) -> bool:
        rack = self.member_racks[member]
        racks = self.partition_racks.get(tp[0])
        return rack is not None and racks is not None and tp[1] < len(racks) and rack in racks[tp[1]]


def _rack_info(partition_racks, inputs) -> Optional[_Racks]:
    # KIP-881: rack-aware only when both sides know racks; else identical to non-rack output.
    if not partition_racks:
        return None
    member_racks = [mi.rack_id for mi in inputs]
    if all(r is None for r in member_racks):
        return None
    return _Racks(partition_racks, member_racks)


def _constrained(partitions_per_topic, topics, kept, owner_by_topic, racks, claims=None):
    members = len(kept)
    total = sum(partitions_per_topic[t] for t in topics)
    min_quota, extras = divmod(total, members)
    max_quota = min_quota + 1 if extras else min_quota
    result: list[list[TopicPartition]] = []
    revoked: list[TopicPartition] = []
    at_max = 0
    for idx, own in enumerate(kept):
        if racks is not None and len(own) > min_quota:
            # Trim rack mismatches first so what stays is local.
            own = sorted(own, key=lambda tp, i=idx: not racks.matches(tp, i))
        if len(own) >= max_quota and at_max < extras:
            keep = max_quota
            at_max += 1
        else:
            keep = min(len(own), min_quota)
        result.append(own[:keep])
        revoked.extend(own[keep:])

    pool: list[TopicPartition] = []
    for topic in topics:
        pool.extend(_pool(topic, partitions_per_topic[topic], owner_by_topic))
    pool.extend(revoked)

    # Extras left after the members that kept max quota go to members in id order.
    spare = extras - at_max
    needs = []
    for own in result:
        need = min_quota - len(own)
        if len(own) <= min_quota and spare > 0:
            need += 1
            spare -= 1
        needs.append(need)
    kept_counts = [len(own) for own in result]
    if racks is None:
        pos = 0
        for own, need in zip(result, needs):
            if need > 0:
                own.extend(pool[pos : pos + need])
                pos += need
    else:
        _fill_rack_aware(result, needs, pool, racks)
    if claims is not None:
        # Withhold what another member still holds.  Every member keeps at
        # most its quota, so the next round revokes nothing: two rounds.
        for idx, own in enumerate(result):
            k = kept_counts[idx]
            if len(own) > k:
                own[k:] = [tp for tp in own[k:] if claims.safe(tp, idx)]
    return result


def _fill_rack_aware(result, needs, pool, racks):
    """Fill quotas preferring partitions with a replica in the member's rack."""
    taken = bytearray(len(pool))
    by_rack: dict[str, list[int]] = {}
    for i, tp in enumerate(pool):
        racks_of = racks.partition_racks.get(tp[0])
        if racks_of is not None and tp[1] < len(racks_of):
            for rack in racks_of[tp[1]]:
                by_rack.setdefault(rack, []).append(i)
    cursor = {rack: 0 for rack in by_rack}
    for idx, need in enumerate(needs):
        rack = racks.member_racks[idx]
        if need <= 0 or rack not in by_rack:
            continue
        indices, c = by_rack[rack], cursor[rack]
        while need and c < len(indices):
            i = indices[c]
            c += 1
            if not taken[i]:
                taken[i] = 1
                result[idx].append(pool[i])
                need -= 1
        cursor[rack] = c
        needs[idx] = need
    pos = 0
    for idx, need in enumerate(needs):
        while need > 0:
            if not taken[pos]:
                taken[pos] = 1
                result[idx].append(pool[pos])
                need -= 1
            pos += 1


def _general(partitions_per_topic, subs, kept, owner_by_topic, racks, claims=None):
    members = len(kept)
    loads = [len(k) for k in kept]
    eligible: dict[str, list[int]] = {}
    for idx, sub in enumerate(subs):
        for topic in sub:
            eligible.setdefault(topic, []).append(idx)
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
    for topic in topic_order:
        pool = _pool(topic, partitions_per_topic[topic], owner_by_topic)
        if pool:
            _place(topic, pool, eligible[topic], loads, holdings, racks, log)
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
        for topic in topic_order:
            pool = by_topic.get(topic)
            if pool:
                _place(topic, pool, eligible[topic], loads, holdings, racks, sim)
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


def _place(topic, pool, elig, loads, holdings, racks, log=None):
    """Give each partition to the least-loaded eligible member (rack-local on ties)."""
    heap = [(loads[i], i) for i in elig]
    heapq.heapify(heap)
    rack_heaps = None
    if racks is not None:
        rack_heaps = {}
        for i in elig:
            r = racks.member_racks[i]
            if r is not None:
                rack_heaps.setdefault(r, []).append((loads[i], i))
        for h in rack_heaps.values():
            heapq.heapify(h)
        racks_of = racks.partition_racks.get(topic) or ()
    for tp in pool:
        # Heaps are lazy: an entry is current only if its load still matches.
        while heap[0][0] != loads[heap[0][1]]:
            heapq.heapreplace(heap, (loads[heap[0][1]], heap[0][1]))
        best = heap[0][1]
        if rack_heaps and tp[1] < len(racks_of):
            for r in racks_of[tp[1]]:
                h = rack_heaps.get(r)
                if not h:
                    continue
                while h[0][0] != loads[h[0][1]]:
                    heapq.heapreplace(h, (loads[h[0][1]], h[0][1]))
                if h[0][0] == loads[best] and not racks.matches(tp, best):
                    best = h[0][1]
            r = racks.member_racks[best]
            if r is not None:
                heapq.heappush(rack_heaps[r], (loads[best] + 1, best))
        loads[best] += 1
        holdings[best].setdefault(topic, []).append(tp)
        if log is not None:
            log.append((tp, None, best))
        if heap[0][1] == best:
            heapq.heapreplace(heap, (loads[best], best))
        else:
            heapq.heappush(heap, (loads[best], best))


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
