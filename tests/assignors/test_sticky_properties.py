"""Hypothesis properties of sticky and cooperative-sticky over random groups."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kgroup.assignors.cooperative_sticky import CooperativeStickyAssignor
from kgroup.assignors.sticky import StickyAssignor
from kgroup.values import Subscription, TopicPartition as TP
from test_sticky_helpers import assert_balanced, assert_valid

TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(draw, identical=False):
    # Topics may be missing from ppt (deleted) while still subscribed.
    ppt = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), max_size=4))
    members = draw(st.integers(1, 7))
    shared = draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=4))
    subs = {}
    all_tps = [TP(t, p) for t in TOPICS for p in range(14)]  # includes partitions that do not exist
    for i in range(members):
        topics = shared if identical else draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=4))
        owned = draw(st.lists(st.sampled_from(all_tps), max_size=8))
        generation_id = draw(st.integers(-1, 3))
        subs[f"m{i}"] = Subscription(topics=topics, owned_partitions=owned, generation_id=generation_id)
    return ppt, subs


@settings(max_examples=150, deadline=None)
@given(groups())
def test_sticky_valid_and_balanced(group):
    ppt, subs = group
    result = StickyAssignor().assign(ppt, subs)
    assert_valid(ppt, subs, result)
    assert_balanced(ppt, subs, result)


@settings(max_examples=150, deadline=None)
@given(groups(identical=True))
def test_sticky_identical_sizes_differ_by_at_most_one(group):
    ppt, subs = group
    result = StickyAssignor().assign(ppt, subs)
    assert_valid(ppt, subs, result)
    counts = [len(a.partitions) for a in result.values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(groups())
def test_cooperative_never_hands_over_a_claimed_partition(group):
    ppt, subs = group
    result = CooperativeStickyAssignor().assign(ppt, subs)
    assert set(result) == set(subs)
    seen = set()
    for member, assignment in result.items():
        for tp in assignment.partitions:
            assert tp not in seen
            seen.add(tp)
            assert tp.topic in subs[member].topics and tp.partition < ppt.get(tp.topic, 0)
            claimers = {m for m, s in subs.items() if tp in s.owned_partitions}
            assert not claimers or member in claimers
    # Following rounds (everyone owns what it got) settle: with identical
    # subscriptions the second round assigns everything; otherwise the greedy
    # general path may need one more round.
    identical = len({frozenset(s.topics) for s in subs.values()}) == 1
    rounds = 1
    while True:
        nxt = {
            m: Subscription(topics=s.topics, owned_partitions=result[m].partitions, generation_id=9 + rounds)
            for m, s in subs.items()
        }
        final = CooperativeStickyAssignor().assign(ppt, nxt)
        if final == result:
            break
        result = final
        rounds += 1
        assert rounds <= (2 if identical else 3), "did not settle"
    assert_valid(ppt, nxt, final)
    assert_balanced(ppt, nxt, final)
