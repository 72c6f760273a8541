"""The read side of a classic group: its fields and the queries over them (split from Group).

:class:`~kgroup.core.coordinator.group.Group` adds every change; the fields are read-only
properties here, so a write from outside fails.
"""
from __future__ import annotations

from typing import AbstractSet, Mapping, Optional

from kgroup.core.coordinator.classic_member import Member, join_key, sync_key
from kgroup.core.coordinator.group_record_book import ChangeObserver, GroupRecordBook
from kgroup.core.coordinator.protocol_support import ProtocolSupport
from kgroup.core.coordinator.records import GroupMetadataRecord
from kgroup.core.coordinator.state import LEGAL_PREVIOUS, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.core.messages import CONSUMER_PROTOCOL_TYPE, OffsetAndMetadata
from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import TopicPartition
from kgroup.wire.consumer_protocol import decode_subscription

S = GroupState


class GroupView:
    """Members, generation, protocol and offsets of one classic group, read-only."""

    def __init__(self, group_id: str, initial: GroupState, on_change: Optional[ChangeObserver]) -> None:
        self._group_id = group_id
        self._fsm = StateMachine(f"group {group_id!r}", initial, LEGAL_PREVIOUS)
        self._previous_state: Optional[GroupState] = None
        self._generation_id = 0
        self._protocol_type: Optional[str] = None
        self._protocol_name: Optional[str] = None
        self._leader_id: Optional[str] = None
        self._members: dict[str, Member] = {}
        self._pending_members: set[str] = set()
        self._static_members: dict[str, str] = {}
        #: Members of the current generation that have not sent SyncGroup yet (Kafka's pendingSyncMembers).
        self._pending_sync_members: set[str] = set()
        self._num_awaiting_join = 0
        self._protocols = ProtocolSupport()
        #: A member joined during the initial delay, which extends it once more (Kafka's newMemberAdded).
        self._new_member_added = False
        self._join_key = join_key(group_id)
        self._sync_key = sync_key(group_id)
        self._records = GroupRecordBook(group_id, on_change)
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}

    # -- read-only views -------------------------------------------------------

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def state(self) -> GroupState:
        return self._fsm.state

    @property
    def previous_state(self) -> Optional[GroupState]:
        return self._previous_state

    @property
    def generation_id(self) -> int:
        return self._generation_id

    @property
    def protocol_type(self) -> Optional[str]:
        return self._protocol_type

    @property
    def protocol_name(self) -> Optional[str]:
        return self._protocol_name

    @property
    def leader_id(self) -> Optional[str]:
        return self._leader_id

    @property
    def members(self) -> Mapping[str, Member]:
        return self._members

    @property
    def pending_members(self) -> AbstractSet[str]:
        return self._pending_members

    @property
    def static_members(self) -> Mapping[str, str]:
        return self._static_members

    @property
    def pending_sync_members(self) -> AbstractSet[str]:
        return self._pending_sync_members

    @property
    def num_awaiting_join(self) -> int:
        return self._num_awaiting_join

    @property
    def supported_protocols(self) -> Mapping[str, int]:
        return self._protocols.counts

    @property
    def record_book(self) -> GroupRecordBook:
        """What the group's records do not describe yet (read by the invariant checker)."""
        return self._records

    @property
    def join_key(self) -> tuple[str, str]:
        """Key of the group's join timer (initial delay or rebalance timeout)."""
        return self._join_key

    @property
    def sync_key(self) -> tuple[str, str]:
        """Key of the group's pending-sync timer."""
        return self._sync_key

    @property
    def offsets(self) -> Mapping[TopicPartition, OffsetAndMetadata]:
        return self._offsets

    # -- queries ---------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self._fsm.state is state

    def can_transition_to(self, target: GroupState) -> bool:
        return self._fsm.can_transition_to(target)

    def header_record(self) -> GroupMetadataRecord:
        return GroupMetadataRecord(
            group_id=self._group_id, state=self.state.value, generation_id=self._generation_id,
            protocol_type=self._protocol_type, protocol_name=self._protocol_name, leader_id=self._leader_id,
        )

    def has_all_members_joined(self) -> bool:
        return len(self._members) == self._num_awaiting_join and not self._pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    def validate_member(self, member_id: str, group_instance_id: Optional[str]) -> ErrorCode:
        """Kafka's ClassicGroup.validateMember: the instance id (if any) must map to this member id."""
        if group_instance_id is not None:
            current = self._static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self._members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def heartbeat(self, member_id: str, group_instance_id: Optional[str],
                  generation_id: int) -> tuple[ErrorCode, Optional[Member]]:
        """Kafka's validateClassicGroupHeartbeat: the answer, and the member whose session the
        heartbeat restarts (None when it is refused).  The hot path: private fields, one call."""
        state = self._fsm.state
        if state is S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        code = self.validate_member(member_id, group_instance_id)
        if code is not ErrorCode.NONE:
            return code, None
        if generation_id != self._generation_id:
            return ErrorCode.ILLEGAL_GENERATION, None
        if state is S.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
        member = self._members[member_id]
        return (ErrorCode.REBALANCE_IN_PROGRESS if state is S.PREPARING_REBALANCE else ErrorCode.NONE), member

    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        if not self._members:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self._protocol_type:
            return False
        return self._protocols.supported_by_all(protocol_names, len(self._members))

    def has_received_sync_from_all_members(self) -> bool:
        return not self._pending_sync_members

    def uses_consumer_protocol(self) -> bool:
        """Kafka's ClassicGroup.usesConsumerGroupProtocol: the protocol type is "consumer"."""
        return self._protocol_type == CONSUMER_PROTOCOL_TYPE

    def subscribed_topics(self) -> Optional[frozenset[str]]:
        """Kafka's ClassicGroup.subscribedTopics: the topics the members' ConsumerProtocol subscriptions
        name, or None when they cannot be read (another protocol type, a new group, no protocol
        selected yet, bytes that do not parse).

        Kafka computes them when a generation starts; kgroup reads the members' current subscriptions,
        which differs only while a rebalance is collecting new ones.
        """
        if not self.uses_consumer_protocol():
            return None
        if not self._members:
            return frozenset()
        protocol = self._protocol_name
        if protocol is None:
            return None
        topics: set[str] = set()
        try:
            for member in self._members.values():
                topics.update(decode_subscription(member.metadata_for(protocol)).topics)
        except InvalidProtocolMetadata:
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's ClassicGroup.isSubscribedToTopic: when the subscriptions cannot be read, a "consumer"
        group counts as subscribed to every topic and any other group to none."""
        topics = self.subscribed_topics()
        return self.uses_consumer_protocol() if topics is None else topic in topics
