"""One member's step towards the target assignment (Kafka's CurrentAssignmentBuilder).

A partition moves in two steps: its old owner is asked to revoke it (the old
owner stays in UNREVOKED_PARTITIONS at its epoch until a heartbeat no longer
reports it), and only then may the new owner be given it; until that happens
the new owner waits in UNRELEASED_PARTITIONS.  ``partition_epoch`` says who
holds a partition now (the epoch of its owner, -1 when free), which is what
keeps a partition from ever having two owners.
"""
from __future__ import annotations

from typing import AbstractSet, Callable, Optional

import attrs

from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState, check_transition
from kgroup.values import TopicPartition

__all__ = ["FencedMemberEpoch", "reconcile"]

M = MemberState

#: The epoch of a partition's current owner, or -1 when no member holds it.
PartitionEpoch = Callable[[TopicPartition], int]


class FencedMemberEpoch(Exception):
    """The member must give up everything and rejoin (FENCED_MEMBER_EPOCH)."""


def _owns_any(owned: Optional[AbstractSet[TopicPartition]], partitions: AbstractSet[TopicPartition]) -> bool:
    # Unknown ownership (an incremental heartbeat) counts as still owning: revocation needs proof.
    if owned is None:
        return True
    return not owned.isdisjoint(partitions)


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: AbstractSet[TopicPartition],
              partition_epoch: PartitionEpoch,
              owned: Optional[AbstractSet[TopicPartition]], report: bool = True) -> ConsumerGroupMember:
    """The member after one reconciliation step; ``owned`` is what its heartbeat reported (None: not sent).

    ``report=False`` checks the step without reporting it to the transition sinks: for a caller that
    computes the step before deciding to apply it (and reports it with ``check_transition`` then)."""
    state = member.state
    if state is M.STABLE:
        if member.member_epoch == target_epoch:
            return member
        updated = _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    elif state is M.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        updated = _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    elif state is M.UNRELEASED_PARTITIONS:
        updated = _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    else:
        if owned is None or owned:
            raise FencedMemberEpoch(
                f"member {member.member_id} is in an unknown state; "
                "it must abandon its partitions and rejoin")
        updated = _next(member, target_epoch, target_epoch, target, partition_epoch, owned)
    check_transition(member.member_id, state, updated.state, report=report)
    return updated


def _next(member: ConsumerGroupMember, member_epoch: int, target_epoch: int,
          target: AbstractSet[TopicPartition], partition_epoch: PartitionEpoch,
          owned: Optional[AbstractSet[TopicPartition]]) -> ConsumerGroupMember:
    """Kafka's computeNextAssignment."""
    current = member.assigned_partitions
    kept = current & target
    pending_revocation = current - kept
    wanted = target - kept
    unreleased = frozenset(tp for tp in wanted if partition_epoch(tp) != -1)
    pending_assignment = wanted - unreleased
    if pending_revocation and _owns_any(owned, pending_revocation):
        # Stay at the current epoch until the member confirms the revocation.
        return attrs.evolve(member.with_epoch(member_epoch), state=M.UNREVOKED_PARTITIONS,
                            assigned_partitions=kept, partitions_pending_revocation=pending_revocation)
    new_state = M.UNRELEASED_PARTITIONS if unreleased else M.STABLE
    return attrs.evolve(member.with_epoch(target_epoch), state=new_state,
                        assigned_partitions=kept | pending_assignment,
                        partitions_pending_revocation=frozenset())
