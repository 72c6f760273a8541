"""Shared checks for the sticky assignor tests (imported, holds no tests)."""
from __future__ import annotations

from collections import Counter

from kgroup.values import Subscription, TopicPartition


def subscribed_partitions(ppt, subs):
    topics = {topic for sub in subs.values() for topic in sub.topics}
    return {TopicPartition(topic, p) for topic in topics for p in range(ppt.get(topic, 0))}


def assert_valid(ppt, subs, result):
    """Every member answered, only subscribed topics, nothing twice, everything assigned."""
    assert set(result) == set(subs)
    seen = Counter(tp for a in result.values() for tp in a.partitions)
    assert not [tp for tp, n in seen.items() if n > 1], "partition assigned twice"
    for member, assignment in result.items():
        topics = set(subs[member].topics)
        assert all(tp.topic in topics and tp.partition < ppt.get(tp.topic, 0) for tp in assignment.partitions)
        assert list(assignment.partitions) == sorted(assignment.partitions)
    assert set(seen) == subscribed_partitions(ppt, subs)


def sizes(result):
    return {m: len(a.partitions) for m, a in result.items()}


def assert_balanced(ppt, subs, result):
    """Identical subscriptions: sizes differ by <= 1.  Otherwise Java's definition:
    no member can take a partition from one holding 2+ more than it."""
    load = sizes(result)
    if len({frozenset(s.topics) for s in subs.values()}) == 1:
        assert max(load.values()) - min(load.values()) <= 1
        return
    for a, assignment in result.items():
        for tp in assignment.partitions:
            for b, sub in subs.items():
                if tp.topic in sub.topics:
                    assert load[a] - load[b] < 2, f"{b} ({load[b]}) could take {tp} from {a} ({load[a]})"


def owned_subs(result, subs, generation_id=1):
    """Next-round subscriptions: each member now owns what it was given."""
    return {
        m: Subscription(
            topics=s.topics,
            owned_partitions=result[m].partitions if m in result else (),
            generation_id=generation_id,
            group_instance_id=s.group_instance_id,
            rack_id=s.rack_id,
        )
        for m, s in subs.items()
    }


def moved(before, after):
    """Partitions whose owner changed between two assignments (both owners present)."""
    owner = {tp: m for m, a in before.items() for tp in a.partitions}
    return {
        tp for m, a in after.items() for tp in a.partitions if owner.get(tp, m) != m and owner[tp] in after
    }
