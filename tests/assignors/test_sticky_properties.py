"""Hypothesis properties of sticky and cooperative-sticky over random groups."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from kgroup.assignors.cooperative_sticky import CooperativeStickyAssignor
from kgroup.assignors.sticky import StickyAssignor
from kgroup.values import Subscription, TopicPartition as TP
from assignors_sticky_helpers import assert_balanced, assert_valid

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


def assert_hand_over_safe(subs, result):
    """No partition goes to a member other than one that claims it."""
    for member, assignment in result.items():
        for tp in assignment.partitions:
            claimers = {m for m, s in subs.items() if tp in s.owned_partitions}
            assert not claimers or member in claimers, f"{tp} handed to {member} while {claimers} hold it"


def rounds_to_settle(assignor, ppt, subs, result, partition_racks=None):
    """Rebalance (everyone owns what it got) until nothing changes; return the rounds used.

    Owned lists go back in reverse order: members may list them in any order.
    """
    rounds = 1
    while True:
        nxt = {
            m: Subscription(topics=s.topics, owned_partitions=tuple(reversed(result[m].partitions)),
                            generation_id=9 + rounds, rack_id=s.rack_id)
            for m, s in subs.items()
        }
        final = assignor.assign(ppt, nxt, partition_racks)
        assert_hand_over_safe(nxt, final)
        if final == result:
            assert_valid(ppt, nxt, final)
            assert_balanced(ppt, nxt, final)
            return rounds
        result = final
        rounds += 1
        assert rounds <= 5, "did not settle"


@settings(max_examples=300, deadline=None)
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
    assert_hand_over_safe(subs, result)
    # The follow-up round only hands out what was withheld: settled in two
    # rounds, identical subscriptions or not.
    assert rounds_to_settle(CooperativeStickyAssignor(), ppt, subs, result) <= 2


@st.composite
def membership_changes(draw):
    """A settled group (maybe rack-aware), then members join, leave or resubscribe."""
    ppt = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 12), min_size=1, max_size=4))
    topic_lists = st.lists(st.sampled_from(TOPICS), unique=True, min_size=1, max_size=4)
    racks = st.sampled_from([None, "r0", "r1", "r2"])
    partition_racks = None
    if draw(st.booleans()):
        replica_racks = st.frozensets(st.sampled_from(["r0", "r1", "r2"]), min_size=1, max_size=2)
        partition_racks = {t: draw(st.lists(replica_racks, min_size=n, max_size=n)) for t, n in ppt.items()}
    members = draw(st.integers(1, 6))
    before = {f"m{i}": Subscription(topics=draw(topic_lists), rack_id=draw(racks)) for i in range(members)}
    changes = draw(st.lists(st.tuples(st.sampled_from(["join", "leave", "resubscribe"]), topic_lists, racks),
                            min_size=1, max_size=3))
    return ppt, partition_racks, before, changes


@settings(max_examples=300, deadline=None)
@given(membership_changes())
def test_cooperative_membership_change_settles_in_two_rounds(case):
    ppt, partition_racks, subs, changes = case
    coop = CooperativeStickyAssignor()
    result = coop.assign(ppt, subs, partition_racks)
    while True:  # the settled state: everyone owns its final assignment
        subs = {m: Subscription(topics=s.topics, owned_partitions=result[m].partitions, generation_id=5,
                                rack_id=s.rack_id) for m, s in subs.items()}
        again = coop.assign(ppt, subs, partition_racks)
        if again == result:
            break
        result = again
    for n, (kind, topics, rack) in enumerate(changes):
        if kind == "join" or len(subs) == 1:
            subs[f"new{n}"] = Subscription(topics=topics, rack_id=rack)
        elif kind == "leave":
            del subs[sorted(subs)[n % len(subs)]]
        else:
            m = sorted(subs)[n % len(subs)]
            subs[m] = Subscription(topics=topics, owned_partitions=subs[m].owned_partitions, generation_id=5,
                                   rack_id=subs[m].rack_id)
    # Known gaps (tests below): rack-aware groups whose subscriptions differ, or with a member that
    # has no rack, can need a third (or fourth) round.
    assume(partition_racks is None or (len({s.topics for s in subs.values()}) == 1
                                       and all(s.rack_id is not None for s in subs.values())))
    first = coop.assign(ppt, subs, partition_racks)
    assert_hand_over_safe(subs, first)
    assert rounds_to_settle(coop, ppt, subs, first, partition_racks) <= 2


@pytest.mark.xfail(strict=True, reason="known gap: with racks and differing subscriptions the general "
                   "path moves a rack-remote partition one round after the change (3 rounds)")
def test_rack_aware_group_with_differing_subscriptions_settles_in_two_rounds():
    """The example hypothesis found for the test above: m0 resubscribes to every topic, two members
    leave; the follow-up round keeps d-8 on m4 (rack r0, replica on r1), the next one moves it."""
    r0, r1 = frozenset({"r0"}), frozenset({"r1"})
    ppt = {"b": 2, "d": 9}
    partition_racks = {"b": [r0, r0], "d": [r0] * 5 + [r1] * 4}
    subs = {
        "m0": Subscription(topics=("a", "b", "c", "d"), generation_id=5, rack_id="r0"),
        "m2": Subscription(topics=("b", "d"), owned_partitions=(TP("d", 5), TP("d", 6), TP("d", 7)),
                           generation_id=5, rack_id="r1"),
        "m4": Subscription(topics=("b", "d"), owned_partitions=(TP("d", 0), TP("d", 1), TP("d", 8)),
                           generation_id=5, rack_id="r0"),
        "m5": Subscription(topics=("a", "b", "c", "d"), owned_partitions=(TP("d", 2), TP("d", 3), TP("d", 4)),
                           generation_id=5),
    }
    coop = CooperativeStickyAssignor()
    first = coop.assign(ppt, subs, partition_racks)
    assert rounds_to_settle(coop, ppt, subs, first, partition_racks) <= 2


@pytest.mark.xfail(strict=True, reason="known gap: a rack-aware group with a member that has no rack "
                   "moves a rack-remote partition to the rackless member one round late (4 rounds)")
def test_rack_aware_group_with_a_rackless_member_settles_in_two_rounds():
    """Hypothesis found it (equal subscriptions): m0 on r1 owns all of b, whose partitions live on r0;
    new0 (no rack) and new1 (r0) join.  The third round revokes b-9 from m0 for new0, which the first
    round could have done; with new0 on any rack the group settles in two rounds."""
    r0, r01 = frozenset({"r0"}), frozenset({"r0", "r1"})
    ppt = {"b": 11}
    partition_racks = {"b": [r0] * 10 + [r01]}
    coop = CooperativeStickyAssignor()
    alone = coop.assign(ppt, {"m0": Subscription(topics=("b",), rack_id="r1")}, partition_racks)
    subs = {
        "m0": Subscription(topics=("b",), owned_partitions=alone["m0"].partitions, generation_id=5,
                           rack_id="r1"),
        "new0": Subscription(topics=("b",)),
        "new1": Subscription(topics=("b",), rack_id="r0"),
    }
    first = coop.assign(ppt, subs, partition_racks)
    assert rounds_to_settle(coop, ppt, subs, first, partition_racks) <= 2
