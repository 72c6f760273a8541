"""Fixtures of Kafka's assignor tests, rebuilt for kgroup (imported by the ported tests, holds none).

Mirrors ``AbstractPartitionAssignorTest`` / ``AbstractStickyAssignorTest``
(clients module, trunk): rack configurations, replica placement over
brokers on racks, consumer racks by index, subscriptions in the protocol
versions the tests build, and ``verifyValidityAndBalance`` (which, for the
cooperative assignor, first runs the follow-up rebalances until nobody
revokes, as ``CooperativeStickyAssignorTest`` overrides it to do).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

from kgroup.assignors import get_assignor
from kgroup.testing.conformance import check_balance, check_cooperative_safety, check_validity, claimed_owners
from kgroup.values import NO_GENERATION, Assignment, Subscription, TopicPartition as TP
from kgroup.wire.sticky_user_data import encode_sticky_user_data

ALL_RACKS = ("a", "b", "c", "d", "e", "f")
#: AbstractPartitionAssignorTest.RackConfig
RACK_CONFIGS = ("NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK")
STICKY_ASSIGNORS = ("sticky", "cooperative-sticky")
#: AbstractStickyAssignorTest.generationId
GENERATION_ID = 1


def racks(count: int) -> list:
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(count)]


def null_racks(count: int) -> list:
    return [None] * count


def replica_racks(count: int, replication_factor: int, broker_racks: Sequence, next_node_index: int) -> list:
    """AbstractPartitionAssignorTest.partitionInfos: partition i on brokers (i + j + next) % brokers."""
    brokers = len(broker_racks)
    return [
        frozenset(
            rack
            for j in range(replication_factor)
            if (rack := broker_racks[(i + j + next_node_index) % brokers]) is not None
        )
        for i in range(count)
    ]


def parse(partitions: str) -> list:
    """"t1-0, t2-3" -> [TP("t1", 0), TP("t2", 3)] (Java's ownedPartitions helper)."""
    if not partitions:
        return []
    out = []
    for item in partitions.split(", "):
        topic, _, partition = item.rpartition("-")
        out.append(TP(topic, int(partition)))
    return out


def sorted_string(partitions: Iterable[TP]) -> str:
    """Java's toSortedString: partition strings sorted as strings."""
    return ", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))


def topic_count(partitions: Iterable[TP], topic: str) -> int:
    return sum(1 for tp in partitions if tp.topic == topic)


def is_fully_balanced(assignment: Mapping) -> bool:
    sizes = [len(parts) for parts in assignment.values()]
    return not sizes or max(sizes) - min(sizes) <= 1


class KafkaAssignorGroup:
    """One test's state: the assignor, topics with replica racks, subscriptions."""

    def __init__(self, assignor_name: str, rack_config: Optional[str] = None) -> None:
        self.name = assignor_name
        self.assignor = get_assignor(assignor_name)
        self.cooperative = assignor_name == "cooperative-sticky"
        self.replication_factor = 2
        self.num_broker_racks = 0
        self.has_consumer_rack = False
        if rack_config is not None:
            # AbstractStickyAssignorTest.initializeRacks
            self.replication_factor = 3
            self.num_broker_racks = 3 if rack_config != "NO_BROKER_RACK" else 0
            self.has_consumer_rack = rack_config != "NO_CONSUMER_RACK"
        self.next_partition_index = 0
        self.partitions_per_topic: dict = {}
        self.partition_racks: dict = {}
        self.subscriptions: dict = {}

    # -- topics ------------------------------------------------------------------------------

    def add_topic(self, topic: str, count: int) -> None:
        """AbstractStickyAssignorTest.partitionInfos (each call shifts replica placement by one)."""
        next_index = self.next_partition_index
        self.next_partition_index += 1
        rack_count, rf = self.num_broker_racks, self.replication_factor
        brokers = rf if rack_count <= 0 else rack_count * rf
        broker_racks = [None if rack_count <= 0 else ALL_RACKS[i % rack_count] for i in range(brokers)]
        self.partitions_per_topic[topic] = count
        self.partition_racks[topic] = replica_racks(count, self.replication_factor, broker_racks, next_index)

    def remove_topic(self, topic: str) -> None:
        del self.partitions_per_topic[topic]
        del self.partition_racks[topic]

    # -- subscriptions -----------------------------------------------------------------------

    def consumer_rack(self, index: int) -> Optional[str]:
        racks_in_use = self.num_broker_racks if self.num_broker_racks > 0 else len(ALL_RACKS)
        return ALL_RACKS[index % racks_in_use] if self.has_consumer_rack else None

    def subscription(self, topics: Sequence[str], index: int) -> Subscription:
        """AbstractStickyAssignorTest.subscription: no owned partitions, DEFAULT_GENERATION."""
        return Subscription(list(topics), rack_id=self.consumer_rack(index))

    def subscription_v2(self, topics: Sequence[str], owned: Sequence[TP], generation_id: int,
                        index: int) -> Subscription:
        """buildSubscriptionV2Above of the concrete test class.

        StickyAssignorTest puts owned partitions and generation in the user
        data and the subscription fields, without a rack;
        CooperativeStickyAssignorTest uses the fields, with the consumer's rack.
        """
        if self.cooperative:
            return Subscription(list(topics), owned_partitions=tuple(owned), generation_id=generation_id,
                                rack_id=self.consumer_rack(index))
        return Subscription(list(topics), owned_partitions=tuple(owned), generation_id=generation_id,
                            user_data=encode_sticky_user_data(owned, generation_id))

    # -- assignment --------------------------------------------------------------------------

    def assign(self, partitions_per_topic: Optional[Mapping] = None) -> dict:
        ppt = self.partitions_per_topic if partitions_per_topic is None else partitions_per_topic
        racks_now = {t: self.partition_racks[t] for t in ppt if t in self.partition_racks}
        result = self.assignor.assign(dict(ppt), dict(self.subscriptions), racks_now)
        return {m: list(a.partitions) for m, a in result.items()}

    def transferring_ownership(self) -> dict:
        """AbstractStickyAssignor.partitionsTransferringOwnership for the current subscriptions.

        The sticky target (eager ``sticky`` on the same input): each partition
        whose current owner (highest generation) is someone else, or that two
        members claim in one generation, mapped to its new owner.
        """
        subs = dict(self.subscriptions)
        target = get_assignor("sticky").assign(dict(self.partitions_per_topic), subs, self.partition_racks)
        owners = claimed_owners(subs)
        return {
            tp: member
            for member, a in target.items()
            for tp in a.partitions
            if tp in owners and (member not in owners[tp] or len(owners[tp]) > 1)
        }

    def verify_validity_and_balance(self, assignment: dict) -> dict:
        """AbstractStickyAssignorTest.verifyValidityAndBalance; cooperative: CooperativeStickyAssignorTest's.

        For the cooperative assignor, while a round revokes something, check
        that nothing revoked is handed to someone else in the same round, let
        members own what they got and rebalance again (at most 4 times, as in
        Java).  Returns the final assignment and leaves the subscriptions as
        the last round's (Java mutates both).
        """
        rebalances = 0
        while self.cooperative:
            as_assignment = {m: Assignment(partitions=tuple(p)) for m, p in assignment.items()}
            check_cooperative_safety(self.subscriptions, as_assignment)
            revoked = any(
                set(sub.owned_partitions) - set(assignment[m]) for m, sub in self.subscriptions.items()
            )
            if not revoked:
                break
            for member, parts in assignment.items():
                old = self.subscriptions[member]
                index = ALL_RACKS.index(old.rack_id) if old.rack_id is not None else -1
                self.subscriptions[member] = self.subscription_v2(old.topics, parts, GENERATION_ID, index)
            assignment = self.assign()
            rebalances += 1
            assert rebalances <= 4
        final = {m: Assignment(partitions=tuple(sorted(p))) for m, p in assignment.items()}
        check_validity(self.partitions_per_topic, self.subscriptions, final)
        check_balance(self.partitions_per_topic, self.subscriptions, final)
        return assignment


def verify_rack_assignment(
    assignor_name: str,
    partitions_per_topic: Mapping[str, int],
    replication_factor: int,
    broker_racks: Sequence,
    consumer_racks: Sequence,
    consumer_topics: Sequence[Sequence[str]],
    owned: Optional[Sequence[str]],
    expected: Sequence[str],
    partitions_with_rack_mismatch: int,
    exact: bool = True,
) -> dict:
    """AbstractPartitionAssignorTest.verifyRackAssignment: consumers consumer0..N, DEFAULT_GENERATION.

    ``exact=False`` (a departure, see docs/conformance/assignors.md): kgroup's
    general path balances with its own moves, so instead of Java's exact
    partitions each consumer must get as many partitions as in Java's
    answer, the result must be valid and balanced, and no more partitions
    may be rack-misaligned than in Java's.
    """
    ppt = dict(partitions_per_topic)
    partition_racks = {}
    next_index = 0
    for topic, count in ppt.items():
        partition_racks[topic] = replica_racks(count, replication_factor, broker_racks, next_index)
        next_index += count
    subs = {}
    for i, topics in enumerate(consumer_topics):
        mine = parse(owned[i]) if owned is not None and i < len(owned) else []
        subs[f"consumer{i}"] = Subscription(list(topics), owned_partitions=tuple(mine),
                                            generation_id=NO_GENERATION, rack_id=consumer_racks[i])
    result = get_assignor(assignor_name).assign(ppt, subs, partition_racks)
    actual = {m: sorted_string(a.partitions) for m, a in result.items()}
    wanted = {f"consumer{i}": e for i, e in enumerate(expected)}
    where = f"rf={replication_factor} brokers={list(broker_racks)} consumers={list(consumer_racks)}"
    if exact:
        assert actual == wanted, where
    else:
        sizes = {m: len(parse(p)) for m, p in actual.items()}
        assert sizes == {m: len(parse(p)) for m, p in wanted.items()}, where
        every = [TP(t, p) for t, n in ppt.items() for p in range(n)]
        if sum(len(parse(p)) for p in expected) < len(every):  # a cooperative round that withholds
            check_validity(ppt, subs, result, may_be_unassigned=every)
        else:
            check_validity(ppt, subs, result)
            check_balance(ppt, subs, result)

    if partitions_with_rack_mismatch >= 0:
        mismatched = [
            tp
            for i, rack in enumerate(consumer_racks)
            if rack is not None
            for tp in result[f"consumer{i}"].partitions
            if rack not in partition_racks[tp.topic][tp.partition]
        ]
        if exact:
            assert len(mismatched) == partitions_with_rack_mismatch, f"rack mismatches {mismatched}"
        else:
            assert len(mismatched) <= partitions_with_rack_mismatch, f"rack mismatches {mismatched}"
    return actual
