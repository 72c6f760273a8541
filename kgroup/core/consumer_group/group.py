"""One KIP-848 consumer group: epochs, members, target assignment, partition epochs, offsets.

After Kafka's ConsumerGroup.  The group epoch counts changes of the group
(joins, leaves, subscription, resolved regex and topic metadata changes); the assignment
epoch is the group epoch the target assignment was computed for.  Every
partition a member holds (assigned or pending revocation) is recorded with
that member's epoch, and recording it for a second member is an invariant
violation: that is the "never two owners" rule.  Every change is emitted as
a record through ``emit`` so a coordinator that takes over rebuilds the group
(:meth:`ConsumerGroup.restore`).  Group states are derived from the members,
as Kafka's maybeUpdateGroupState does, and move through one table.
"""
from __future__ import annotations

import collections
import enum
from typing import Callable, Mapping, Optional

from kgroup.core.consumer_group.group_invariants import check_consumer_group_invariants
from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord, ConsumerGroupRecord,
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone,
    ConsumerGroupTargetAssignmentRecord, PersistedConsumerGroup, ResolvedTopicRegex,
)
from kgroup.core.consumer_group.subscription_changes import topics_with_regexes
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.coordinator_common.records import GroupTombstone, OffsetCommitRecord, OffsetTombstone
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine, TransitionObserver, check_table
from kgroup.core.messages import (
    CONSUMER_PROTOCOL_TYPE, OffsetAndMetadata, OffsetCommitRequest, OffsetFetchRequest,
)
from kgroup.values import TopicPartition

__all__ = ["INITIAL_GROUP_EPOCH", "ConsumerGroup", "ConsumerGroupState", "LEGAL_PREVIOUS"]

E = ErrorCode


class ConsumerGroupState(enum.Enum):
    # Values are Kafka's ConsumerGroupState strings, as ListGroups / ConsumerGroupDescribe carry them.
    EMPTY = "Empty"
    #: The group epoch is ahead of the target assignment.
    ASSIGNING = "Assigning"
    #: The target assignment is current but some member has not reached it.
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def display_name(self) -> str:
        return self.value


S = ConsumerGroupState

#: target state -> states it may be entered from.  The live states are derived from the members
#: after every change, so any live state may follow any other; only a deleted group is Dead.
LEGAL_PREVIOUS: dict[ConsumerGroupState, frozenset] = {
    S.EMPTY: frozenset({S.ASSIGNING, S.RECONCILING, S.STABLE}),
    S.ASSIGNING: frozenset({S.EMPTY, S.RECONCILING, S.STABLE}),
    S.RECONCILING: frozenset({S.EMPTY, S.ASSIGNING, S.STABLE}),
    S.STABLE: frozenset({S.EMPTY, S.ASSIGNING, S.RECONCILING}),
    S.DEAD: frozenset({S.EMPTY, S.DEAD}),
}
check_table(ConsumerGroupState, LEGAL_PREVIOUS)


def _validate_member_epoch(received: int, member: ConsumerGroupMember) -> ErrorCode:
    """Kafka's ConsumerGroup.validateMemberEpoch: a classic member's generation is its member epoch."""
    if received == member.member_epoch:
        return E.NONE
    return E.ILLEGAL_GENERATION if member.uses_classic_protocol else E.STALE_MEMBER_EPOCH


#: A new group's epoch and target-assignment epoch (KAFKA-20268, Kafka 4.4).
INITIAL_GROUP_EPOCH = 1


class ConsumerGroup:
    def __init__(self, group_id: str, emit: Callable[[ConsumerGroupRecord], None],
                 observer: Optional[TransitionObserver] = None) -> None:
        self._group_id = group_id
        self._emit = emit
        self._machine: StateMachine[ConsumerGroupState] = StateMachine(
            f"consumer group {group_id}", S.EMPTY, LEGAL_PREVIOUS, observer)
        # Kafka 4.4 starts a group at epoch 1 with an empty target assignment at epoch 1, so the
        # first computed assignment is epoch 2 (KAFKA-20268: a joining member's epoch must be
        # above 0, which means "joining", and may wait at epoch 1 for the first assignment).
        self.group_epoch = INITIAL_GROUP_EPOCH
        self.assignment_epoch = INITIAL_GROUP_EPOCH
        #: topic -> partition count of the subscribed topics that exist, as last computed.
        self.subscription_metadata: dict[str, int] = {}
        self._members: dict[str, ConsumerGroupMember] = {}
        self._static_members: dict[str, str] = {}
        self._target: dict[str, frozenset[TopicPartition]] = {}
        #: partition -> (owner member id, owner's epoch): Kafka's currentPartitionEpoch.
        self._partition_owner: dict[TopicPartition, tuple[str, int]] = {}
        #: topic -> how many members subscribe to it by name.
        self._subscriber_counts: collections.Counter[str] = collections.Counter()
        #: regex -> how many members subscribe to it (Kafka's subscribedRegularExpressions).
        self._regex_counts: collections.Counter[str] = collections.Counter()
        #: regex -> the topics it resolved to; only regexes some member subscribes to.
        self._resolved_regexes: dict[str, ResolvedTopicRegex] = {}
        self._assignor_counts: collections.Counter[str] = collections.Counter()
        #: Members of the classic protocol, and how many of them support each protocol name (Kafka's
        #: numClassicProtocolMembers / classicProtocolMembersSupportedProtocols).
        self._classic_member_count = 0
        self._classic_protocol_counts: collections.Counter[str] = collections.Counter()
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}

    # -- queries -------------------------------------------------------------------

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def state(self) -> ConsumerGroupState:
        return self._machine.state

    def is_(self, state: ConsumerGroupState) -> bool:
        return self._machine.state is state

    @property
    def members(self) -> Mapping[str, ConsumerGroupMember]:
        return self._members

    @property
    def static_members(self) -> Mapping[str, str]:
        return self._static_members

    def static_member(self, instance_id: str) -> Optional[ConsumerGroupMember]:
        member_id = self._static_members.get(instance_id)
        return None if member_id is None else self._members[member_id]

    @property
    def target_assignment(self) -> Mapping[str, frozenset[TopicPartition]]:
        return self._target

    def target_of(self, member_id: str) -> frozenset[TopicPartition]:
        return self._target.get(member_id, frozenset())

    @property
    def offsets(self) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return self._offsets

    def partition_epoch(self, tp: TopicPartition) -> int:
        owner = self._partition_owner.get(tp)
        return -1 if owner is None else owner[1]

    def partition_owner(self, tp: TopicPartition) -> Optional[str]:
        owner = self._partition_owner.get(tp)
        return None if owner is None else owner[0]

    @property
    def classic_member_count(self) -> int:
        return self._classic_member_count

    @property
    def classic_members_supported_protocols(self) -> Mapping[str, int]:
        """protocol name -> how many classic members support it (Kafka's classicMembersSupportedProtocols)."""
        return self._classic_protocol_counts

    def supports_classic_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        """Kafka's ConsumerGroup.supportsClassicProtocols: a classic member may join with the consumer
        protocol type and a protocol every classic member already in the group supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if not self._members:
            return bool(protocol_names)
        classic = self._classic_member_count
        return any(self._classic_protocol_counts[name] == classic for name in protocol_names)

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept: ``member_id`` is the one consumer-protocol member."""
        member = self._members.get(member_id)
        return (member is not None and not member.uses_classic_protocol
                and self._classic_member_count == len(self._members) - 1)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: a partition of the member's target is still held by
        another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        return any(tp not in member.assigned_partitions and self.partition_epoch(tp) != -1
                   for tp in self.target_of(member.member_id))

    def subscribed_topics(self) -> frozenset[str]:
        """Topics some member subscribes to, by name or through a resolved regex (what one member's
        change would make of them: :mod:`.subscription_changes`)."""
        return topics_with_regexes(frozenset(self._subscriber_counts), self._regex_counts,
                                   self._resolved_regexes)

    @property
    def topic_subscriber_counts(self) -> Mapping[str, int]:
        """topic -> how many members subscribe to it by name."""
        return self._subscriber_counts

    @property
    def regex_counts(self) -> Mapping[str, int]:
        """regex -> how many members subscribe to it."""
        return self._regex_counts

    @property
    def resolved_regexes(self) -> Mapping[str, ResolvedTopicRegex]:
        return self._resolved_regexes

    def member_topics(self, member: ConsumerGroupMember,
                      resolved: Optional[Mapping[str, ResolvedTopicRegex]] = None) -> frozenset[str]:
        """What ``member`` subscribes to: its topic names plus what its regex resolved to (Kafka's
        TargetAssignmentBuilder with resolved regular expressions)."""
        regex = member.subscribed_topic_regex
        resolution = (self._resolved_regexes if resolved is None else resolved).get(regex or "")
        if resolution is None:
            return frozenset(member.subscribed_topic_names)
        return frozenset(member.subscribed_topic_names) | resolution.topics

    def preferred_assignor(self, default: str) -> str:
        """Kafka's preferredServerAssignor: the name most members ask for, else the default."""
        if not self._assignor_counts:
            return default
        return max(sorted(self._assignor_counts), key=lambda name: self._assignor_counts[name])

    def header_record(self) -> ConsumerGroupMetadataRecord:
        return ConsumerGroupMetadataRecord(self._group_id, self.group_epoch, self.assignment_epoch,
                                           tuple(sorted(self.subscription_metadata.items())))

    def persisted(self) -> PersistedConsumerGroup:
        return PersistedConsumerGroup(self.header_record(), dict(self._members), dict(self._target),
                                      dict(self._resolved_regexes))

    def creation_records(self) -> list[ConsumerGroupRecord]:
        """Kafka's createConsumerGroupRecords: the records that create this group as it is (written when
        a classic group is converted into it)."""
        records: list[ConsumerGroupRecord] = [self.header_record()]
        records.extend(ConsumerGroupMemberRecord(self._group_id, m) for m in self._members.values())
        records.extend(ConsumerGroupTargetAssignmentRecord(self._group_id, mid, partitions)
                       for mid, partitions in self._target.items())
        return records

    def tombstone_records(self) -> list[ConsumerGroupRecord]:
        """Kafka's createGroupTombstoneRecords for a consumer group converted to a classic one: every
        member and its target go (the classic header written after them makes the id classic again);
        offsets stay with the id."""
        return [ConsumerGroupMemberTombstone(self._group_id, mid) for mid in self._members]

    # -- changes (each emits the record that persists it) -----------------------------

    def set_epochs(self, group_epoch: int, subscription_metadata: Mapping[str, int]) -> None:
        self.group_epoch = group_epoch
        self.subscription_metadata = dict(subscription_metadata)
        self._emit(self.header_record())
        self._update_state()

    def set_target_assignment(self, assignment_epoch: int,
                              assignment: Mapping[str, frozenset[TopicPartition]]) -> None:
        """Kafka's TargetAssignmentBuilder result: only changed members are written."""
        for member_id, partitions in assignment.items():
            if self._target.get(member_id) != partitions:
                self._target[member_id] = partitions
                self._emit(ConsumerGroupTargetAssignmentRecord(self._group_id, member_id, partitions))
        self.assignment_epoch = assignment_epoch
        self._emit(self.header_record())
        self._update_state()

    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self._members.get(member.member_id)
        if old == member:
            return
        self._apply_member(old, member)
        self._emit(ConsumerGroupMemberRecord(self._group_id, member))
        self._drop_unsubscribed_regex(old)
        self._update_state()

    def remove_member(self, member_id: str, *, keep_regex: bool = False) -> ConsumerGroupMember:
        """``keep_regex``: the member's successor takes its regex over (a static member's replacement)."""
        old = self._members[member_id]
        self._apply_member(old, None)
        self._target.pop(member_id, None)
        self._emit(ConsumerGroupMemberTombstone(self._group_id, member_id))
        if not keep_regex:
            self._drop_unsubscribed_regex(old)
        self._update_state()
        return old

    def set_resolved_regex(self, regex: str, resolved: ResolvedTopicRegex) -> None:
        """A subscribed regex resolved (again): Kafka's ConsumerGroupRegularExpression record."""
        if regex not in self._regex_counts:
            raise GroupInvariantViolation(self._group_id, f"regex {regex!r} resolved with no subscriber")
        if self._resolved_regexes.get(regex) != resolved:
            self._resolved_regexes[regex] = resolved
            self._emit(ConsumerGroupRegularExpressionRecord(self._group_id, regex, resolved))

    def _drop_unsubscribed_regex(self, old: Optional[ConsumerGroupMember]) -> None:
        """Kafka removes a resolved regex with its last subscriber (a tombstone), KAFKA-17593 [10/N]."""
        regex = None if old is None else old.subscribed_topic_regex
        if regex is not None and regex not in self._regex_counts and regex in self._resolved_regexes:
            del self._resolved_regexes[regex]
            self._emit(ConsumerGroupRegularExpressionTombstone(self._group_id, regex))

    def replace_static_member(self, old_member_id: str, new_member: ConsumerGroupMember) -> None:
        """Kafka's replaceMember: the new incarnation takes the old one's target assignment."""
        target = self._target.get(old_member_id)
        self.remove_member(old_member_id, keep_regex=True)
        self.update_member(new_member)
        if target is not None:
            self._target[new_member.member_id] = target
            self._emit(ConsumerGroupTargetAssignmentRecord(self._group_id, new_member.member_id, target))

    # -- offsets -------------------------------------------------------------------------

    def validate_offset_commit(self, req: OffsetCommitRequest) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit: the member epoch, not a generation, is checked."""
        if req.generation_id < 0 and not self._members:
            # An admin client or a consumer without group management: allowed on an empty group.
            return E.NONE
        member = self._members.get(req.member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if req.api_version is not None and req.api_version < 9 and not member.uses_classic_protocol:
            # Members of the consumer protocol must commit with OffsetCommit v9+.
            return E.UNSUPPORTED_VERSION
        return _validate_member_epoch(req.generation_id, member)

    def validate_offset_fetch(self, req: OffsetFetchRequest) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch."""
        if req.member_id is None and req.member_epoch < 0:
            return E.NONE
        member = self._members.get(req.member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return _validate_member_epoch(req.member_epoch, member)

    def commit_offset(self, topic_partition: TopicPartition,
                      committed: OffsetAndMetadata) -> OffsetCommitRecord:
        if self.is_(S.DEAD):
            raise GroupInvariantViolation(self._group_id, "a deleted group stores no offsets")
        self._offsets[topic_partition] = committed
        return OffsetCommitRecord(self._group_id, topic_partition, committed)

    def take_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Offsets a group of the other type left under this group id (the id changed type)."""
        self._offsets.update(offsets)

    def delete_offset(self, topic_partition: TopicPartition) -> Optional[OffsetTombstone]:
        """OffsetDelete: forget one committed offset; the tombstone to write (None if none was stored)."""
        if self._offsets.pop(topic_partition, None) is None:
            return None
        return OffsetTombstone(self._group_id, topic_partition)

    def delete(self) -> list[ConsumerGroupRecord]:
        if self._members:
            raise GroupInvariantViolation(self._group_id, "a group with members cannot be deleted")
        self._machine.transition_to(S.DEAD)
        tombstones: list[ConsumerGroupRecord] = [OffsetTombstone(self._group_id, tp) for tp in self._offsets]
        tombstones.append(GroupTombstone(self._group_id))
        self._offsets = {}
        return tombstones

    def restore(self, persisted: PersistedConsumerGroup,
                offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Rebuild from records (a coordinator taking over the group's partition)."""
        header = persisted.header
        self.group_epoch = header.group_epoch
        self.assignment_epoch = header.assignment_epoch
        self.subscription_metadata = dict(header.subscription_metadata)
        for member in persisted.members.values():
            self._apply_member(None, member)
        self._target = dict(persisted.target_assignment)
        # A resolution whose regex no member holds any more is not kept (its tombstone was lost).
        self._resolved_regexes = {regex: resolved for regex, resolved in persisted.resolved_regexes.items()
                                  if regex in self._regex_counts}
        self._offsets = dict(offsets)
        self._update_state()

    # -- internals -----------------------------------------------------------------

    def _apply_member(self, old: Optional[ConsumerGroupMember], new: Optional[ConsumerGroupMember]) -> None:
        if old is not None:
            for tp in old.owned():
                if self._partition_owner.get(tp, (None,))[0] == old.member_id:
                    del self._partition_owner[tp]
            self._subscriber_counts.subtract(old.subscribed_topic_names)
            if old.subscribed_topic_regex is not None:
                self._regex_counts[old.subscribed_topic_regex] -= 1
            if old.server_assignor is not None:
                self._assignor_counts[old.server_assignor] -= 1
            if old.instance_id is not None and self._static_members.get(old.instance_id) == old.member_id:
                del self._static_members[old.instance_id]
            if old.classic_member_metadata is not None:
                self._classic_member_count -= 1
                self._classic_protocol_counts.subtract(old.classic_member_metadata.protocol_names)
            del self._members[old.member_id]
        if new is not None:
            for tp in new.owned():
                holder = self._partition_owner.get(tp)
                if holder is not None and holder[0] != new.member_id:
                    # Kafka's addPartitionEpochs throws IllegalStateException here.
                    raise GroupInvariantViolation(
                        self._group_id, f"{tp} given to {new.member_id} at epoch {new.member_epoch} while "
                                        f"{holder[0]} still owns it at epoch {holder[1]}")
                self._partition_owner[tp] = (new.member_id, new.member_epoch)
            self._subscriber_counts.update(new.subscribed_topic_names)
            if new.subscribed_topic_regex is not None:
                self._regex_counts[new.subscribed_topic_regex] += 1
            if new.server_assignor is not None:
                self._assignor_counts[new.server_assignor] += 1
            if new.instance_id is not None:
                self._static_members[new.instance_id] = new.member_id
            if new.classic_member_metadata is not None:
                self._classic_member_count += 1
                self._classic_protocol_counts.update(new.classic_member_metadata.protocol_names)
            self._members[new.member_id] = new
        self._subscriber_counts = +self._subscriber_counts  # drop topics nobody subscribes any more
        self._regex_counts = +self._regex_counts
        self._assignor_counts = +self._assignor_counts
        self._classic_protocol_counts = +self._classic_protocol_counts

    def _derived_state(self) -> ConsumerGroupState:
        """Kafka's ConsumerGroup.maybeUpdateGroupState."""
        if not self._members:
            return S.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return S.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self._members.values()):
            return S.RECONCILING
        return S.STABLE

    def _update_state(self) -> None:
        if self.is_(S.DEAD):
            return
        target = self._derived_state()
        if target is not self._machine.state:
            self._machine.transition_to(target)

    def assert_invariants(self) -> None:
        """Recount what the counters and maps cache (:mod:`.group_invariants`); O(partitions), for tests."""
        derived = None if self.is_(S.DEAD) else self._derived_state()
        check_consumer_group_invariants(self, self._partition_owner, self._classic_protocol_counts, derived)
