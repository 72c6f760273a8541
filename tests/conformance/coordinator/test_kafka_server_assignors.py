"""Kafka's server-side assignor tests (KIP-848) not yet ported in
tests/consumer_group/test_server_assignors.py: RangeAssignorTest and
UniformHeterogeneousAssignmentBuilderTest (group-coordinator, package
org.apache.kafka.coordinator.group.assignor, trunk of October 2024), and TargetAssignmentBuilderTest
(package org.apache.kafka.coordinator.group.modern).

Range is specified exactly, so its expectations are Kafka's maps.  Uniform's choice among equally good
partitions is each implementation's own (tests/consumer_group/test_server_assignors.py, module docstring):
where kgroup's map differs from Kafka's the port asserts what Kafka's expectation fixes (what stays,
balance, who may own what) and kgroup's map, and says which partitions differ.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kgroup.assignors import AssignmentMember, ServerAssignor, get_server_assignor
from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import (
    ConsumerGroupMetadataRecord, ConsumerGroupTargetAssignmentRecord,
)
from kgroup.core.consumer_group.target_assignment import TargetAssignmentBuilder, members_after
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.values import TopicPartition


def tps(spec):
    """``{"t1": [0, 1]}`` -> the partitions (Kafka's mkAssignment)."""
    return frozenset(TopicPartition(topic, p) for topic, parts in spec.items() for p in parts)


def spec(member_id, topics, current=None, instance_id=None):
    return AssignmentMember(member_id, topics, tps(current or {}), instance_id)


def ranged(members, topics):
    return get_server_assignor("range").assign(members, topics)


def uniform(members, topics):
    return get_server_assignor("uniform").assign(members, topics)


# -- RangeAssignorTest -------------------------------------------------------------------------


def test_testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded():
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0], "t2": [0]}),
               "B": spec("B", ["t1", "t2"], {"t1": [1], "t2": [1]}),
               # A new member triggers the reassignment; it gets nothing.
               "C": spec("C", ["t1", "t2"])}
    assert ranged(members, {"t1": 2, "t2": 2}) == {
        "A": tps({"t1": [0], "t2": [0]}), "B": tps({"t1": [1], "t2": [1]}), "C": frozenset()}


def test_testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics():
    # Both topics grew from 3 to 4 partitions.
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 1], "t2": [0, 1]}),
               "B": spec("B", ["t1", "t2"], {"t1": [2], "t2": [2]})}
    assert ranged(members, {"t1": 4, "t2": 4}) == {
        "A": tps({"t1": [0, 1], "t2": [0, 1]}), "B": tps({"t1": [2, 3], "t2": [2, 3]})}


def test_testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics():
    # t1 grew from 3 to 4 partitions and C joined, subscribing t1 only.
    members = {"A": spec("A", ["t1", "t2"], {"t1": [0, 1], "t2": [0, 1]}),
               "B": spec("B", ["t1", "t2"], {"t1": [2], "t2": [2]}),
               "C": spec("C", ["t1"])}
    assert ranged(members, {"t1": 4, "t2": 3}) == {
        "A": tps({"t1": [0, 1], "t2": [0, 1]}), "B": tps({"t1": [2], "t2": [2]}), "C": tps({"t1": [3]})}


def test_testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics():
    # Subscriptions were A: t1, t2 / B: t2 / C: t2, t3; now A: t1 / B: t1, t2, t3 / C: t2.
    members = {"A": spec("A", ["t1"], {"t1": [0, 1, 2], "t2": [0]}),
               "B": spec("B", ["t1", "t2", "t3"], {"t2": [1]}),
               "C": spec("C", ["t2"], {"t2": [2], "t3": [0, 1]})}
    assert ranged(members, {"t1": 3, "t2": 3, "t3": 2}) == {
        "A": tps({"t1": [0, 1]}), "B": tps({"t1": [2], "t2": [0, 1], "t3": [0, 1]}), "C": tps({"t2": [2]})}


# -- UniformHeterogeneousAssignmentBuilderTest -------------------------------------------------


def test_testTwoMembersSubscribedToNonexistentTopics():
    """Kafka's assignor throws PartitionAssignorException (a subscribed topic missing from the
    metadata); kgroup's coordinator passes only existing topics and the assignor gives such members
    nothing (the same departure as RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic,
    docs/conformance/coordinator.md)."""
    members = {"A": spec("A", ["t3"]), "B": spec("B", ["t2"])}
    assert uniform(members, {"t1": 3}) == {"A": frozenset(), "B": frozenset()}


def test_testReassignmentWhenPartitionsAreAddedForTwoMembers():
    # t1 grew 4 -> 6, t2 3 -> 5, t3 2 -> 3; t4 stays at 3.
    members = {"A": spec("A", ["t1", "t3"], {"t1": [0, 1, 2, 3], "t3": [0, 1]}),
               "B": spec("B", ["t1", "t2", "t3", "t4"], {"t2": [0, 1, 2], "t4": [0, 1, 2]})}
    assert uniform(members, {"t1": 6, "t2": 5, "t3": 3, "t4": 3}) == {
        "A": tps({"t1": [0, 1, 2, 3, 4, 5], "t3": [0, 1, 2]}),
        "B": tps({"t2": [0, 1, 2, 3, 4], "t4": [0, 1, 2]})}


def test_testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics():
    """Kafka's map: A t1 {0, 2, 3, 4, 5}; B t1 {1}, t2 {1, 2, 6}; C t2 {0, 3, 4, 5}.  kgroup gives the
    same except that B takes t2-5 and C t2-6 (two new partitions of equal standing, each implementation's
    own order)."""
    # t1 grew 3 -> 6, t2 3 -> 7; A no longer subscribes t2; C joined.
    members = {"A": spec("A", ["t1"], {"t1": [0, 2], "t2": [0]}),
               "B": spec("B", ["t1", "t2"], {"t1": [1], "t2": [1, 2]}),
               "C": spec("C", ["t1", "t2"])}
    result = uniform(members, {"t1": 6, "t2": 7})
    # What Kafka's expectation fixes: A keeps its t1 partitions and takes t1's new ones, B keeps all it
    # may, C gets t2-0 (revoked from A), the sizes are 5, 4, 4.
    assert result["A"] == tps({"t1": [0, 2, 3, 4, 5]})
    assert result["B"] >= tps({"t1": [1], "t2": [1, 2]}) and len(result["B"]) == 4
    assert tps({"t2": [0]}) <= result["C"] and len(result["C"]) == 4
    assert result == {"A": tps({"t1": [0, 2, 3, 4, 5]}), "B": tps({"t1": [1], "t2": [1, 2, 5]}),
                      "C": tps({"t2": [0, 3, 4, 6]})}


def test_testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions():
    """Kafka's map: A t2 {0}, t3 {0, 1}; B t1 {0, 1}, t2 {1}.  Both subscribe the same topics, so kgroup
    takes its homogeneous path (Kafka's test forces the heterogeneous builder): A keeps its lowest three,
    t1 {0, 1}, t2 {0}, and B gets the rest.  Either way A keeps three of its six and B gets three."""
    members = {"A": spec("A", ["t1", "t2", "t3"], {"t1": [0, 1], "t2": [0, 1], "t3": [0, 1]}),
               "B": spec("B", ["t1", "t2", "t3"])}
    result = uniform(members, {"t1": 2, "t2": 2, "t3": 2})
    assert result == {"A": tps({"t1": [0, 1], "t2": [0]}), "B": tps({"t2": [1], "t3": [0, 1]})}


# -- TargetAssignmentBuilderTest (org.apache.kafka.coordinator.group.modern) -----------------------
#
# Kafka's TargetAssignmentBuilderTestContext builds a group's members and targets by hand, runs the
# builder over a mocked assignor, verifies the assignor's input and returns the records to write.  The
# port holds the members and targets in a kgroup ConsumerGroup, runs kgroup's TargetAssignmentBuilder
# over a prepared assignor (which records its input) and stores the result with
# ConsumerGroup.set_target_assignment, whose records are the builder's output in Kafka: one target
# record per member whose target changed, then the header carrying the new assignment epoch (kgroup
# merges Kafka's TargetAssignmentMetadata record into the group's header record).


class PreparedAssignor(ServerAssignor):
    """Kafka's mocked assignor: answers what the test prepared and records what it was given."""

    name = "prepared"

    def __init__(self) -> None:
        self.prepared: dict[str, frozenset[TopicPartition]] = {}
        self.calls: list[dict[str, AssignmentMember]] = []

    def assign(self, members, partitions_per_topic):
        self.calls.append(dict(members))
        return {member_id: self.prepared.get(member_id, frozenset()) for member_id in members}


class BuilderContext:
    """Kafka's TargetAssignmentBuilderTestContext."""

    def __init__(self, group_id: str, group_epoch: int) -> None:
        self.records: list = []
        self.group = ConsumerGroup(group_id, self.records.append)
        self.group_epoch = group_epoch
        self.topics: dict[str, int] = {}
        self.assignor = PreparedAssignor()
        #: member id -> its updated value, None for a member that leaves.
        self.updated: dict[str, Optional[ConsumerGroupMember]] = {}

    def add_topic_metadata(self, topic: str, partitions: int) -> None:
        self.topics[topic] = partitions

    def add_group_member(self, member_id: str, topics, target, instance_id: Optional[str] = None) -> None:
        self.group.update_member(ConsumerGroupMember(member_id, subscribed_topic_names=topics,
                                                     instance_id=instance_id))
        targets = dict(self.group.target_assignment)
        targets[member_id] = tps(target)
        self.group.set_target_assignment(self.group.assignment_epoch, targets)

    def update_member_subscription(self, member_id: str, topics, instance_id: Optional[str] = None,
                                   rack_id: Optional[str] = None) -> None:
        member = self.group.members.get(member_id) or ConsumerGroupMember(member_id)
        self.updated[member_id] = attrs.evolve(
            member, subscribed_topic_names=topics,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id)

    def remove_member_subscription(self, member_id: str) -> None:
        self.updated[member_id] = None

    def prepare_member_assignment(self, member_id: str, assignment) -> None:
        self.assignor.prepared[member_id] = tps(assignment)

    def build(self) -> tuple[dict[str, frozenset[TopicPartition]], list]:
        """The new target and the records storing it; checks the assignor's input as Kafka's verify does."""
        group = self.group
        # A leaving member is removed first (kgroup's manager removes it, target included, before the
        # next assignment); an updated one is stored as the next heartbeat stores it.
        for member_id, member in self.updated.items():
            if member is None:
                group.remove_member(member_id)
        replaced: dict[str, str] = {}
        members = list(group.members.values())
        for member_id, member in self.updated.items():
            if member is None:
                continue
            # A new static member takes over its departed predecessor's target.
            previous = (group.static_members.get(member.instance_id)
                        if member.instance_id is not None else None)
            if previous is not None and previous != member_id:
                replaced[member_id] = previous
            members = members_after(group, member, replaced.get(member_id))

        def current_target(member_id: str) -> frozenset[TopicPartition]:
            return group.target_of(replaced.get(member_id, member_id))

        config = GroupCoordinatorConfig(consumer_group_assignors=("prepared",))
        builder = TargetAssignmentBuilder(config, None, {"prepared": self.assignor})  # type: ignore[arg-type]
        target = builder.build(group, members, current_target, self.topics, self.group_epoch)

        # Kafka's verify(assignor).assign(expected group spec): every member's subscription, rack,
        # instance id and current target (a replacing static member's is its predecessor's).
        assert self.assignor.calls == [{
            m.member_id: AssignmentMember(m.member_id, m.subscribed_topic_names, current_target(m.member_id),
                                          m.instance_id, m.rack_id)
            for m in members}]

        for old_member_id in replaced.values():
            group.remove_member(old_member_id)
        for member in self.updated.values():
            if member is not None:
                group.update_member(member)
        self.records.clear()
        group.set_target_assignment(self.group_epoch, target)
        return target, list(self.records)


def target_record(member_id: str, assignment) -> ConsumerGroupTargetAssignmentRecord:
    return ConsumerGroupTargetAssignmentRecord("my-group", member_id, tps(assignment))


def assert_target_records(records: list, expected: list, assignment_epoch: int = 20) -> None:
    """Kafka's assertions on result.records(): the changed members' targets in any order, then the
    assignment epoch (here the header)."""
    assert len(records) == len(expected) + 1
    assert sorted(records[:-1], key=lambda r: r.member_id) == sorted(expected, key=lambda r: r.member_id)
    header = records[-1]
    assert isinstance(header, ConsumerGroupMetadataRecord)
    assert header.group_id == "my-group" and header.assignment_epoch == assignment_epoch


def test_testCreateMemberSubscriptionSpecImpl():
    """What the assignor is told of a member: subscription (names; a topic that does not exist, zar,
    gets no partitions), rack, instance id, current target."""
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 5)
    context.add_topic_metadata("bar", 5)
    context.update_member_subscription("member-id", ["foo", "bar", "zar"], "instanceId", "rackId")
    context.build()
    assert context.assignor.calls[0]["member-id"] == AssignmentMember(
        "member-id", {"bar", "foo", "zar"}, frozenset(), "instanceId", "rackId")
    # With a current target, it is passed as the member's assignment.
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 5)
    context.add_topic_metadata("bar", 5)
    context.add_group_member("member-id", ["foo", "bar", "zar"], {"foo": [1, 2, 3], "bar": [1, 2, 3]},
                             instance_id="instanceId")
    context.update_member_subscription("member-id", ["foo", "bar", "zar"], rack_id="rackId")
    context.build()
    assert context.assignor.calls[0]["member-id"] == AssignmentMember(
        "member-id", {"bar", "foo", "zar"}, tps({"foo": [1, 2, 3], "bar": [1, 2, 3]}), "instanceId", "rackId")


def build_with(context, expected):
    """The prepared assignor answers ``expected`` (member -> topic -> partitions); build the target."""
    for member_id, assignment in expected.items():
        context.prepare_member_assignment(member_id, assignment)
    return context.build()


def test_testEmpty():
    context = BuilderContext("my-group", 20)
    target, records = context.build()
    assert_target_records(records, [])
    assert target == {}


def two_members_context() -> BuilderContext:
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 6)
    context.add_topic_metadata("bar", 6)
    context.add_group_member("member-1", ["foo", "bar", "zar"], {"foo": [1, 2, 3], "bar": [1, 2, 3]})
    context.add_group_member("member-2", ["foo", "bar", "zar"], {"foo": [4, 5, 6], "bar": [4, 5, 6]})
    return context


def test_testAssignmentHasNotChanged():
    context = two_members_context()
    context.prepare_member_assignment("member-1", {"foo": [1, 2, 3], "bar": [1, 2, 3]})
    context.prepare_member_assignment("member-2", {"foo": [4, 5, 6], "bar": [4, 5, 6]})
    target, records = context.build()
    assert_target_records(records, [])
    assert target == {"member-1": tps({"foo": [1, 2, 3], "bar": [1, 2, 3]}),
                      "member-2": tps({"foo": [4, 5, 6], "bar": [4, 5, 6]})}


def test_testAssignmentSwapped():
    context = two_members_context()
    context.prepare_member_assignment("member-2", {"foo": [1, 2, 3], "bar": [1, 2, 3]})
    context.prepare_member_assignment("member-1", {"foo": [4, 5, 6], "bar": [4, 5, 6]})
    target, records = context.build()
    assert_target_records(records, [target_record("member-1", {"foo": [4, 5, 6], "bar": [4, 5, 6]}),
                                    target_record("member-2", {"foo": [1, 2, 3], "bar": [1, 2, 3]})])
    assert target == {"member-2": tps({"foo": [1, 2, 3], "bar": [1, 2, 3]}),
                      "member-1": tps({"foo": [4, 5, 6], "bar": [4, 5, 6]})}


def test_testNewMember():
    context = two_members_context()
    context.update_member_subscription("member-3", ["foo", "bar", "zar"])
    expected = {"member-1": {"foo": [1, 2], "bar": [1, 2]}, "member-2": {"foo": [3, 4], "bar": [3, 4]},
                "member-3": {"foo": [5, 6], "bar": [5, 6]}}
    target, records = build_with(context, expected)
    assert_target_records(records, [target_record(m, a) for m, a in expected.items()])
    assert target == {m: tps(a) for m, a in expected.items()}


def test_testUpdateMember():
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 6)
    context.add_topic_metadata("bar", 6)
    context.add_group_member("member-1", ["foo", "bar", "zar"], {"foo": [1, 2, 3], "bar": [1, 2]})
    context.add_group_member("member-2", ["foo", "bar", "zar"], {"foo": [4, 5, 6], "bar": [3, 4]})
    context.add_group_member("member-3", ["bar", "zar"], {"bar": [5, 6]})
    context.update_member_subscription("member-3", ["foo", "bar", "zar"], "instance-id-3", "rack-0")
    expected = {"member-1": {"foo": [1, 2], "bar": [1, 2]}, "member-2": {"foo": [3, 4], "bar": [3, 4]},
                "member-3": {"foo": [5, 6], "bar": [5, 6]}}
    target, records = build_with(context, expected)
    assert_target_records(records, [target_record(m, a) for m, a in expected.items()])
    assert target == {m: tps(a) for m, a in expected.items()}


def test_testPartialAssignmentUpdate():
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 6)
    context.add_topic_metadata("bar", 6)
    context.add_group_member("member-1", ["foo", "bar", "zar"], {"foo": [1, 2], "bar": [1, 2]})
    context.add_group_member("member-2", ["foo", "bar", "zar"], {"foo": [3, 4], "bar": [3, 4]})
    context.add_group_member("member-3", ["bar", "zar"], {"foo": [5, 6], "bar": [5, 6]})
    expected = {"member-1": {"foo": [1, 2], "bar": [1, 2]}, "member-2": {"foo": [3, 4, 5], "bar": [3, 4, 5]},
                "member-3": {"foo": [6], "bar": [6]}}
    target, records = build_with(context, expected)
    # Member 1 has no record: its target did not change.
    assert_target_records(records, [target_record(m, expected[m]) for m in ("member-2", "member-3")])
    assert target == {m: tps(a) for m, a in expected.items()}


def test_testDeleteMember():
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 6)
    context.add_topic_metadata("bar", 6)
    context.add_group_member("member-1", ["foo", "bar", "zar"], {"foo": [1, 2], "bar": [1, 2]})
    context.add_group_member("member-2", ["foo", "bar", "zar"], {"foo": [3, 4], "bar": [3, 4]})
    context.add_group_member("member-3", ["foo", "bar", "zar"], {"foo": [5, 6], "bar": [5, 6]})
    context.remove_member_subscription("member-3")
    expected = {"member-1": {"foo": [1, 2, 3], "bar": [1, 2, 3]},
                "member-2": {"foo": [4, 5, 6], "bar": [4, 5, 6]}}
    target, records = build_with(context, expected)
    assert_target_records(records, [target_record(m, a) for m, a in expected.items()])
    assert target == {m: tps(a) for m, a in expected.items()}
    assert "member-3" not in context.group.target_assignment


def test_testReplaceStaticMember():
    context = BuilderContext("my-group", 20)
    context.add_topic_metadata("foo", 6)
    context.add_topic_metadata("bar", 6)
    for index, parts in ((1, [1, 2]), (2, [3, 4]), (3, [5, 6])):
        context.add_group_member(f"member-{index}", ["foo", "bar", "zar"], {"foo": parts, "bar": parts},
                                 instance_id=f"instance-member-{index}")
    # Static member 3 leaves and another member joins with its instance id: kgroup replaces the old
    # incarnation in the same heartbeat (GroupMetadataManager's static-member replacement), so the
    # departed member is not removed first; the builder gives the new one the old one's target.
    context.update_member_subscription("member-3-a", ["foo", "bar", "zar"], "instance-member-3")
    expected = {"member-1": {"foo": [1, 2], "bar": [1, 2]}, "member-2": {"foo": [3, 4], "bar": [3, 4]},
                "member-3-a": {"foo": [5, 6], "bar": [5, 6]}}
    target, records = build_with(context, expected)
    # Only the new member's target is written: the others are unchanged.
    assert_target_records(records, [target_record("member-3-a", expected["member-3-a"])])
    assert target == {m: tps(a) for m, a in expected.items()}
