"""The conformance kit: built-in assignors pass it, broken ones are caught.

The throwaway assignors below are deliberately small: a correct sticky
reference (for identical subscriptions) proves the kit raises no false
alarms, and each broken variant proves one check bites.
"""
from __future__ import annotations

import random

import pytest

from kgroup.assignors import RebalanceProtocol, get_assignor
from kgroup.assignors.base import Assignor
from kgroup.errors import ConfigError, KGroupError
from kgroup.testing.conformance import (
    AssignorProperties,
    Balance,
    ConformanceError,
    check_assignor,
    check_balance,
    check_convergence,
    check_cooperative_safety,
    check_stickiness,
    check_topic_balance,
    check_validity,
    claimed_owners,
    minimal_moves,
    properties_of,
    random_group,
)
from kgroup.values import Assignment, Subscription, TopicPartition

TP = TopicPartition


def _sub(*topics, owned=(), generation_id=-1):
    return Subscription(topics=topics, owned_partitions=owned, generation_id=generation_id)


def _asg(**members):
    return {m: Assignment(partitions=[TP(t, p) for t, p in tps]) for m, tps in members.items()}


# ---------------------------------------------------------------------------
# Throwaway assignors.


class ReferenceSticky(Assignor):
    """Keeps owned partitions up to a balanced quota, gives the rest to the least loaded."""

    name = "test-reference-sticky"
    conformance_properties = AssignorProperties(balance=Balance.IDENTICAL, sticky=True)
    honour_owned = True

    def target(self, partitions_per_topic, subscriptions):
        members = sorted(subscriptions)
        topics_of = {m: {t for t in subscriptions[m].topics if t in partitions_per_topic} for m in members}
        partitions = sorted(
            TP(t, p) for t in set().union(set(), *topics_of.values()) for p in range(partitions_per_topic[t])
        )
        owners = claimed_owners(subscriptions) if self.honour_owned else {}
        owned = {m: [] for m in members}
        for tp, claimants in owners.items():
            (member,) = sorted(claimants)[:1]
            if tp.topic in topics_of[member] and tp.partition < partitions_per_topic[tp.topic]:
                owned[member].append(tp)
        floor_quota, extra = divmod(len(partitions), max(1, len(members)))
        result = {m: [] for m in members}
        for rank, member in enumerate(sorted(members, key=lambda m: (-len(owned[m]), m))):
            quota = floor_quota + (1 if rank < extra else 0)
            result[member] = sorted(owned[member])[:quota]
        taken = {tp for tps in result.values() for tp in tps}
        for tp in partitions:
            if tp not in taken:
                candidates = [m for m in members if tp.topic in topics_of[m]]
                result[min(candidates, key=lambda m: (len(result[m]), m))].append(tp)
        return result

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        target = self.target(partitions_per_topic, subscriptions)
        return {m: Assignment(partitions=tps) for m, tps in target.items()}


class ReferenceCooperative(ReferenceSticky):
    """KIP-429 on top of the reference: withhold what another member still owns."""

    name = "test-reference-cooperative"
    supported_protocols = (RebalanceProtocol.COOPERATIVE,)
    conformance_properties = AssignorProperties(balance=Balance.IDENTICAL, sticky=True, cooperative=True)

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        target = self.target(partitions_per_topic, subscriptions)
        owners = claimed_owners(subscriptions)
        return {
            m: Assignment(partitions=[tp for tp in tps if m in owners.get(tp, {m})])
            for m, tps in target.items()
        }


class DropsPartition(ReferenceSticky):
    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = super().assign(partitions_per_topic, subscriptions)
        heaviest = max(sorted(result), key=lambda m: len(result[m].partitions))
        result[heaviest] = Assignment(partitions=result[heaviest].partitions[1:])
        return result


class DuplicatesPartition(ReferenceSticky):
    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = super().assign(partitions_per_topic, subscriptions)
        for giver in sorted(result):
            for tp in result[giver].partitions:
                for taker in sorted(result):
                    if taker != giver and tp.topic in subscriptions[taker].topics:
                        result[taker] = Assignment(partitions=result[taker].partitions + (tp,))
                        return result
        return result


class AssignsUnsubscribedTopic(ReferenceSticky):
    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = super().assign(partitions_per_topic, subscriptions)
        for member in sorted(result):
            for topic in sorted(partitions_per_topic):
                if topic not in subscriptions[member].topics:
                    result[member] = Assignment(partitions=result[member].partitions + (TP(topic, 0),))
                    return result
        return result


class ForgetsMember(ReferenceSticky):
    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = super().assign(partitions_per_topic, subscriptions)
        del result[sorted(result)[-1]]
        return result


class AllToOne(ReferenceSticky):
    """Valid, but the first subscriber of a topic takes all of it."""

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = {m: [] for m in subscriptions}
        for topic in sorted(partitions_per_topic):
            subscribers = sorted(m for m, s in subscriptions.items() if topic in s.topics)
            if subscribers:
                result[subscribers[0]].extend(TP(topic, p) for p in range(partitions_per_topic[topic]))
        return {m: Assignment(partitions=tps) for m, tps in result.items()}


class IgnoresOwned(ReferenceSticky):
    """Balanced but forgetful: claims to be sticky, reassigns from scratch."""

    honour_owned = False


class MovesInSameRound(ReferenceSticky):
    """Declares COOPERATIVE but hands partitions straight to their new owner."""

    supported_protocols = (RebalanceProtocol.COOPERATIVE,)
    conformance_properties = None  # cooperative inferred from supported_protocols


class KeepsEverything(ReferenceCooperative):
    """Cooperatively safe, but never takes anything away, so a joiner stays empty."""

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        owners = claimed_owners(subscriptions)
        result = {m: [tp for tp in s.owned_partitions if owners[tp] == {m}] for m, s in subscriptions.items()}
        taken = {tp for tps in result.values() for tp in tps}
        for topic in sorted(partitions_per_topic):
            for p in range(partitions_per_topic[topic]):
                candidates = sorted(m for m, s in subscriptions.items() if topic in s.topics)
                if TP(topic, p) not in taken and candidates:
                    result[min(candidates, key=lambda m: (len(result[m]), m))].append(TP(topic, p))
        return {m: Assignment(partitions=tps) for m, tps in result.items()}


class RevokesEveryRound(ReferenceCooperative):
    """Cooperatively safe, but withholds one owned partition in every round."""

    def assign(self, partitions_per_topic, subscriptions, partition_racks=None):
        result = super().assign(partitions_per_topic, subscriptions)
        for member in sorted(result):
            owned = set(subscriptions[member].owned_partitions)
            kept = [tp for tp in result[member].partitions if tp in owned]
            if kept:
                result[member] = Assignment(
                    partitions=[tp for tp in result[member].partitions if tp != kept[0]])
                break
        return result


# ---------------------------------------------------------------------------
# The built-in assignors pass; the kit is deterministic.


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_builtin_assignors_pass(name):
    report = check_assignor(get_assignor(name), seed=0, rounds=20)
    assert report.assignor == name
    assert report.checks["validity"] > 0
    if name in ("sticky", "cooperative-sticky"):
        assert report.checks["balance"] > 0 and report.checks["stickiness"] > 0
    if name == "cooperative-sticky":
        assert report.checks["cooperative-safety"] > 0 and report.checks["convergence"] > 0
    if name == "range":
        assert report.checks["topic-balance"] > 0


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_builtin_sticky_assignors_pass_larger_groups(name):
    report = check_assignor(get_assignor(name), seed=7, rounds=5, max_members=40, max_topics=6,
                            max_partitions=60)
    assert report.moves_checked > 0


@pytest.mark.parametrize("assignor", [ReferenceSticky(), ReferenceCooperative()], ids=lambda a: a.name)
def test_reference_assignors_pass(assignor):
    # The references are only exact for identical subscriptions.
    report = check_assignor(assignor, seed=3, rounds=30, identical=True)
    assert report.checks["stickiness"] > 0
    assert report.moves_checked > 0  # joins did move partitions, and no more than needed


def test_same_seed_same_report_and_groups():
    first = check_assignor(ReferenceCooperative(), seed=11, rounds=5, identical=True)
    again = check_assignor(ReferenceCooperative(), seed=11, rounds=5, identical=True)
    assert first == again
    assert random_group(random.Random(5)) == random_group(random.Random(5))
    assert random_group(random.Random(5)) != random_group(random.Random(6))


# ---------------------------------------------------------------------------
# Each broken assignor is caught by the check meant for it.


@pytest.mark.parametrize(
    "assignor, violation",
    [
        (DropsPartition(), "unassigned-partition"),
        (DuplicatesPartition(), "duplicate-partition"),
        (AssignsUnsubscribedTopic(), "unsubscribed-topic"),
        (ForgetsMember(), "missing-member"),
        (AllToOne(), "imbalance"),
        (IgnoresOwned(), "excess-movement"),
        (MovesInSameRound(), "cooperative-unsafe"),
        (KeepsEverything(), "imbalance"),
        (RevokesEveryRound(), "not-converged"),
    ],
    ids=lambda x: type(x).__name__ if isinstance(x, Assignor) else x,
)
def test_broken_assignor_is_caught(assignor, violation):
    with pytest.raises(ConformanceError) as caught:
        check_assignor(assignor, seed=1, rounds=30)
    assert caught.value.violation == violation
    assert "seed=1 round=" in str(caught.value)


def test_full_balance_catches_movable_imbalance_with_differing_subscriptions():
    with pytest.raises(ConformanceError) as caught:
        check_assignor(AllToOne(), seed=2, rounds=30, balance=Balance.FULL, sticky=False)
    assert caught.value.violation in ("imbalance", "movable-imbalance")


def test_per_topic_balance_catches_all_to_one():
    with pytest.raises(ConformanceError) as caught:
        check_assignor(AllToOne(), seed=2, rounds=30, balance=Balance.PER_TOPIC, sticky=False)
    assert caught.value.violation == "topic-imbalance"


def test_cooperative_checks_only_when_cooperative():
    # The same-round mover is a fine eager sticky assignor.
    report = check_assignor(MovesInSameRound(), seed=1, rounds=10, cooperative=False, sticky=True)
    assert "cooperative-safety" not in report.checks


# ---------------------------------------------------------------------------
# The individual checks on hand-made inputs.


def test_conformance_error_is_an_assertion_and_a_kgroup_error():
    error = ConformanceError("imbalance", "x")
    assert isinstance(error, AssertionError) and isinstance(error, KGroupError)
    assert str(error) == "imbalance: x"


PP = {"a": 2, "b": 1}
SUBS = {"m1": _sub("a", "b"), "m2": _sub("a")}


def test_validity_accepts_a_valid_assignment():
    check_validity(PP, SUBS, _asg(m1=[("a", 0), ("b", 0)], m2=[("a", 1)]))


@pytest.mark.parametrize(
    "assignment, violation, named",
    [
        (_asg(m1=[("a", 0), ("b", 0), ("a", 1)]), "missing-member", "m2"),
        (_asg(m1=[("a", 0), ("b", 0)], m2=[("a", 1)], m3=[]), "unknown-member", "m3"),
        (_asg(m1=[("a", 0), ("b", 0)], m2=[("a", 1), ("b", 0)]), "unsubscribed-topic", "b-0"),
        (_asg(m1=[("a", 0), ("b", 0), ("a", 1)], m2=[("a", 1)]), "duplicate-partition", "a-1"),
        (_asg(m1=[("a", 0), ("b", 0)], m2=[]), "unassigned-partition", "a-1"),
        (_asg(m1=[("a", 0), ("b", 0)], m2=[("a", 1), ("a", 2)]), "unknown-partition", "a-2"),
        ({"m1": Assignment(), "m2": [("a", 0)]}, "malformed-result", "m2"),
    ],
)
def test_validity_names_each_violation(assignment, violation, named):
    with pytest.raises(ConformanceError) as caught:
        check_validity(PP, SUBS, assignment)
    assert caught.value.violation == violation
    assert named in str(caught.value)


def test_validity_allows_withheld_partitions():
    check_validity(PP, SUBS, _asg(m1=[("a", 0), ("b", 0)], m2=[]), may_be_unassigned=[TP("a", 1)])


def test_validity_ignores_deleted_topics():
    check_validity({"a": 1}, {"m1": _sub("a", "gone")}, _asg(m1=[("a", 0)]))


def test_balance_identical_subscriptions():
    subs = {"m1": _sub("a"), "m2": _sub("a"), "m3": _sub("a")}
    check_balance({"a": 4}, subs, _asg(m1=[("a", 0), ("a", 1)], m2=[("a", 2)], m3=[("a", 3)]))
    with pytest.raises(ConformanceError, match="imbalance: .*'m1' has 3 partitions and 'm3' has 0"):
        check_balance({"a": 4}, subs, _asg(m1=[("a", 0), ("a", 1), ("a", 2)], m2=[("a", 3)], m3=[]))


def test_balance_differing_subscriptions_uses_the_movable_bound():
    subs = {"m1": _sub("a", "b"), "m2": _sub("b")}
    # m2 cannot take topic a: 3 vs 0 is as balanced as subscriptions allow.
    check_balance({"a": 3, "b": 0}, subs, _asg(m1=[("a", 0), ("a", 1), ("a", 2)], m2=[]))
    with pytest.raises(ConformanceError) as caught:
        check_balance({"a": 3, "b": 1}, subs, _asg(m1=[("a", 0), ("a", 1), ("a", 2), ("b", 0)], m2=[]))
    assert caught.value.violation == "movable-imbalance"
    assert "'m2', subscribed to 'b'" in str(caught.value)


def test_topic_balance():
    subs = {"m1": _sub("a", "b"), "m2": _sub("a", "b")}
    # range's classic shape: 4 vs 2 overall, but each topic split 2/1.
    check_topic_balance({"a": 3, "b": 3}, subs,
                        _asg(m1=[("a", 0), ("a", 1), ("b", 0), ("b", 1)], m2=[("a", 2), ("b", 2)]))
    with pytest.raises(ConformanceError, match="topic-imbalance: topic 'a'"):
        check_topic_balance({"a": 2, "b": 0}, subs, _asg(m1=[("a", 0), ("a", 1)], m2=[]))


def test_minimal_moves_for_join_and_leave():
    subs3 = {m: _sub("a") for m in ("m1", "m2", "m3")}
    previous = {"m1": [TP("a", p) for p in range(5)], "m2": [TP("a", p) for p in range(5, 10)]}
    assert minimal_moves({"a": 10}, subs3, previous) == 3  # newcomer m3's quota: 10 // 3
    subs1 = {"m1": _sub("a")}
    assert minimal_moves({"a": 10}, subs1, previous) == 0  # m2 left: nothing of m1's moves


def test_stickiness_counts_moves_against_the_bound():
    subs = {m: _sub("a") for m in ("m1", "m2", "m3")}
    before = _asg(m1=[("a", 0), ("a", 1), ("a", 2)], m2=[("a", 3), ("a", 4), ("a", 5)])
    good = _asg(m1=[("a", 0), ("a", 1)], m2=[("a", 3), ("a", 4)], m3=[("a", 2), ("a", 5)])
    assert check_stickiness({"a": 6}, subs, before, good) == 2
    shuffled = _asg(m1=[("a", 3), ("a", 4)], m2=[("a", 0), ("a", 1)], m3=[("a", 2), ("a", 5)])
    with pytest.raises(ConformanceError, match="excess-movement: 6 partition.* needs only 2"):
        check_stickiness({"a": 6}, subs, before, shuffled)


def test_stickiness_after_leave_allows_only_the_leavers_partitions_to_move():
    subs = {m: _sub("a") for m in ("m1", "m2")}
    before = _asg(m1=[("a", 0)], m2=[("a", 1)], m3=[("a", 2)])
    assert check_stickiness({"a": 3}, subs, before, _asg(m1=[("a", 0), ("a", 2)], m2=[("a", 1)])) == 0
    with pytest.raises(ConformanceError, match="excess-movement"):
        check_stickiness({"a": 3}, subs, before, _asg(m1=[("a", 1), ("a", 2)], m2=[("a", 0)]))


def test_stickiness_needs_identical_subscriptions():
    with pytest.raises(ConfigError):
        check_stickiness(PP, SUBS, {}, {})


def test_cooperative_safety_respects_generations():
    subs = {
        "m1": _sub("a", owned=[TP("a", 0)], generation_id=5),
        "m2": _sub("a", owned=[TP("a", 0)], generation_id=3),  # stale claim
        "m3": _sub("a"),
    }
    check_cooperative_safety(subs, _asg(m1=[("a", 0)], m2=[], m3=[]))
    check_cooperative_safety(subs, _asg(m1=[], m2=[], m3=[]))  # withholding is safe
    with pytest.raises(ConformanceError, match=r"cooperative-unsafe: .*a-0 to 'm2' \(owned by \['m1'\]\)"):
        check_cooperative_safety(subs, _asg(m1=[], m2=[("a", 0)], m3=[]))


def test_convergence():
    first = _asg(m1=[("a", 0)], m2=[])
    check_convergence(first, _asg(m1=[("a", 0)], m2=[("a", 1)]))
    with pytest.raises(ConformanceError, match="not-converged: .*a-0 from 'm1'"):
        check_convergence(first, _asg(m1=[], m2=[("a", 0)]))


def test_properties_resolution_order():
    assert properties_of(get_assignor("range")).balance is Balance.PER_TOPIC
    assert properties_of(get_assignor("roundrobin")) == AssignorProperties(balance=Balance.IDENTICAL)
    assert properties_of(get_assignor("cooperative-sticky")).cooperative
    # A declared attribute wins over the name; keywords win over both.
    assert properties_of(ReferenceCooperative()).balance is Balance.IDENTICAL
    assert properties_of(ReferenceCooperative(), sticky=False).sticky is False
    # Unknown third-party: validity only, cooperative from its protocols.
    assert properties_of(MovesInSameRound()) == AssignorProperties(cooperative=True)
