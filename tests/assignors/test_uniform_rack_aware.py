"""The server assignor ``uniform-rack-aware`` (kgroup's; Kafka's server assignors ignore racks, apache/kafka
PR #20000 / KAFKA-19909 is open): uniform's validity and balance, never fewer rack-local partitions than
``uniform`` on the same input (KIP-881's rack-local: a replica on the member's rack), uniform's answer when
racks cannot help, and stickiness across a member joining or leaving.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kgroup.assignors import AssignmentMember, get_server_assignor, known_server_assignors
from kgroup.assignors.uniform_rack_aware import UniformRackAwareAssignor, rack_local_count
from kgroup.values import TopicPartition as TP

TOPICS = ["a", "b", "c", "d"]
RACKS = ["r1", "r2", "r3", "r4"]

rack_aware = UniformRackAwareAssignor()
uniform = get_server_assignor("uniform")


@st.composite
def groups(draw, identical=True, racked=True):
    """Members (some without a rack), topics (some subscribed ones missing), each partition's replica racks
    (some partitions without any), and current targets (stale, out-of-range and duplicated ones too)."""
    ppt = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), max_size=4))
    partition_racks = {
        topic: [frozenset(draw(st.lists(st.sampled_from(RACKS), max_size=3))) for _ in range(count)]
        for topic, count in ppt.items()}
    shared = draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=4))
    all_tps = [TP(t, p) for t in TOPICS for p in range(14)]
    members = {}
    for i in range(draw(st.integers(1, 8))):
        topics = shared if identical else draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=4))
        rack = draw(st.sampled_from(RACKS[:3] + [None])) if racked else None
        owned = draw(st.lists(st.sampled_from(all_tps), max_size=8))
        members[f"m{i}"] = AssignmentMember(f"m{i}", topics, owned, rack_id=rack)
    return ppt, partition_racks, members


def assert_valid(result, members, ppt):
    """Every partition of a subscribed topic exactly once, and only to a member subscribing it."""
    owners = {}
    for member_id, owned in result.items():
        for tp in owned:
            assert tp not in owners, f"{tp} given to {owners[tp]} and {member_id}"
            assert tp.topic in members[member_id].subscribed_topics
            owners[tp] = member_id
    subscribed = {t for m in members.values() for t in m.subscribed_topics if t in ppt}
    assert set(owners) == {TP(t, p) for t in subscribed for p in range(ppt[t])}
    assert set(result) == set(members)


def assert_balanced_as_uniform(result, members, ppt):
    """Identical subscriptions: counts within one.  Differing ones: no partition could move to a
    subscribed member with two or fewer (uniform's heterogeneous balance)."""
    counts = {m: len(p) for m, p in result.items()}
    if len({m.subscribed_topics for m in members.values()}) == 1:
        assert max(counts.values()) - min(counts.values()) <= 1
        return
    for giver, owned in result.items():
        for tp in owned:
            for taker, member in members.items():
                assert not (tp.topic in member.subscribed_topics and counts[giver] - counts[taker] >= 2), \
                    f"{tp} could move from {giver} ({counts[giver]}) to {taker} ({counts[taker]})"


def with_current(members, result):
    return {m: AssignmentMember(m, spec.subscribed_topics, result.get(m, ()), rack_id=spec.rack_id)
            for m, spec in members.items()}


# -- validity, balance, locality ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(groups(identical=True))
def test_identical_subscriptions_valid_balanced_and_at_least_as_local_as_uniform(group):
    ppt, partition_racks, members = group
    result = rack_aware.assign(members, ppt, partition_racks)
    assert_valid(result, members, ppt)
    assert_balanced_as_uniform(result, members, ppt)
    baseline = uniform.assign(members, ppt)
    assert (rack_local_count(result, members, partition_racks)
            >= rack_local_count(baseline, members, partition_racks))


@settings(max_examples=300, deadline=None)
@given(groups(identical=False))
def test_differing_subscriptions_valid_balanced_and_at_least_as_local_as_uniform(group):
    ppt, partition_racks, members = group
    result = rack_aware.assign(members, ppt, partition_racks)
    assert_valid(result, members, ppt)
    assert_balanced_as_uniform(result, members, ppt)
    baseline = uniform.assign(members, ppt)
    assert (rack_local_count(result, members, partition_racks)
            >= rack_local_count(baseline, members, partition_racks))


@settings(max_examples=150, deadline=None)
@given(groups(identical=True, racked=False), st.booleans())
def test_without_member_or_partition_racks_it_is_uniform(group, drop_partition_racks):
    ppt, partition_racks, members = group
    if drop_partition_racks:  # members with racks, partitions without
        members = {m: AssignmentMember(m, s.subscribed_topics, s.current_partitions, rack_id="r1")
                   for m, s in members.items()}
        partition_racks = {}
    assert rack_aware.assign(members, ppt, partition_racks) == uniform.assign(members, ppt)


@settings(max_examples=100, deadline=None)
@given(groups(identical=False))
def test_every_partition_on_the_same_racks_is_uniform(group):
    # KIP-881's useRackAwareAssignment: nothing to gain when every partition has the same replica racks.
    ppt, _, members = group
    same = {topic: [frozenset({"r1", "r2"})] * count for topic, count in ppt.items()}
    assert rack_aware.assign(members, ppt, same) == uniform.assign(members, ppt)


def test_locality_gain_over_uniform_on_a_known_group():
    """Six partitions, two racks, each partition on one rack only: uniform's partition-order ranges (0-2, 3-5)
    put a third of them off-rack; the rack-aware answer puts every one on its member's rack."""
    ppt = {"t": 6}
    partition_racks = {"t": [frozenset({"r1"}), frozenset({"r2"})] * 3}
    members = {"m0": AssignmentMember("m0", {"t"}, rack_id="r1"),
               "m1": AssignmentMember("m1", {"t"}, rack_id="r2")}
    result = rack_aware.assign(members, ppt, partition_racks)
    assert result == {"m0": {TP("t", 0), TP("t", 2), TP("t", 4)}, "m1": {TP("t", 1), TP("t", 3), TP("t", 5)}}
    assert rack_local_count(uniform.assign(members, ppt), members, partition_racks) == 4
    assert rack_local_count(result, members, partition_racks) == 6


def test_balance_comes_before_locality():
    """Every partition is on r1's rack, but the r2 member still gets its share (KIP-881: balance first)."""
    ppt = {"t": 4}
    partition_racks = {"t": [frozenset({"r1"})] * 3 + [frozenset({"r3"})]}
    members = {"m0": AssignmentMember("m0", {"t"}, rack_id="r1"),
               "m1": AssignmentMember("m1", {"t"}, rack_id="r2")}
    result = rack_aware.assign(members, ppt, partition_racks)
    assert [len(result["m0"]), len(result["m1"])] == [2, 2]
    assert rack_local_count(result, members, partition_racks) == 2


# -- stickiness ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(groups(identical=True))
def test_nothing_moves_when_nothing_changed(group):
    ppt, partition_racks, members = group
    first = rack_aware.assign(members, ppt, partition_racks)
    again = rack_aware.assign(with_current(members, first), ppt, partition_racks)
    assert again == first


@settings(max_examples=200, deadline=None)
@given(groups(identical=False))
def test_nothing_moves_when_nothing_changed_with_differing_subscriptions(group):
    ppt, partition_racks, members = group
    first = rack_aware.assign(members, ppt, partition_racks)
    again = rack_aware.assign(with_current(members, first), ppt, partition_racks)
    assert again == first


def _moved(before, after):
    return sum(len(owned - after.get(member_id, frozenset())) for member_id, owned in before.items()
               if member_id in after)


@settings(max_examples=300, deadline=None)
@given(groups(identical=True), st.sampled_from(RACKS[:3] + [None]), st.booleans())
def test_join_or_leave_moves_beyond_uniform_only_for_rack_locality(group, newcomer_rack, leave):
    """From the assignor's own answer, a member joins (or the first one leaves).  ``uniform`` from the same
    start moves only what balance needs; the rack-aware answer moves at most that plus, for each partition
    it makes rack-local beyond uniform's, one chain of reassignments through the racks (an augmenting path
    of the locality flow crosses each member rack at most once)."""
    ppt, partition_racks, members = group
    settled = with_current(members, rack_aware.assign(members, ppt, partition_racks))
    before = {m: spec.current_partitions for m, spec in settled.items()}
    if leave:
        after_members = dict(settled)
        del after_members[min(after_members)]
    else:
        topics = next(iter(settled.values())).subscribed_topics
        after_members = {**settled, "newcomer": AssignmentMember("newcomer", topics, rack_id=newcomer_rack)}
    result = rack_aware.assign(after_members, ppt, partition_racks)
    baseline = uniform.assign(after_members, ppt)
    assert_valid(result, after_members, ppt)
    gain = rack_local_count(result, after_members, partition_racks) - rack_local_count(
        baseline, after_members, partition_racks)
    assert gain >= 0
    member_racks = {m.rack_id for m in after_members.values() if m.rack_id is not None}
    assert _moved(before, result) <= _moved(before, baseline) + gain * max(len(member_racks), 1)


def test_a_survivor_gives_up_a_partition_when_that_makes_one_more_rack_local():
    """m2 (r2) leaves with partitions 4 and 5, which only r2 holds.  m1 (r2) has room for one; instead of
    m0 (r1) taking the other off-rack, m1 hands partition 2 (on r1 and r2) to m0 and takes both: one move
    more than stickiness alone, every partition rack-local (locality before stickiness)."""
    ppt = {"t": 6}
    partition_racks = {"t": [frozenset({"r1", "r2"})] * 3 + [frozenset({"r2"})] * 3}
    members = {f"m{i}": AssignmentMember(f"m{i}", {"t"}, rack_id=rack)
               for i, rack in enumerate(["r1", "r2", "r2"])}
    first = rack_aware.assign(members, ppt, partition_racks)
    assert first == {"m0": {TP("t", 0), TP("t", 1)}, "m1": {TP("t", 2), TP("t", 3)},
                     "m2": {TP("t", 4), TP("t", 5)}}
    settled = with_current(members, first)
    del settled["m2"]
    result = rack_aware.assign(settled, ppt, partition_racks)
    assert result == {"m0": {TP("t", 0), TP("t", 1), TP("t", 2)}, "m1": {TP("t", 3), TP("t", 4), TP("t", 5)}}
    assert rack_local_count(result, settled, partition_racks) == 6
    assert rack_local_count(uniform.assign(settled, ppt), settled, partition_racks) == 5


# -- registry ------------------------------------------------------------------------------


def test_registered_beside_uniform_and_range_and_asks_for_partition_racks():
    assert {"uniform", "range", "uniform-rack-aware"} <= set(known_server_assignors())
    assignor = get_server_assignor("uniform-rack-aware")
    assert isinstance(assignor, UniformRackAwareAssignor)
    assert assignor.uses_partition_racks and not uniform.uses_partition_racks


@pytest.mark.parametrize("members", [{}])
def test_no_members_no_assignment(members):
    assert rack_aware.assign(members, {"t": 3}, {"t": [frozenset({"r1"})] * 3}) == {}


def test_a_locality_swap_never_breaks_uniforms_balance_with_differing_subscriptions():
    """Found by hypothesis: m4 (r1) owns c-3, which only r3 holds.  Swapping it with one of m0's (r3)
    partitions of topic a would leave m0 holding a c partition that m3 (subscribed to c alone, two fewer)
    could take: uniform's heterogeneous balance forbids that, so the swap is not made."""
    ppt = {"c": 6, "a": 12}
    partition_racks = {"c": [frozenset()] * 3 + [frozenset({"r3"})] + [frozenset()] * 2,
                       "a": [frozenset()] * 12}
    members = {"m0": AssignmentMember("m0", {"a", "b", "c"}, rack_id="r3"),
               "m1": AssignmentMember("m1", (), rack_id="r1"),
               "m2": AssignmentMember("m2", (), rack_id="r1"),
               "m3": AssignmentMember("m3", {"c"}, rack_id="r1"),
               "m4": AssignmentMember("m4", {"a", "b", "c"}, [TP("c", 3)], rack_id="r1")}
    result = rack_aware.assign(members, ppt, partition_racks)
    assert_valid(result, members, ppt)
    assert_balanced_as_uniform(result, members, ppt)
    assert rack_aware.assign(with_current(members, result), ppt, partition_racks) == result


def test_a_member_keeps_its_partition_when_another_rack_can_take_the_rack_local_one():
    """Found by hypothesis: m0 leaves with a-5 (on r1 and r2).  The locality flow first gives it to r1,
    whose four members each own one partition and have no room; r2's m1 has the extra slot, so a-5 goes
    there and nobody on r1 gives anything up (uniform moves nothing either)."""
    ppt = {"a": 6}
    partition_racks = {"a": [frozenset()] * 5 + [frozenset({"r1", "r2"})]}
    racks = {"m0": "r1", "m1": "r2", "m2": "r1", "m3": "r1", "m4": "r1", "m5": "r1"}
    members = {m: AssignmentMember(m, {"a"}, rack_id=rack) for m, rack in racks.items()}
    settled = with_current(members, rack_aware.assign(members, ppt, partition_racks))
    assert settled["m0"].current_partitions == {TP("a", 5)}
    del settled["m0"]
    result = rack_aware.assign(settled, ppt, partition_racks)
    assert result["m1"] == {TP("a", 0), TP("a", 5)}
    assert _moved({m: s.current_partitions for m, s in settled.items()}, result) == 0
