"""A KIP-848 group member as a frozen value, and its reconciliation states.

After Kafka's ConsumerGroupMember and MemberState: every heartbeat or timer
yields a new member value; the group replaces the old one.  Legal moves
between member states are one table, checked by :func:`check_transition`.
"""
from __future__ import annotations

import enum
from typing import Iterable, Optional

import attrs

from kgroup.core.fsm import check_table, report_transition
from kgroup.core.messages import JoinGroupProtocol
from kgroup.errors import IllegalStateTransition
from kgroup.values import TopicPartition

__all__ = ["MemberState", "ConsumerGroupMember", "ClassicMemberMetadata", "LEGAL_PREVIOUS",
           "check_transition"]


class MemberState(enum.Enum):
    # Values are Kafka's MemberState bytes (the ConsumerGroupCurrentMemberAssignment record's State).
    #: Reconciled with the target assignment of its epoch.
    STABLE = 0
    #: Must revoke partitions before it may move to the next epoch.
    UNREVOKED_PARTITIONS = 1
    #: At the target epoch, waiting for partitions their previous owners have not released yet.
    UNRELEASED_PARTITIONS = 2
    #: A state a newer coordinator wrote; the member is fenced unless it owns nothing.
    UNKNOWN = 127

    @property
    def display_name(self) -> str:
        return self.name


M = MemberState

#: target state -> states it may be entered from (Kafka's CurrentAssignmentBuilder.build).
LEGAL_PREVIOUS: dict[MemberState, frozenset] = {
    M.STABLE: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS, M.UNKNOWN}),
    M.UNREVOKED_PARTITIONS: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS}),
    M.UNRELEASED_PARTITIONS: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS,
                                        M.UNKNOWN}),
    # Only a record written by a newer coordinator yields it.
    M.UNKNOWN: frozenset(),
}
check_table(MemberState, LEGAL_PREVIOUS)


def check_transition(member_id: str, previous: MemberState, target: MemberState, report: bool = True) -> None:
    if previous not in LEGAL_PREVIOUS[target]:
        raise IllegalStateTransition(f"consumer group member {member_id}", previous, target)
    if report and previous is not target:
        report_transition(f"consumer group member {member_id}", previous, target)


def _tps(value: Iterable[TopicPartition]) -> frozenset[TopicPartition]:
    return frozenset(tp if type(tp) is TopicPartition else TopicPartition(*tp) for tp in value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(value)))


def _protocols(value: Iterable[JoinGroupProtocol]) -> tuple[JoinGroupProtocol, ...]:
    return tuple(value)


@attrs.frozen
class ClassicMemberMetadata:
    """What a member of the classic protocol brings into a consumer group (Kafka's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata): its session timeout and the protocols
    (assignor name and ConsumerProtocol subscription bytes) of its last JoinGroup."""

    session_timeout_ms: int
    supported_protocols: tuple[JoinGroupProtocol, ...] = attrs.field(converter=_protocols)

    @property
    def protocol_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.supported_protocols)


def _regex(value: Optional[str]) -> Optional[str]:
    # Kafka reads an empty SubscribedTopicRegex as "no regex" (isNotEmpty): one spelling of none.
    return value or None


@attrs.frozen
class ConsumerGroupMember:
    member_id: str
    #: 0 until the member first reaches an epoch; -2 while a static member is temporarily away.
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: Optional[str] = None
    rack_id: Optional[str] = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = attrs.field(default=(), converter=_names)
    #: KIP-848 regex subscription (RE2/J syntax), resolved by the coordinator; None: none.
    subscribed_topic_regex: Optional[str] = attrs.field(default=None, converter=_regex)
    server_assignor: Optional[str] = None
    #: Partitions the member may own at its epoch (Kafka's assignedPartitions).
    assigned_partitions: frozenset[TopicPartition] = attrs.field(default=frozenset(), converter=_tps)
    #: Partitions the member must give up before it moves on (Kafka's partitionsPendingRevocation).
    partitions_pending_revocation: frozenset[TopicPartition] = attrs.field(
        default=frozenset(), converter=_tps)
    #: Set for a member that speaks the classic protocol (JoinGroup / SyncGroup / Heartbeat) inside a
    #: consumer group (KIP-848 online migration); None for a ConsumerGroupHeartbeat member.
    classic_member_metadata: Optional[ClassicMemberMetadata] = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def with_epoch(self, member_epoch: int) -> "ConsumerGroupMember":
        """Kafka's Builder.updateMemberEpoch: the current epoch becomes the previous one."""
        return attrs.evolve(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)

    def owned(self) -> frozenset[TopicPartition]:
        """Everything the member may still hold: assigned plus pending revocation."""
        return self.assigned_partitions | self.partitions_pending_revocation
