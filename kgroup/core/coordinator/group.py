"""In-memory state of one classic group and its members (Kafka's ClassicGroup / ClassicGroupMember).

The group owns its bookkeeping: members, pending (MEMBER_ID_REQUIRED) members, the static
member map, the members awaiting a JoinGroup or SyncGroup response, the protocol counters,
leader and protocol selection, the generation bump, offsets, and which changes still have to
be written as records.  Every change goes through a method here that keeps those consistent
(as ClassicGroup's add / remove / replaceStaticMember / updateMember / initNextGeneration do)
and refuses one that would break them with :class:`GroupInvariantViolation`; the coordinator
(Kafka's GroupMetadataManager) only holds timers and turns what the group reports into
responses and records.  Attributes are read-only properties, so a write from outside fails.

Counters (members awaiting join, members supporting each protocol) are kept up to date on
every change so the join barrier and the protocol check are O(1) per request instead of a
scan of all members.
"""
from __future__ import annotations

from collections import Counter
from typing import AbstractSet, Callable, Hashable, Mapping, Optional, Union

from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord, MemberTombstone
from kgroup.core.coordinator.state import LEGAL_PREVIOUS, GroupState
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.coordinator_common.records import GroupTombstone, OffsetCommitRecord, OffsetTombstone
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.core.messages import JoinGroupProtocol, OffsetAndMetadata
from kgroup.values import TopicPartition

TransitionObserver = Callable[[str, GroupState, GroupState], None]
#: Called with the group id when a group first has changes its records do not describe yet.
ChangeObserver = Callable[[str], None]
GroupRecord = Union[GroupMetadataRecord, MemberMetadataRecord, MemberTombstone]

S = GroupState


#: How group.py changes a Member: Member.__setattr__ refuses every other write.
_set = object.__setattr__


class Member:
    """One member of a classic group; only its :class:`Group` changes it.

    Fields are plain slots, so reads stay as cheap as attribute reads on the heartbeat path;
    an assignment from outside group.py raises AttributeError.
    """

    __slots__ = (
        "member_id", "group_instance_id", "client_id", "client_host", "session_timeout_ms",
        "rebalance_timeout_ms", "protocols", "protocol_names", "assignment", "join_key", "sync_key",
        "session_key", "is_new",
    )
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[JoinGroupProtocol, ...]
    protocol_names: tuple[str, ...]
    assignment: bytes
    #: Request keys of a parked JoinGroup / SyncGroup (None when not awaiting a response).
    join_key: Optional[Hashable]
    sync_key: Optional[Hashable]
    session_key: tuple[str, str, str]
    #: Joined but not yet through a completed join: its parked JoinGroup does not keep it
    #: alive, it expires after the new-member join timeout (Kafka's ClassicGroupMember.isNew).
    is_new: bool

    def __init__(self, group_id: str, member_id: str, group_instance_id: Optional[str], client_id: str,
                 client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int,
                 protocols: tuple[JoinGroupProtocol, ...], assignment: bytes = b"", *,
                 is_new: bool = False) -> None:
        _set(self, "member_id", member_id)
        _set(self, "group_instance_id", group_instance_id)
        _set(self, "client_id", client_id)
        _set(self, "client_host", client_host)
        _set(self, "session_timeout_ms", session_timeout_ms)
        _set(self, "rebalance_timeout_ms", rebalance_timeout_ms)
        _set(self, "protocols", protocols)
        _set(self, "protocol_names", tuple(p.name for p in protocols))
        _set(self, "assignment", assignment)
        _set(self, "join_key", None)
        _set(self, "sync_key", None)
        _set(self, "session_key", session_key(group_id, member_id))
        _set(self, "is_new", is_new)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Member.{name} is read-only: the member's Group changes it")

    @classmethod
    def from_record(cls, record: MemberMetadataRecord) -> "Member":
        return cls(record.group_id, record.member_id, record.group_instance_id, record.client_id,
                   record.client_host, record.session_timeout_ms, record.rebalance_timeout_ms,
                   record.protocols, record.assignment)

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
    """Members, generation, protocol and offsets of one group; the coordinator drives it."""

    def __init__(self, group_id: str, observer: Optional[TransitionObserver] = None,
                 initial: GroupState = GroupState.EMPTY, *,
                 on_change: Optional[ChangeObserver] = None) -> None:
        self._group_id = group_id
        self._fsm = StateMachine(f"group {group_id!r}", initial, LEGAL_PREVIOUS)
        self._previous_state: Optional[GroupState] = None
        self._observer = observer
        self._on_change = on_change
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
        self._supported_protocols: Counter = Counter()
        #: A member joined during the initial delay, which extends it once more (Kafka's newMemberAdded).
        self._new_member_added = False
        self._join_key = join_key(group_id)
        self._sync_key = sync_key(group_id)
        #: Members whose record may differ from the last one written (ordered, so records are too).
        self._dirty_members: dict[str, None] = {}
        #: Whether the group has told on_change about changes not yet taken by take_records().
        self._unflushed = False
        self._persisted_header: Optional[GroupMetadataRecord] = None
        self._persisted_members: dict[str, MemberMetadataRecord] = {}
        self._offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        # A new group has a header to write (a loaded one finds it written in restore()).
        self._changed()

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
        return self._supported_protocols

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

    # -- state -----------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self._fsm.state is state

    def can_transition_to(self, target: GroupState) -> bool:
        return self._fsm.can_transition_to(target)

    def transition_to(self, target: GroupState) -> None:
        previous = self._fsm.transition_to(target)
        self._previous_state = previous
        if target is S.PREPARING_REBALANCE and previous is S.EMPTY:
            # A new initial delay starts: only members added during it may extend it.
            self._new_member_added = False
        self._changed()
        if self._observer is not None:
            self._observer(self._group_id, previous, target)

    def header_record(self) -> GroupMetadataRecord:
        return GroupMetadataRecord(
            group_id=self._group_id, state=self.state.value, generation_id=self._generation_id,
            protocol_type=self._protocol_type, protocol_name=self._protocol_name, leader_id=self._leader_id,
        )

    def _violation(self, violation: str) -> GroupInvariantViolation:
        return GroupInvariantViolation(self._group_id, violation)

    def _changed(self) -> None:
        if not self._unflushed:
            self._unflushed = True
            if self._on_change is not None:
                self._on_change(self._group_id)

    def _mark_dirty(self, member_id: str) -> None:
        self._dirty_members[member_id] = None
        self._changed()

    # -- membership (Kafka's ClassicGroup.add / remove / replaceStaticMember / updateMember) --

    def add(self, member: Member, join_key: Optional[Hashable] = None, *,
            protocol_type: Optional[str] = None) -> None:
        """Add ``member``, parked on ``join_key`` if given; the first member sets the protocol type.

        Refuses a member id already in the group, an instance id that already maps to a member,
        a protocol type other than the group's, and protocols the other members cannot share.
        """
        member_id = member.member_id
        if member_id in self._members:
            raise self._violation(f"member {member_id!r} is already in the group")
        if member.join_key is not None or member.sync_key is not None:
            raise self._violation(f"member {member_id!r} is added with a parked request")
        instance_id = member.group_instance_id
        if instance_id is not None and instance_id in self._static_members:
            raise self._violation(f"static member {instance_id!r} is already in the group "
                                  f"as {self._static_members[instance_id]!r}")
        if self._members and protocol_type is not None and protocol_type != self._protocol_type:
            raise self._violation(f"member protocol type {protocol_type!r} is not the group's "
                                  f"{self._protocol_type!r}")
        group_protocol_type = self._protocol_type if self._members else protocol_type
        if not self.supports_protocols(group_protocol_type or "", member.protocol_names):
            raise self._violation(f"no protocol of member {member_id!r} is supported by every member")
        if not self._members:
            self._protocol_type = protocol_type
        self._pending_members.discard(member_id)
        self._members[member_id] = member
        self._supported_protocols.update(member.protocol_names)
        if instance_id is not None:
            self._static_members[instance_id] = member_id
        if self._leader_id is None:
            self._leader_id = member_id
        self._park_join(member, join_key)
        if self.is_(S.PREPARING_REBALANCE) and self._previous_state is S.EMPTY:
            # Kafka's addMemberThenRebalanceOrCompleteJoin: the initial delay waits once more.
            self._new_member_added = True
        self._mark_dirty(member_id)

    def remove(self, member_id: str) -> Optional[Member]:
        """Remove a member (or a pending member id, as Kafka's remove does).

        The detached member keeps its parked request keys for the caller to answer.
        """
        self._pending_members.discard(member_id)
        member = self._members.pop(member_id, None)
        if member is None:
            return None
        self._supported_protocols.subtract(member.protocol_names)
        self._pending_sync_members.discard(member_id)
        if member.join_key is not None:
            self._num_awaiting_join -= 1
        instance_id = member.group_instance_id
        if instance_id is not None and self._static_members.get(instance_id) == member_id:
            del self._static_members[instance_id]
        if self._leader_id == member_id:
            self._leader_id = next(iter(self._members), None)
        self._mark_dirty(member_id)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_member: Member) -> Member:
        """Move a static member to a new member id (KIP-345); it keeps the old one's assignment.

        Returns the detached old member, whose parked request keys the caller answers with
        FENCED_INSTANCE_ID.
        """
        if self._static_members.get(instance_id) != old_id or old_id not in self._members:
            raise self._violation(f"static member {instance_id!r} is not member {old_id!r}")
        new_id = new_member.member_id
        if new_id in self._members or new_member.group_instance_id != instance_id:
            raise self._violation(f"member {new_id!r} cannot replace static member {instance_id!r}")
        if new_member.join_key is not None or new_member.sync_key is not None:
            raise self._violation(f"member {new_id!r} is added with a parked request")
        old = self._members.pop(old_id)
        self._supported_protocols.subtract(old.protocol_names)
        if old.join_key is not None:
            self._num_awaiting_join -= 1
        _set(new_member, "assignment", old.assignment)
        self._members[new_id] = new_member
        self._supported_protocols.update(new_member.protocol_names)
        self._static_members[instance_id] = new_id
        if old_id in self._pending_sync_members:
            self._pending_sync_members.discard(old_id)
            self._pending_sync_members.add(new_id)
        if self._leader_id == old_id:
            self._leader_id = new_id
        self._mark_dirty(old_id)
        self._mark_dirty(new_id)
        return old

    def update_member(self, member: Member, protocols: tuple[JoinGroupProtocol, ...],
                      session_timeout_ms: int, rebalance_timeout_ms: int,
                      join_key: Hashable) -> Optional[Hashable]:
        """A known member rejoins (Kafka's updateMember); returns the key of a JoinGroup it supersedes."""
        self._require_member(member)
        superseded = member.join_key if member.join_key is not None and member.join_key != join_key else None
        if not member.matches(protocols):
            self._supported_protocols.subtract(member.protocol_names)
            _set(member, "protocols", protocols)
            _set(member, "protocol_names", tuple(p.name for p in protocols))
            self._supported_protocols.update(member.protocol_names)
            self._mark_dirty(member.member_id)
        timeouts_ms = (session_timeout_ms, rebalance_timeout_ms)
        if (member.session_timeout_ms, member.rebalance_timeout_ms) != timeouts_ms:
            _set(member, "session_timeout_ms", session_timeout_ms)
            _set(member, "rebalance_timeout_ms", rebalance_timeout_ms)
            self._mark_dirty(member.member_id)
        self._park_join(member, join_key)
        return superseded

    def _require_member(self, member: Member) -> None:
        if self._members.get(member.member_id) is not member:
            raise self._violation(f"member {member.member_id!r} is not in the group")

    def add_pending_member(self, member_id: str) -> None:
        """Park a member id handed out with MEMBER_ID_REQUIRED (Kafka's addPendingMember)."""
        if member_id in self._members:
            raise self._violation(f"member {member_id!r} is already in the group, it cannot be pending")
        self._pending_members.add(member_id)

    def remove_pending_member(self, member_id: str) -> bool:
        """Forget a pending member id; whether it was pending."""
        if member_id in self._pending_members:
            self._pending_members.discard(member_id)
            return True
        return False

    # -- parked requests (Kafka's completeJoinFuture / completeSyncFuture) -----

    def _park_join(self, member: Member, key: Optional[Hashable]) -> None:
        if member.join_key is None and key is not None:
            self._num_awaiting_join += 1
        elif member.join_key is not None and key is None:
            self._num_awaiting_join -= 1
        _set(member, "join_key", key)

    def park_join(self, member: Member, key: Hashable) -> None:
        """The member's JoinGroup waits for the join to complete."""
        self._require_member(member)
        self._park_join(member, key)

    def take_join_key(self, member: Member) -> Optional[Hashable]:
        """The member's parked JoinGroup is being answered: return its key and stop awaiting."""
        key = member.join_key
        if key is not None:
            if self._members.get(member.member_id) is member:
                self._num_awaiting_join -= 1
            _set(member, "join_key", None)
        return key

    def park_sync(self, member: Member, key: Hashable) -> Optional[Hashable]:
        """The member's SyncGroup waits for the leader's; returns the key of one it supersedes."""
        self._require_member(member)
        superseded = member.sync_key if member.sync_key is not None and member.sync_key != key else None
        _set(member, "sync_key", key)
        return superseded

    def take_sync_key(self, member: Member) -> Optional[Hashable]:
        """The member's parked SyncGroup is being answered: return its key and stop awaiting."""
        key = member.sync_key
        _set(member, "sync_key", None)
        return key

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

    def take_new_member_added(self) -> bool:
        """Whether a member joined since the initial delay was last (re)armed; resets the flag."""
        added = self._new_member_added
        self._new_member_added = False
        return added

    # -- protocols -------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: tuple[str, ...]) -> bool:
        if not self._members:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self._protocol_type:
            return False
        everyone = len(self._members)
        return any(self._supported_protocols[name] == everyone for name in protocol_names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred protocol all members support."""
        everyone = len(self._members)
        if not everyone:
            raise self._violation("a group without members has no protocol to select")
        candidates = [name for name, count in self._supported_protocols.items() if count == everyone]
        candidate_set = set(candidates)
        votes: Counter = Counter()
        for member in self._members.values():
            for name in member.protocol_names:
                if name in candidate_set:
                    votes[name] += 1
                    break
        # Ties break by the first candidate seen, so the choice is deterministic.
        return max(candidates, key=lambda name: votes[name])

    # -- generations (Kafka's maybeElectNewJoinedLeader / initNextGeneration) --

    def elect_joined_leader(self) -> None:
        """Keep the leader if it rejoined, else the first member that did (None if nobody did)."""
        leader = self._members.get(self._leader_id) if self._leader_id is not None else None
        if leader is None or leader.join_key is None:
            rejoined = (m.member_id for m in self._members.values() if m.join_key is not None)
            self._leader_id = next(rejoined, None)
            self._changed()

    def init_next_generation(self) -> None:
        """Bump the generation: CompletingRebalance with the voted protocol, or Empty with none.

        Every member is through a completed join now, so none is new any more.
        """
        if self._members and self._leader_id not in self._members:
            raise self._violation(f"a new generation needs a member as leader, not {self._leader_id!r}")
        self._generation_id += 1
        self._pending_sync_members.clear()
        for member in self._members.values():
            _set(member, "is_new", False)
        if self._members:
            self._protocol_name = self.select_protocol()
            self.transition_to(S.COMPLETING_REBALANCE)
        else:
            self._protocol_name = None
            self.transition_to(S.EMPTY)

    def await_syncs(self) -> None:
        """Every member of the new generation owes a SyncGroup (Kafka's addPendingSyncMember)."""
        self._pending_sync_members = set(self._members)

    def remove_pending_sync_member(self, member_id: str) -> None:
        if member_id not in self._members:
            raise self._violation(f"member {member_id!r} is not in the group, it owes no SyncGroup")
        self._pending_sync_members.discard(member_id)

    def has_received_sync_from_all_members(self) -> bool:
        return not self._pending_sync_members

    def clear_pending_sync_members(self) -> None:
        self._pending_sync_members.clear()

    # -- assignments -----------------------------------------------------------

    def assign(self, assignments: Mapping[str, bytes]) -> None:
        """Store the leader's assignment; a member it leaves out gets an empty one."""
        for member in self._members.values():
            assignment = assignments.get(member.member_id, b"")
            if member.assignment != assignment:
                _set(member, "assignment", assignment)
                self._mark_dirty(member.member_id)

    def clear_assignment(self, member: Member) -> None:
        self._require_member(member)
        if member.assignment:
            _set(member, "assignment", b"")
            self._mark_dirty(member.member_id)

    # -- offsets ---------------------------------------------------------------

    def commit_offset(self, topic_partition: TopicPartition,
                      committed: OffsetAndMetadata) -> OffsetCommitRecord:
        """Store a committed offset; returns the record that persists it."""
        if self.is_(S.DEAD):
            raise self._violation("a deleted group stores no offsets")
        self._offsets[topic_partition] = committed
        return OffsetCommitRecord(self._group_id, topic_partition, committed)

    def take_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Offsets a consumer group left under this id (the id changed type); already in the log."""
        self._offsets.update(offsets)

    def delete_offset(self, topic_partition: TopicPartition) -> Optional[OffsetTombstone]:
        """OffsetDelete: forget one committed offset; the tombstone to write (None if none was stored)."""
        if self._offsets.pop(topic_partition, None) is None:
            return None
        return OffsetTombstone(self._group_id, topic_partition)

    # -- persistence -----------------------------------------------------------

    def restore(self, header: GroupMetadataRecord, member_records: Mapping[str, MemberMetadataRecord],
                offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Take the header, offsets and persisted snapshot from the records a loaded group came from.

        The members were added from ``member_records`` first (with :meth:`add`); the records
        describe the group exactly, so nothing is left to write.
        """
        if set(member_records) != set(self._members):
            raise self._violation("restored member records are not the group's members")
        if header.state != self.state.value:
            raise self._violation(f"restored header is {header.state}, the group is {self.state.value}")
        leader_id = header.leader_id
        if not (leader_id in self._members if self._members else leader_id is None):
            raise self._violation(f"restored leader {leader_id!r} is not one of the members")
        self._generation_id = header.generation_id
        self._protocol_type = header.protocol_type
        self._protocol_name = header.protocol_name
        self._leader_id = leader_id
        self._offsets = dict(offsets)
        self._persisted_header = header
        self._persisted_members = dict(member_records)
        self._dirty_members.clear()

    def take_records(self) -> list[GroupRecord]:
        """Records for what changed since the last call: the header, members added, changed or gone."""
        self._unflushed = False
        if self.is_(S.DEAD):
            self._dirty_members.clear()
            return []
        records: list[GroupRecord] = []
        header = self.header_record()
        if header != self._persisted_header:
            records.append(header)
            self._persisted_header = header
        persisted = self._persisted_members
        group_id = self._group_id
        for member_id in self._dirty_members:
            member = self._members.get(member_id)
            if member is None:
                if persisted.pop(member_id, None) is not None:
                    records.append(MemberTombstone(group_id, member_id))
                continue
            record = member.record(group_id)
            if persisted.get(member_id) != record:
                records.append(record)
                persisted[member_id] = record
        self._dirty_members.clear()
        return records

    def delete(self) -> list[Union[OffsetTombstone, GroupTombstone]]:
        """DeleteGroups: the group goes Dead, with its pending members and offsets; returns the tombstones.

        The Dead group stays in memory so stale members see COORDINATOR_NOT_AVAILABLE.
        """
        if self._members:
            raise self._violation("a group with members cannot be deleted")
        self.transition_to(S.DEAD)
        self._pending_members.clear()
        tombstones: list[Union[OffsetTombstone, GroupTombstone]] = [
            OffsetTombstone(self._group_id, tp) for tp in self._offsets
        ]
        tombstones.append(GroupTombstone(self._group_id))
        self._offsets = {}
        self._persisted_header = None
        self._persisted_members = {}
        self._dirty_members.clear()
        return tombstones

    # -- invariants ------------------------------------------------------------

    def assert_invariants(self) -> None:
        """Recount everything the counters and maps cache; raise GroupInvariantViolation on a mismatch.

        O(members): for tests (the property tests call it after every request), not the hot path.
        """
        members = self._members.values()
        state = self.state

        def check(holds: bool, violation: str) -> None:
            if not holds:
                raise self._violation(violation)

        awaiting = sum(m.join_key is not None for m in members)
        check(self._num_awaiting_join == awaiting,
              f"awaiting-join count {self._num_awaiting_join} but {awaiting} members await a join")
        recount: Counter = Counter(name for m in members for name in m.protocol_names)
        check(+self._supported_protocols == recount, "supported-protocol counts do not match the members")
        static = {m.group_instance_id: m.member_id for m in members if m.group_instance_id is not None}
        check(self._static_members == static, "static member map does not match the members")
        check(len(static) == sum(m.group_instance_id is not None for m in members),
              "two members share a group instance id")
        check(all(mid == m.member_id for mid, m in self._members.items()),
              "a member is filed under another id")
        check(not self._pending_members & self._members.keys(), "a member is also pending")
        check(self._pending_sync_members <= self._members.keys(), "a pending sync member is not a member")
        check(not self._pending_sync_members or state in (S.COMPLETING_REBALANCE, S.STABLE),
              f"members owe a SyncGroup in {state.value}")
        if self._members:
            check(self._leader_id in self._members, f"leader {self._leader_id!r} is not a member")
            check(self._protocol_type is not None, "members but no protocol type")
            check(any(self._supported_protocols[name] == len(self._members) for name in recount),
                  "no protocol is supported by every member")
        else:
            check(self._leader_id is None, f"leader {self._leader_id!r} of a group without members")
        check(bool(self._members) or state not in (S.COMPLETING_REBALANCE, S.STABLE),
              f"{state.value} without members")
        check(not self._members or state not in (S.EMPTY, S.DEAD), f"{state.value} with members")
        check(state is S.PREPARING_REBALANCE or awaiting == 0, f"a member awaits a join in {state.value}")
        check(state is S.COMPLETING_REBALANCE or all(m.sync_key is None for m in members),
              f"a member awaits a sync in {state.value}")
        if state is S.DEAD:
            check(not self._offsets and not self._pending_members,
                  "a deleted group keeps offsets or pending ids")
            return
        # Dirty members <-> records: a member whose record is not the one written is dirty, and so
        # is a written member that is gone; a header that was not written is an unflushed change.
        persisted = self._persisted_members
        for member_id, member in self._members.items():
            written = persisted.get(member_id) == member.record(self._group_id)
            check(written or member_id in self._dirty_members,
                  f"member {member_id!r} changed but is not marked for a record")
        for member_id in persisted.keys() - self._members.keys():
            check(member_id in self._dirty_members,
                  f"member {member_id!r} left but is not marked for a tombstone")
        check(not self._dirty_members or self._unflushed, "dirty members but no change was reported")
        check(self.header_record() == self._persisted_header or self._unflushed,
              "the header changed but no change was reported")
