"""The invariants of one classic group, recounted from its members (split from Group).

O(members): for tests (the property tests call it after every request), not the hot path.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.errors import GroupInvariantViolation

if TYPE_CHECKING:  # the group calls this checker: imported for the type only
    from kgroup.core.coordinator.group import Group

S = GroupState


def check_group_invariants(group: "Group") -> None:
    """Recount everything the counters and maps cache; raise GroupInvariantViolation on a mismatch."""
    members_by_id = group.members
    members = members_by_id.values()
    state = group.state

    def check(holds: bool, violation: str) -> None:
        if not holds:
            raise GroupInvariantViolation(group.group_id, violation)

    awaiting = sum(m.join_key is not None for m in members)
    check(group.num_awaiting_join == awaiting,
          f"awaiting-join count {group.num_awaiting_join} but {awaiting} members await a join")
    recount: Counter = Counter(name for m in members for name in m.protocol_names)
    check(+Counter(group.supported_protocols) == recount,
          "supported-protocol counts do not match the members")
    static = {m.group_instance_id: m.member_id for m in members if m.group_instance_id is not None}
    check(group.static_members == static, "static member map does not match the members")
    check(len(static) == sum(m.group_instance_id is not None for m in members),
          "two members share a group instance id")
    check(all(mid == m.member_id for mid, m in members_by_id.items()), "a member is filed under another id")
    check(not group.pending_members & members_by_id.keys(), "a member is also pending")
    check(group.pending_sync_members <= members_by_id.keys(), "a pending sync member is not a member")
    check(not group.pending_sync_members or state in (S.COMPLETING_REBALANCE, S.STABLE),
          f"members owe a SyncGroup in {state.value}")
    if members_by_id:
        check(group.leader_id in members_by_id, f"leader {group.leader_id!r} is not a member")
        check(group.protocol_type is not None, "members but no protocol type")
        check(any(group.supported_protocols[name] == len(members_by_id) for name in recount),
              "no protocol is supported by every member")
    else:
        check(group.leader_id is None, f"leader {group.leader_id!r} of a group without members")
    check(bool(members_by_id) or state not in (S.COMPLETING_REBALANCE, S.STABLE),
          f"{state.value} without members")
    check(not members_by_id or state not in (S.EMPTY, S.DEAD), f"{state.value} with members")
    check(state is S.PREPARING_REBALANCE or awaiting == 0, f"a member awaits a join in {state.value}")
    check(state is S.COMPLETING_REBALANCE or all(m.sync_key is None for m in members),
          f"a member awaits a sync in {state.value}")
    if state is S.DEAD:
        check(not group.offsets and not group.pending_members, "a deleted group keeps offsets or pending ids")
        return
    group.record_book.check(group.header_record(), members_by_id, check)
