"""The invariants of one consumer group, recounted from its members (split from ConsumerGroup).

O(partitions): for tests (the property tests call it after every heartbeat), not the hot path.
The group hands over the caches no public query exposes whole.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Mapping, Optional

from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.values import TopicPartition

if TYPE_CHECKING:  # the group calls this checker: imported for the types only
    from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState

__all__ = ["check_consumer_group_invariants"]


def check_consumer_group_invariants(group: "ConsumerGroup",
                                    partition_owners: Mapping[TopicPartition, tuple[str, int]],
                                    classic_protocol_counts: Mapping[str, int],
                                    derived_state: Optional["ConsumerGroupState"]) -> None:
    """Partition epochs match the members, and no partition has two owners; the static-member map,
    classic member counts and resolved regexes match the members; the state is the one the members
    give (``derived_state``, None for a deleted group).  Raises GroupInvariantViolation on a mismatch."""
    group_id = group.group_id
    members = group.members
    seen: dict[TopicPartition, str] = {}
    for member in members.values():
        for tp in member.owned():
            if tp in seen:
                raise GroupInvariantViolation(group_id,
                                              f"{tp} owned by both {seen[tp]} and {member.member_id}")
            seen[tp] = member.member_id
            if partition_owners.get(tp) != (member.member_id, member.member_epoch):
                raise GroupInvariantViolation(group_id, f"partition epoch of {tp} is stale")
    if len(seen) != len(partition_owners):
        raise GroupInvariantViolation(group_id, "a partition epoch outlived its owner")
    for instance_id, member_id in group.static_members.items():
        if members.get(member_id) is None or members[member_id].instance_id != instance_id:
            raise GroupInvariantViolation(group_id, f"static member {instance_id} maps to a stranger")
    classic = [m.classic_member_metadata for m in members.values() if m.classic_member_metadata]
    recount = collections.Counter(name for metadata in classic for name in metadata.protocol_names)
    if len(classic) != group.classic_member_count or +recount != classic_protocol_counts:
        raise GroupInvariantViolation(group_id, "classic member counts do not match the members")
    if not group.resolved_regexes.keys() <= group.regex_counts.keys():
        raise GroupInvariantViolation(group_id, "a resolved regex outlived its last subscriber")
    if derived_state is not None and derived_state is not group.state:
        raise GroupInvariantViolation(group_id, f"state {group.state.value} is stale")
