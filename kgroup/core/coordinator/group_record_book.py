"""Which changes of one classic group its records do not describe yet (split from Group).

The book remembers the header and member records last written and the members that may have
changed since; ``take`` turns them into the records to write.  Only changed members are compared,
so a flush is O(changed members), not O(members).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Union

from kgroup.core.coordinator.classic_member import Member
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord, MemberTombstone

#: Called with the group id when a group first has changes its records do not describe yet.
ChangeObserver = Callable[[str], None]
GroupRecord = Union[GroupMetadataRecord, MemberMetadataRecord, MemberTombstone]


class GroupRecordBook:
    def __init__(self, group_id: str, on_change: Optional[ChangeObserver]) -> None:
        self._group_id = group_id
        self._on_change = on_change
        #: Members whose record may differ from the last one written (ordered, so records are too).
        self._dirty_members: dict[str, None] = {}
        #: Whether on_change was told about changes not yet taken by take().
        self._unflushed = False
        self._persisted_header: Optional[GroupMetadataRecord] = None
        self._persisted_members: dict[str, MemberMetadataRecord] = {}

    @property
    def has_unflushed_changes(self) -> bool:
        return self._unflushed

    def changed(self) -> None:
        if not self._unflushed:
            self._unflushed = True
            if self._on_change is not None:
                self._on_change(self._group_id)

    def mark_dirty(self, member_id: str) -> None:
        self._dirty_members[member_id] = None
        self.changed()

    def restore(self, header: GroupMetadataRecord,
                member_records: Mapping[str, MemberMetadataRecord]) -> None:
        """The group was loaded from these records: they describe it exactly."""
        self._persisted_header = header
        self._persisted_members = dict(member_records)
        self._dirty_members.clear()

    def forget(self) -> None:
        """The group is gone: nothing written is remembered, nothing is left to write."""
        self._persisted_header = None
        self._persisted_members = {}
        self._dirty_members.clear()

    def take(self, header: GroupMetadataRecord, members: Mapping[str, Member],
             dead: bool) -> list[GroupRecord]:
        """Records for what changed since the last call: the header, members added, changed or gone."""
        self._unflushed = False
        if dead:
            self._dirty_members.clear()
            return []
        records: list[GroupRecord] = []
        if header != self._persisted_header:
            records.append(header)
            self._persisted_header = header
        persisted = self._persisted_members
        group_id = self._group_id
        for member_id in self._dirty_members:
            member = members.get(member_id)
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

    def check(self, header: GroupMetadataRecord, members: Mapping[str, Member],
              check: Callable[[bool, str], None]) -> None:
        """Dirty members <-> records: a member whose record is not the one written is dirty, and so is
        a written member that is gone; a header that was not written is an unflushed change."""
        persisted = self._persisted_members
        for member_id, member in members.items():
            written = persisted.get(member_id) == member.record(self._group_id)
            check(written or member_id in self._dirty_members,
                  f"member {member_id!r} changed but is not marked for a record")
        for member_id in persisted.keys() - members.keys():
            check(member_id in self._dirty_members,
                  f"member {member_id!r} left but is not marked for a tombstone")
        check(not self._dirty_members or self._unflushed, "dirty members but no change was reported")
        check(header == self._persisted_header or self._unflushed,
              "the header changed but no change was reported")
