"""Regression tests: sticky and cooperative-sticky brought in line with Java's AbstractStickyAssignor.

Each test names the Kafka behaviour it pins down (JIRA, class or test).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from kgroup.assignors import get_assignor
from kgroup.values import Subscription, TopicPartition as TP
from assignors_sticky_helpers import assert_balanced, assert_valid

REPO_ROOT = Path(__file__).resolve().parents[2]
STICKY_NAMES = ["sticky", "cooperative-sticky"]


def topic_counts(partitions) -> dict:
    counts: dict = {}
    for tp in partitions:
        counts[tp.topic] = counts.get(tp.topic, 0) + 1
    return counts


def next_round(subs, result, generation_id):
    """Members rejoin owning exactly what they were assigned."""
    return {
        m: attrs.evolve(s, owned_partitions=result[m].partitions, generation_id=generation_id)
        for m, s in subs.items()
    }


# --- KAFKA-16277: topics spread across members ---------------------------------------------


@pytest.mark.parametrize("name", STICKY_NAMES)
def test_kafka_16277_fresh_group_mixes_topics(name):
    """KAFKA-16277: a fresh 2 x (2 topics x 3 partitions) group gives each member both topics.

    Java's ConstrainedAssignmentBuilder deals the unassigned partitions (topic,
    then partition order) round-robin over the members, so consumer1 gets
    topic1-0, topic1-2, topic2-1 and consumer2 the rest.
    """
    subs = {"consumer1": Subscription(["topic1", "topic2"]), "consumer2": Subscription(["topic1", "topic2"])}
    result = get_assignor(name).assign({"topic1": 3, "topic2": 3}, subs)
    assert result["consumer1"].partitions == (TP("topic1", 0), TP("topic1", 2), TP("topic2", 1))
    assert result["consumer2"].partitions == (TP("topic1", 1), TP("topic2", 0), TP("topic2", 2))


@pytest.mark.parametrize("name", STICKY_NAMES)
def test_kafka_16277_joiner_gets_its_share_of_every_topic(name):
    """KAFKA-16277: the owner trims by partition number then topic, so it keeps half of each topic.

    Scenario of Kafka's AbstractStickyAssignorTest.testTopicBalanceAfterReassignment.
    """
    assignor = get_assignor(name)
    ppt = {"topic1": 12, "topic2": 12}
    topics = ["topic1", "topic2"]
    subs = {"consumer1": Subscription(topics, generation_id=1)}
    result = assignor.assign(ppt, subs)
    subs = next_round(subs, result, 1)
    subs["consumer2"] = Subscription(topics, generation_id=1)
    for generation_id in (2, 3):
        result = assignor.assign(ppt, subs)
        subs = next_round(subs, result, generation_id)
    assert_valid(ppt, subs, result)
    for member in subs:
        assert topic_counts(result[member].partitions) == {"topic1": 6, "topic2": 6}


# --- Rack-aware trimming (AbstractStickyAssignor with RackInfo) ---------------------------


def test_cooperative_revokes_rack_remote_partitions_within_quota():
    """Java's ConstrainedAssignmentBuilder.assignOwnedPartitions keeps only rack-matching owned partitions.

    Both members are within quota but own only rack-remote partitions: Java
    gives them up (an intermediate revocation round under cooperative
    rebalancing) and the next round aligns every partition with its rack.
    """
    ppt = {"t": 4}
    racks = {"t": [frozenset({"r0"}), frozenset({"r1"}), frozenset({"r0"}), frozenset({"r1"})]}
    subs = {
        "a": Subscription(["t"], owned_partitions=[TP("t", 1), TP("t", 3)], generation_id=1, rack_id="r0"),
        "b": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 2)], generation_id=1, rack_id="r1"),
    }
    coop = get_assignor("cooperative-sticky")
    first = coop.assign(ppt, subs, racks)
    assert first["a"].partitions == () and first["b"].partitions == ()  # revoke before the hand-over
    second = coop.assign(ppt, next_round(subs, first, 2), racks)
    assert second["a"].partitions == (TP("t", 0), TP("t", 2))
    assert second["b"].partitions == (TP("t", 1), TP("t", 3))
    # Eager sticky moves them in one round.
    eager = get_assignor("sticky").assign(ppt, subs, racks)
    assert eager == second


def test_sticky_general_path_gives_up_rack_remote_owned_partitions():
    """Java's GeneralAssignmentBuilder.assignOwnedPartitions drops owned partitions whose racks mismatch."""
    ppt = {"t": 2, "u": 1}
    racks = {"t": [frozenset({"r0"}), frozenset({"r1"})], "u": [frozenset({"r0"})]}
    subs = {
        "a": Subscription(["t", "u"], owned_partitions=[TP("t", 1)], generation_id=1, rack_id="r0"),
        "b": Subscription(["t"], owned_partitions=[TP("t", 0)], generation_id=1, rack_id="r1"),
    }
    result = get_assignor("sticky").assign(ppt, subs, racks)
    assert result["a"].partitions == (TP("t", 0), TP("u", 0))
    assert result["b"].partitions == (TP("t", 1),)


# --- Same-generation double claims (partitionsWithMultiplePreviousOwners) ------------------


@pytest.mark.parametrize("general", [False, True], ids=["constrained", "general"])
def test_cooperative_withholds_partition_claimed_twice_in_one_generation(general):
    """Java's AbstractStickyAssignor: a partition in partitionsWithMultiplePreviousOwners is
    transferring ownership, so CooperativeStickyAssignor.adjustAssignment withholds it from
    whichever member it lands on, claimers included, until both claimers have revoked it.
    """
    ppt = {"t": 4, "u": 2} if general else {"t": 4}
    a_topics = ["t", "u"] if general else ["t"]
    subs = {
        "a": Subscription(a_topics, owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=3),
        "b": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 2)], generation_id=3),
    }
    coop = get_assignor("cooperative-sticky")
    first = coop.assign(ppt, subs)
    assigned = {tp for a in first.values() for tp in a.partitions}
    assert TP("t", 0) not in assigned
    assert TP("t", 1) in first["a"].partitions and TP("t", 2) in first["b"].partitions
    second_subs = next_round(subs, first, 4)
    second = coop.assign(ppt, second_subs)
    assert_valid(ppt, second_subs, second)
    assert_balanced(ppt, second_subs, second)
    for member in subs:  # the second round only adds
        assert set(first[member].partitions) <= set(second[member].partitions)


def test_eager_sticky_hands_out_partition_claimed_twice_in_one_generation():
    """Java's eager StickyAssignor: the doubly claimed partition is simply unowned and assigned."""
    ppt = {"t": 4}
    subs = {
        "a": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=3),
        "b": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 2)], generation_id=3),
    }
    result = get_assignor("sticky").assign(ppt, subs)
    assert_valid(ppt, subs, result)
    assert TP("t", 1) in result["a"].partitions and TP("t", 2) in result["b"].partitions


# --- Determinism across PYTHONHASHSEED -----------------------------------------------------

_HASH_SCRIPT = r"""
import json, random
import attrs
from kgroup.assignors import get_assignor
from kgroup.testing.conformance import random_group

out = []
for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
    assignor = get_assignor(name)
    for seed in range(12):
        for racks in (False, True):
            # Mostly differing subscriptions: ties between racks arise in the general path.
            group = random_group(random.Random(seed), max_members=12, max_topics=4, max_partitions=12,
                                 identical=seed % 4 == 0, racks=racks)
            rack_map = group.partition_racks
            first = assignor.assign(group.partitions_per_topic, group.subscriptions, rack_map)
            subs = dict(group.subscriptions)
            subs.pop(sorted(subs)[0])
            subs = {m: attrs.evolve(s, owned_partitions=first[m].partitions, generation_id=1)
                    for m, s in subs.items()}
            second = assignor.assign(group.partitions_per_topic, subs, rack_map)
            for result in (first, second):
                out.append([name, seed, racks,
                            sorted((m, [list(tp) for tp in a.partitions]) for m, a in result.items())])
print(json.dumps(out))
"""


def test_every_assignor_is_independent_of_pythonhashseed():
    """Assignors are pure functions of their input: no set or dict-of-set order leaks into a result.

    Runs range, roundrobin, sticky and cooperative-sticky, with and without
    racks, fresh and after a member leaves, under several hash seeds.
    """
    outputs = {}
    for hash_seed in ("0", "1", "2", "3", "4", "5"):
        proc = subprocess.run(
            [sys.executable, "-c", _HASH_SCRIPT],
            cwd=REPO_ROOT,
            env={"PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            text=True,
            check=True,
        )
        outputs[hash_seed] = json.loads(proc.stdout)
    reference = outputs["0"]
    assert len(reference) == 4 * 12 * 2 * 2
    for hash_seed, output in outputs.items():
        differing = [a[:3] for a, b in zip(reference, output) if a != b]
        assert not differing, f"PYTHONHASHSEED={hash_seed} changes {differing[:5]}"


# --- Upgrade path: eager members (cooperative-sticky + range) among cooperative ones -----


@pytest.mark.parametrize("seed", range(6))
def test_cooperative_sticky_converges_with_eager_members_in_the_group(seed):
    """Kafka's documented upgrade to cooperative-sticky: members listing ("cooperative-sticky",
    "range") run EAGER, revoke everything before rejoining and send no owned partitions (as
    Java's ConsumerCoordinator does), while cooperative members claim what they own.

    Every partition is owned after at most 2 rounds and never by two members at once.
    """
    import random

    rng = random.Random(seed)
    ppt = {f"t{i}": rng.randint(1, 12) for i in range(rng.randint(1, 4))}
    names = sorted(ppt)
    identical = seed % 2 == 0
    members = {}
    for i in range(rng.randint(2, 8)):
        topics = names if identical else rng.sample(names, rng.randint(1, len(names)))
        members[f"m{i}"] = (topics, rng.random() < 0.5)  # (topics, eager?)
    coop = get_assignor("cooperative-sticky")
    owned: dict = {m: () for m in members}
    generation_id = 0
    # A first generation, then a membership change (one leaves, one joins).
    for change in range(2):
        if change == 1:
            members.pop(sorted(members)[0])
            owned = {m: owned[m] for m in members}
            members["new"] = (names, False)
            owned["new"] = ()
        for rounds in range(1, 3):
            subs = {
                m: Subscription(
                    topics, owned_partitions=() if eager else owned[m], generation_id=generation_id
                )
                for m, (topics, eager) in members.items()
            }
            result = coop.assign(ppt, subs)
            new_owned = {m: result[m].partitions for m in members}
            # Never owned twice: a cooperative member keeps what it still owns until it
            # revokes it, so nothing it holds may go to anyone else in the same round.
            holders: dict = {}
            for m, (topics, eager) in members.items():
                still_held = set(new_owned[m]) | (set() if eager else set(owned[m]))
                for tp in still_held:
                    assert tp not in holders, f"{tp} held by {holders[tp]} and {m}"
                    holders[tp] = m
            generation_id += 1
            revoked = any(set(owned[m]) - set(new_owned[m]) for m, (_, eager) in members.items() if not eager)
            owned = new_owned
            if not revoked:
                break
        assert not revoked, "a third round was needed"
        subs = {m: Subscription(topics, owned_partitions=owned[m]) for m, (topics, _) in members.items()}
        assert_valid(ppt, subs, result)  # every subscribed partition owned
        assert_balanced(ppt, subs, result)
