"""ConsumerGroup.assert_invariants, the recount that the property tests run after every heartbeat
(consumer_group/group_invariants.py since issue 25's class-size split): a consistent group passes, and
each cache it recounts, once out of step with the members, is named in the violation."""
from __future__ import annotations

import attrs
import pytest

from kgroup.core.consumer_group.group import ConsumerGroup
from kgroup.core.consumer_group.member import ConsumerGroupMember
from kgroup.core.consumer_group.records import ResolvedTopicRegex
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.values import TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def _group() -> ConsumerGroup:
    """Two members of epoch 1, each owning one partition, one static, one subscribing by regex."""
    records: list = []
    group = ConsumerGroup("g", records.append)
    group.set_epochs(1, {"t": 2})
    group.update_member(ConsumerGroupMember("a", member_epoch=1, subscribed_topic_names=("t",),
                                            assigned_partitions=frozenset({T0}), instance_id="i-a"))
    group.update_member(ConsumerGroupMember("b", member_epoch=1, subscribed_topic_regex="t.*",
                                            assigned_partitions=frozenset({T1})))
    group.set_target_assignment(1, {"a": frozenset({T0}), "b": frozenset({T1})})
    group.set_resolved_regex("t.*", ResolvedTopicRegex(frozenset({"t"}), 0))
    return group


def test_a_consistent_group_passes():
    group = _group()
    group.assert_invariants()
    assert group.state.value == "Stable"


@pytest.mark.parametrize("corrupt, violation", [
    (lambda g: g._members.__setitem__("b", attrs.evolve(g.members["b"], assigned_partitions={T0, T1})),
     "owned by both a and b"),
    (lambda g: g._partition_owner.__setitem__(T0, ("a", 7)),
     r"partition epoch of .*'t', partition=0\) is stale"),
    (lambda g: g._partition_owner.__setitem__(TopicPartition("t", 9), ("a", 1)),
     "a partition epoch outlived its owner"),
    (lambda g: g._static_members.__setitem__("i-x", "b"), "static member i-x maps to a stranger"),
    (lambda g: setattr(g, "_classic_member_count", 1), "classic member counts do not match the members"),
    (lambda g: g._resolved_regexes.__setitem__("gone.*", ResolvedTopicRegex(frozenset(), 0)),
     "a resolved regex outlived its last subscriber"),
    (lambda g: setattr(g, "assignment_epoch", 0), "state Stable is stale"),
])
def test_each_cache_out_of_step_with_the_members_is_named(corrupt, violation):
    group = _group()
    corrupt(group)
    with pytest.raises(GroupInvariantViolation, match=violation):
        group.assert_invariants()
