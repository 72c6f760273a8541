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
from typing import Callable, Hashable, Mapping, Optional, Union

from kgroup.core.coordinator.classic_member import Member, _set, join_key, session_key, sync_key
from kgroup.core.coordinator.group_invariants import check_group_invariants
from kgroup.core.coordinator.group_record_book import ChangeObserver, GroupRecord
from kgroup.core.coordinator.group_view import GroupView
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.coordinator_common.records import GroupTombstone, OffsetCommitRecord, OffsetTombstone
from kgroup.core.messages import JoinGroupProtocol, OffsetAndMetadata
from kgroup.values import TopicPartition

__all__ = ["Group", "Member", "GroupRecord", "ChangeObserver", "TransitionObserver", "session_key",
           "join_key", "sync_key"]

TransitionObserver = Callable[[str, GroupState, GroupState], None]

S = GroupState


class Group(GroupView):
    """Members, generation, protocol and offsets of one group; the coordinator drives it.

    Its fields and queries are :class:`~kgroup.core.coordinator.group_view.GroupView`'s; the
    changes are here.
    """

    def __init__(self, group_id: str, observer: Optional[TransitionObserver] = None,
                 initial: GroupState = GroupState.EMPTY, *,
                 on_change: Optional[ChangeObserver] = None) -> None:
        super().__init__(group_id, initial, on_change)
        self._observer = observer
        # A new group has a header to write (a loaded one finds it written in restore()).
        self._records.changed()

    # -- state -----------------------------------------------------------------

    def transition_to(self, target: GroupState) -> None:
        previous = self._fsm.transition_to(target)
        self._previous_state = previous
        if target is S.PREPARING_REBALANCE and previous is S.EMPTY:
            # A new initial delay starts: only members added during it may extend it.
            self._new_member_added = False
        self._changed()
        if self._observer is not None:
            self._observer(self._group_id, previous, target)

    def _violation(self, violation: str) -> GroupInvariantViolation:
        return GroupInvariantViolation(self._group_id, violation)

    def _changed(self) -> None:
        self._records.changed()

    def _mark_dirty(self, member_id: str) -> None:
        self._records.mark_dirty(member_id)

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
        self._protocols.add(member.protocol_names)
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
        self._protocols.remove(member.protocol_names)
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
        self._protocols.remove(old.protocol_names)
        if old.join_key is not None:
            self._num_awaiting_join -= 1
        _set(new_member, "assignment", old.assignment)
        self._members[new_id] = new_member
        self._protocols.add(new_member.protocol_names)
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
            self._protocols.remove(member.protocol_names)
            _set(member, "protocols", protocols)
            _set(member, "protocol_names", tuple(p.name for p in protocols))
            self._protocols.add(member.protocol_names)
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

    def take_new_member_added(self) -> bool:
        """Whether a member joined since the initial delay was last (re)armed; resets the flag."""
        added = self._new_member_added
        self._new_member_added = False
        return added

    # -- protocols -------------------------------------------------------------

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred protocol all members support."""
        if not self._members:
            raise self._violation("a group without members has no protocol to select")
        candidates = self._protocols.candidates(len(self._members))
        if not candidates:
            raise self._violation("no protocol is supported by every member")
        candidate_set = set(candidates)
        votes = Counter(m.vote(candidate_set) for m in self._members.values())
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
                offsets: Mapping[TopicPartition, OffsetAndMetadata], *, written: bool = True) -> None:
        """Take the header, offsets and persisted snapshot from the records a loaded group came from.

        The members were added from ``member_records`` first (with :meth:`add`); the records
        describe the group exactly, so nothing is left to write, unless ``written`` is False (a
        group converted from a consumer group, whose records are still to be written).
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
        if written:
            self._records.restore(header, member_records)
            return
        # A group converted from a consumer group (migration.py): its records are still to be written.
        self._records.forget()
        for member_id in self._members:
            self._mark_dirty(member_id)
        self._changed()

    def take_records(self) -> list[GroupRecord]:
        """Records for what changed since the last call: the header, members added, changed or gone."""
        return self._records.take(self.header_record(), self._members, self.is_(S.DEAD))

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
        self._records.forget()
        return tombstones

    # -- invariants ------------------------------------------------------------

    def assert_invariants(self) -> None:
        """Recount what the counters and maps cache (:mod:`.group_invariants`); O(members), for tests."""
        check_group_invariants(self)
