"""In-memory state of one classic group and its members (Kafka's ClassicGroup).

Counters (members awaiting join, members supporting each protocol) are kept
up to date on every change so the join barrier and the protocol check are
O(1) per request instead of a scan of all members.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Hashable, Optional

from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.coordinator.state import LEGAL_PREVIOUS, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.core.messages import JoinGroupProtocol

TransitionObserver = Callable[[str, GroupState, GroupState], None]


class Member:
    __slots__ = (
        "member_id", "group_instance_id", "client_id", "client_host", "session_timeout_ms",
        "rebalance_timeout_ms", "protocols", "protocol_names", "assignment", "join_key", "sync_key",
        "session_key", "is_new",
    )

    def __init__(self, group_id: str, member_id: str, group_instance_id: Optional[str], client_id: str,
                 client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int,
                 protocols: tuple[JoinGroupProtocol, ...], assignment: bytes = b"") -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocols = protocols
        self.protocol_names = tuple(p.name for p in protocols)
        self.assignment = assignment
        #: Request keys of a parked JoinGroup / SyncGroup (None when not awaiting).
        self.join_key: Optional[Hashable] = None
        self.sync_key: Optional[Hashable] = None
        self.session_key = session_key(group_id, member_id)
        #: Joined but not yet through a completed join: its parked JoinGroup does not keep it
        #: alive, it expires after the new-member join timeout (Kafka's ClassicGroupMember.isNew).
        self.is_new = False

    def metadata_for(self, protocol_name: Optional[str]) -> bytes:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        return b""

    def matches(self, protocols: tuple[JoinGroupProtocol, ...]) -> bool:
        return self.protocols == protocols

    def record(self, group_id: str) -> MemberMetadataRecord:
        return MemberMetadataRecord(
            group_id=group_id, member_id=self.member_id, group_instance_id=self.group_instance_id,
            client_id=self.client_id, client_host=self.client_host,
            session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=self.rebalance_timeout_ms,
            protocols=self.protocols, assignment=self.assignment,
        )


# Timer keys are tuples, not "session-<group>-<member>" strings: ids may contain
# "-", and ("a-b", "c") must not collide with ("a", "b-c").
def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("session", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    """Deadline for every member of a new generation to send SyncGroup (Kafka's classicGroupSyncKey)."""
    return ("sync", group_id)


class Group:
    """Members, generation and protocol of one group; the coordinator drives it."""

    def __init__(self, group_id: str, observer: Optional[TransitionObserver] = None,
                 initial: GroupState = GroupState.Empty) -> None:
        self.group_id = group_id
        self.fsm = StateMachine(f"group {group_id!r}", initial, LEGAL_PREVIOUS)
        self.previous_state: Optional[GroupState] = None
        self.observer = observer
        self.generation_id = 0
        self.protocol_type: Optional[str] = None
        self.protocol_name: Optional[str] = None
        self.leader_id: Optional[str] = None
        self.members: dict[str, Member] = {}
        self.pending_members: set[str] = set()
        self.static_members: dict[str, str] = {}
        #: Members of the current generation that have not sent SyncGroup yet (Kafka's pendingSyncMembers).
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: Counter = Counter()
        #: Initial-delay join: extend while new members arrive (Kafka's InitialDelayedJoin).
        self.new_member_added = False
        self.initial_delay_ms = 0
        self.initial_remaining_ms = 0
        #: Whether the armed join timer is the initial delay (or the rebalance timeout).
        self.join_is_initial = False
        self.join_key = join_key(group_id)
        self.sync_key = sync_key(group_id)
        #: Dirty tracking for record emission.
        self.dirty_members: set[str] = set()
        self.persisted_header: Optional[GroupMetadataRecord] = None
        self.persisted_members: dict[str, MemberMetadataRecord] = {}
        self.offsets: dict = {}

    # -- state ---------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        return self.fsm.state

    def is_(self, state: GroupState) -> bool:
        return self.fsm.state is state

    def transition_to(self, target: GroupState) -> None:
        previous = self.fsm.transition_to(target)
        self.previous_state = previous
        if self.observer is not None:
            self.observer(self.group_id, previous, target)

    def header_record(self) -> GroupMetadataRecord:
        return GroupMetadataRecord(
            group_id=self.group_id, state=self.state.value, generation_id=self.generation_id,
            protocol_type=self.protocol_type, protocol_name=self.protocol_name, leader_id=self.leader_id,
        )

    # -- membership ----------------------------------------------------------

    def add(self, member: Member, join_key: Optional[Hashable]) -> None:
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.set_join_key(member, join_key)
        self.dirty_members.add(member.member_id)

    def remove(self, member_id: str) -> Optional[Member]:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.supported_protocols.subtract(member.protocol_names)
        self.pending_sync_members.discard(member_id)
        if member.join_key is not None:
            self.num_awaiting_join -= 1
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.dirty_members.add(member_id)
        return member

    def set_join_key(self, member: Member, key: Optional[Hashable]) -> None:
        if member.join_key is None and key is not None:
            self.num_awaiting_join += 1
        elif member.join_key is not None and key is None:
            self.num_awaiting_join -= 1
        member.join_key = key

    def update_protocols(self, member: Member, protocols: tuple[JoinGroupProtocol, ...]) -> None:
        self.supported_protocols.subtract(member.protocol_names)
        member.protocols = protocols
        member.protocol_names = tuple(p.name for p in protocols)
        self.supported_protocols.update(member.protocol_names)
        self.dirty_members.add(member.member_id)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def validate_member(self, member_id: str, group_instance_id: Optional[str]) -> ErrorCode:
        """Kafka's ClassicGroup.validateMember: the instance id (if any) must map to this member id."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def is_static_member_fenced(self, member_id: str, group_instance_id: Optional[str]) -> bool:
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    # -- protocols -----------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self.protocol_type:
            return False
        everyone = len(self.members)
        return any(self.supported_protocols[name] == everyone for name in protocol_names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred protocol all members support."""
        everyone = len(self.members)
        candidates = [name for name, count in self.supported_protocols.items() if count == everyone]
        candidate_set = set(candidates)
        votes: Counter = Counter()
        for member in self.members.values():
            for name in member.protocol_names:
                if name in candidate_set:
                    votes[name] += 1
                    break
        # Ties break by the first candidate seen, so the choice is deterministic.
        return max(candidates, key=lambda name: votes[name])

    def replace_static_member(self, instance_id: str, old_id: str, new_member: Member) -> Member:
        """Move a static member to a new member id; the caller fences the old one's requests."""
        old = self.members.pop(old_id)
        self.supported_protocols.subtract(old.protocol_names)
        if old.join_key is not None:
            self.num_awaiting_join -= 1
        new_member.assignment = old.assignment
        self.members[new_member.member_id] = new_member
        self.supported_protocols.update(new_member.protocol_names)
        self.static_members[instance_id] = new_member.member_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_member.member_id)
        if self.leader_id == old_id:
            self.leader_id = new_member.member_id
        self.dirty_members.add(old_id)
        self.dirty_members.add(new_member.member_id)
        return old
