"""Server-side assignors (KIP-848), ported from Kafka's org.apache.kafka.coordinator.group.assignor tests:
RangeAssignorTest, OptimizedUniformAssignmentBuilderTest (UniformHomogeneousAssignmentBuilderTest in
Kafka 4) and UniformHeterogeneousAssignmentBuilderTest; each test names its Kafka test.

Range is specified exactly, so its expectations are Kafka's.  Uniform's exact choices are Kafka's
implementation details; its tests assert what Kafka's tests check besides the exact map: every
partition assigned once, to a subscribed member, balance, and what stickiness keeps.
"""
from __future__ import annotations

import itertools

import pytest
from consumer_group_harness import tps
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors import AssignmentMember, get_server_assignor, known_server_assignors
from kgroup.errors import UnknownAssignorError
from kgroup.values import TopicPartition


def uniform(members, topics):
    return get_server_assignor("uniform").assign(members, topics)


def ranged(members, topics):
    return get_server_assignor("range").assign(members, topics)


def spec(member_id, topics, current=None, instance_id=None):
    return AssignmentMember(member_id, topics, tps(current or {}), instance_id)


def assert_valid(result, members, topics):
    """Every partition of a subscribed topic exactly once, and only to a member subscribing it."""
    owners = {}
    for member_id, partitions in result.items():
        for tp in partitions:
            assert tp not in owners, f"{tp} given to {owners[tp]} and {member_id}"
            assert tp.topic in members[member_id].subscribed_topics
            owners[tp] = member_id
    subscribed = {t for m in members.values() for t in m.subscribed_topics if t in topics}
    assert set(owners) == {TopicPartition(t, p) for t in subscribed for p in range(topics[t])}
    assert set(result) == set(members)


def counts(result):
    return sorted(len(p) for p in result.values())


# -- registry ------------------------------------------------------------------------------


def test_registry_knows_uniform_and_range_and_rejects_others():
    assert {"uniform", "range"} <= set(known_server_assignors())
    assert get_server_assignor("uniform").name == "uniform"
    with pytest.raises(UnknownAssignorError):
        get_server_assignor("cooperative-sticky")


# -- range (RangeAssignorTest) ----------------------------------------------------------------


def test_range_one_member_no_topic():
    """RangeAssignorTest.testOneMemberNoTopic."""
    assert ranged({"A": spec("A", [])}, {"t1": 3}) == {"A": frozenset()}


def test_range_one_member_subscribed_to_non_existent_topic():
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic: kgroup gives nothing where Kafka
    raises PartitionAssignorException (the coordinator only passes topics that exist)."""
    assert ranged({"A": spec("A", ["missing"])}, {"t1": 3}) == {"A": frozenset()}


def test_range_first_assignment_two_members_two_topics_same_subscriptions():
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions."""
    members = {"A": spec("A", ["t1", "t3"]), "B": spec("B", ["t1", "t3"])}
    assert ranged(members, {"t1": 3, "t3": 2}) == {"A": tps({"t1": [0, 1], "t3": [0]}),
                                                   "B": tps({"t1": [2], "t3": [1]})}


def test_range_first_assignment_three_members_three_topics_different_subscriptions():
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions."""
    members = {"A": spec("A", ["t1", "t2"]), "B": spec("B", ["t3"]), "C": spec("C", ["t2", "t3"])}
    assert ranged(members, {"t1": 3, "t2": 3, "t3": 2}) == {
        "A": tps({"t1": [0, 1, 2], "t2": [0, 1]}), "B": tps({"t3": [0]}), "C": tps({"t2": [2], "t3": [1]})}


def test_range_first_assignment_num_members_greater_than_num_partitions():
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions."""
    members = {m: spec(m, ["t1", "t3"]) for m in "ABC"}
    assert ranged(members, {"t1": 3, "t3": 2}) == {
        "A": tps({"t1": [0], "t3": [0]}), "B": tps({"t1": [1], "t3": [1]}), "C": tps({"t1": [2]})}


def test_range_static_membership():
    """RangeAssignorTest.testStaticMembership: a static member keeps its ranges under a new member id."""
    topics = {"t1": 3, "t2": 3}
    before = ranged({"A": spec("A", ["t1", "t2"], instance_id="instanceA"),
                     "B": spec("B", ["t1", "t2"], instance_id="instanceB")}, topics)
    after = ranged({"A2": spec("A2", ["t1", "t2"], instance_id="instanceA"),
                    "B": spec("B", ["t1", "t2"], instance_id="instanceB")}, topics)
    assert after["A2"] == before["A"] and after["B"] == before["B"]


def test_range_mixed_static_membership():
    """RangeAssignorTest.testMixedStaticMembership: static members first (by instance id), then dynamic."""
    members = {"A": spec("A", ["t1"], instance_id="instanceA"), "B": spec("B", ["t1"]),
               "C": spec("C", ["t1"], instance_id="instanceC")}
    assert ranged(members, {"t1": 5}) == {"A": tps({"t1": [0, 1]}), "C": tps({"t1": [2, 3]}),
                                          "B": tps({"t1": [4]})}


def test_range_reassignment_when_one_member_removed():
    """RangeAssignorTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 1], "t2": [0, 1]})}
    assert ranged(members, {"t1": 3, "t2": 3}) == {"A": tps({"t1": [0, 1, 2], "t2": [0, 1, 2]})}


# -- uniform, homogeneous (OptimizedUniformAssignmentBuilderTest) ------------------------------


def test_uniform_one_member_no_topic_subscription():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription."""
    assert uniform({"A": spec("A", [])}, {"t1": 3}) == {"A": frozenset()}


def test_uniform_one_member_subscribed_to_nonexistent_topic():
    """OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic (no exception here:
    the coordinator passes only existing topics)."""
    assert uniform({"A": spec("A", ["t2"])}, {"t1": 3}) == {"A": frozenset()}


def test_uniform_first_assignment_two_members_two_topics():
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks."""
    members = {"A": spec("A", ["t1", "t3"]), "B": spec("B", ["t1", "t3"])}
    result = uniform(members, {"t1": 3, "t3": 2})
    assert_valid(result, members, {"t1": 3, "t3": 2})
    assert counts(result) == [2, 3]


def test_uniform_first_assignment_num_members_greater_than_total_num_partitions():
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions."""
    members = {m: spec(m, ["t1", "t3"]) for m in "ABC"}
    result = uniform(members, {"t1": 1, "t3": 1})
    assert_valid(result, members, {"t1": 1, "t3": 1})
    assert counts(result) == [0, 1, 1]


def test_uniform_validity_and_balance_for_large_sample_set():
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet."""
    topics = {f"t{i}": 50 for i in range(1, 51)}
    members = {f"member{i}": spec(f"member{i}", list(topics)) for i in range(1, 51)}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result)[-1] - counts(result)[0] <= 1


def test_uniform_reassignment_given_unbalanced_previous_assignment():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment:
    balance first, and the member over quota keeps what it may."""
    topics = {"t1": 3, "t2": 3}
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 1], "t2": [0, 1, 2]}),
               "B": spec("B", ["t1", "t2"], {"t1": [2]})}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) == [3, 3]
    assert result["B"] >= tps({"t1": [2]}) and result["A"] <= tps({"t1": [0, 1], "t2": [0, 1, 2]})


def test_uniform_reassignment_when_partitions_are_added():
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics."""
    topics = {"t1": 6, "t2": 5}
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 2], "t2": [0]}),
               "B": spec("B", ["t1", "t2"], {"t1": [1], "t2": [1, 2]})}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) == [5, 6]
    # Nothing anyone held moves: the new partitions fill the quotas.
    assert result["A"] >= members["A"].current_partitions and result["B"] >= members["B"].current_partitions


def test_uniform_reassignment_when_one_member_added():
    """OptimizedUniformAssignmentBuilderTest.
    testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    topics = {"t1": 3, "t2": 3}
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 2], "t2": [0]}),
               "B": spec("B", ["t1", "t2"], {"t1": [1], "t2": [1, 2]}), "C": spec("C", ["t1", "t2"])}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) == [2, 2, 2]
    # The newcomer takes one partition from each: the others keep two of their three.
    assert len(result["A"] & members["A"].current_partitions) == 2
    assert len(result["B"] & members["B"].current_partitions) == 2


def test_uniform_member_over_quota_keeps_its_lowest_partitions():
    """kgroup's own rule for which partitions an over-quota member keeps (Kafka keeps whichever its
    hash set yields first): the lowest, both when it gives up one (no sort) and when it gives up
    several (sorted).  Current partitions of a topic that shrank, of a topic nobody subscribes or
    with a negative number are dropped, never kept."""
    topics = {"t1": 4, "t2": 4}
    one_too_many = {"A": spec("A", ["t1", "t2"], {"t1": [3, 1, 0], "t2": [2, 9, -1], "t3": [0]}),
                    "B": spec("B", ["t1", "t2"], {"t1": [2], "t2": [0, 1]}),
                    "C": spec("C", ["t1", "t2"], {"t2": [3]})}
    result = uniform(one_too_many, topics)
    assert_valid(result, one_too_many, topics)
    # 8 partitions, 3 members: quotas 3, 3, 2.  A owns t1-0, t1-1, t1-3, t2-2 and gives up its highest.
    assert result["A"] == tps({"t1": [0, 1, 3]})
    assert result["B"] == tps({"t1": [2], "t2": [0, 1]})
    assert result["C"] == tps({"t2": [2, 3]})

    several_too_many = {"A": spec("A", ["t1", "t2"], {"t1": [3, 2, 1, 0], "t2": [3, 1, 0]}),
                        "B": spec("B", ["t1", "t2"]), "C": spec("C", ["t1", "t2"])}
    result = uniform(several_too_many, topics)
    assert_valid(result, several_too_many, topics)
    assert result["A"] == tps({"t1": [0, 1, 2]})


def test_uniform_heterogeneous_hands_each_partition_to_the_least_loaded_subscriber():
    """kgroup's tie rule on the heterogeneous path (Kafka's order among equals is its own): topics
    with fewer subscribers first, each partition to the least loaded subscriber, the lowest member
    id among equals."""
    topics = {"t1": 2, "t2": 4}
    members = {"A": spec("A", ["t1", "t2"]), "B": spec("B", ["t2"]), "C": spec("C", ["t1", "t2"])}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    # t1 (2 subscribers): A, C.  t2: B (0), A (1, 1, 1: lowest id), B (2, 1, 1), C (2, 2, 1).
    assert result == {"A": tps({"t1": [0], "t2": [1]}), "B": tps({"t2": [0, 2]}),
                      "C": tps({"t1": [1], "t2": [3]})}


def test_uniform_reassignment_when_one_member_removed():
    """OptimizedUniformAssignmentBuilderTest.
    testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics."""
    topics = {"t1": 3, "t2": 3}
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0], "t2": [0]}),
               "B": spec("B", ["t1", "t2"], {"t1": [1], "t2": [1]})}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) == [3, 3]
    assert result["A"] >= members["A"].current_partitions and result["B"] >= members["B"].current_partitions


def test_uniform_reassignment_when_one_subscription_removed():
    """OptimizedUniformAssignmentBuilderTest.
    testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    topics = {"t1": 2, "t2": 2}
    members = {"A": spec("A", ["t2"], {"t1": [0], "t2": [0]}), "B": spec("B", ["t2"], {"t1": [1], "t2": [1]})}
    assert uniform(members, topics) == {"A": tps({"t2": [0]}), "B": tps({"t2": [1]})}


# -- uniform, heterogeneous (UniformHeterogeneousAssignmentBuilderTest) --------------------------


def test_uniform_heterogeneous_two_members_no_topic_subscription():
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersNoTopicSubscription."""
    result = uniform({"A": spec("A", []), "B": spec("B", ["x"])}, {"t1": 3})
    assert result == {"A": frozenset(), "B": frozenset()}


def test_uniform_heterogeneous_first_assignment_two_members_two_topics():
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics."""
    topics = {"t1": 3, "t3": 2}
    members = {"A": spec("A", ["t1", "t3"]), "B": spec("B", ["t3"])}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) in ([1, 4], [2, 3])
    assert len(result["B"]) >= 1


def test_uniform_heterogeneous_reassignment_given_unbalanced_previous_assignment():
    """UniformHeterogeneousAssignmentBuilderTest.
    testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment."""
    topics = {"t1": 3, "t2": 3, "t3": 2}
    members = {"A": spec("A", ["t1"], {"t1": [0, 1]}),
               "B": spec("B", ["t1", "t2", "t3"], {"t1": [2], "t2": [0, 1, 2], "t3": [0, 1]})}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    # A may only take t1 partitions: it gets all three, B keeps the rest.
    assert result["A"] == tps({"t1": [0, 1, 2]}) and result["B"] == tps({"t2": [0, 1, 2], "t3": [0, 1]})


def test_uniform_heterogeneous_one_member_removed():
    """UniformHeterogeneousAssignmentBuilderTest.
    testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics."""
    topics = {"t1": 3, "t2": 3, "t3": 2}
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 1], "t2": [0]}),
               "B": spec("B", ["t1", "t2", "t3"], {"t1": [2], "t3": [0]})}
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    assert counts(result) == [4, 4]
    assert result["A"] >= members["A"].current_partitions


def test_uniform_heterogeneous_member_without_subscriptions():
    """UniformHeterogeneousAssignmentBuilderTest.
    testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions."""
    topics = {"t1": 3}
    members = {"A": spec("A", ["t1"]), "B": spec("B", [])}
    assert uniform(members, topics) == {"A": tps({"t1": [0, 1, 2]}), "B": frozenset()}


# -- properties --------------------------------------------------------------------------------

TOPIC_NAMES = ["t0", "t1", "t2", "t3"]


@st.composite
def groups(draw):
    topics = draw(st.dictionaries(st.sampled_from(TOPIC_NAMES), st.integers(0, 12), min_size=1))
    names = [f"m{i}" for i in range(8)]
    member_ids = draw(st.lists(st.sampled_from(names), min_size=1, max_size=8, unique=True))
    homogeneous = draw(st.booleans())
    shared = draw(st.sets(st.sampled_from(TOPIC_NAMES), min_size=1))
    members = {}
    for member_id in member_ids:
        subscribed = shared if homogeneous else draw(st.sets(st.sampled_from(TOPIC_NAMES)))
        partition = st.builds(TopicPartition, st.sampled_from(TOPIC_NAMES), st.integers(0, 12))
        current = draw(st.sets(partition, max_size=6))
        members[member_id] = AssignmentMember(member_id, subscribed, current)
    return members, topics


def _no_move_improves(result, members):
    for giver, taker in itertools.permutations(result, 2):
        if len(result[giver]) - len(result[taker]) >= 2:
            movable = [tp for tp in result[giver] if tp.topic in members[taker].subscribed_topics]
            assert not movable, (giver, taker, movable)


@settings(max_examples=300, deadline=None)
@given(groups())
def test_uniform_is_valid_and_balanced(group):
    """Validity and balance of every uniform assignment (what Kafka's AssignmentTestUtil checks)."""
    members, topics = group
    result = uniform(members, topics)
    assert_valid(result, members, topics)
    _no_move_improves(result, members)


@settings(max_examples=300, deadline=None)
@given(groups())
def test_range_is_valid(group):
    members, topics = group
    assert_valid(ranged(members, topics), members, topics)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 8))
def test_uniform_homogeneous_join_moves_only_what_balance_needs(partitions, num_members):
    """Stickiness: when a member joins, each old member gives up only what the new quota asks."""
    topics = {"t": partitions}
    members = {f"m{i}": spec(f"m{i}", ["t"]) for i in range(num_members)}
    first = uniform(members, topics)
    members = {m: spec(m, ["t"], {"t": [tp.partition for tp in first[m]]}) for m in members}
    members["new"] = spec("new", ["t"])
    second = uniform(members, topics)
    assert_valid(second, members, topics)
    quota_max = -(-partitions // (num_members + 1))
    for member_id, before in first.items():
        assert len(before - second[member_id]) <= max(len(before) - (partitions // (num_members + 1)), 0)
        assert len(second[member_id]) <= quota_max
