"""One member of a classic group (Kafka's ClassicGroupMember) and the keys of the classic timers.

Split from :mod:`kgroup.core.coordinator.group`, whose :class:`~kgroup.core.coordinator.group.Group`
is the only writer of a member.
"""
from __future__ import annotations

from typing import AbstractSet, Hashable, Optional

from kgroup.core.coordinator.records import MemberMetadataRecord
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.messages import JoinGroupProtocol

#: How the member's Group changes a Member: Member.__setattr__ refuses every other write.
_set = object.__setattr__


class Member:
    """One member of a classic group; only its :class:`Group` changes it.

    Fields are plain slots, so reads stay as cheap as attribute reads on the heartbeat path;
    an assignment from outside its Group raises AttributeError.
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

    @property
    def group_id(self) -> str:
        return self.session_key[1]

    def metadata_for(self, protocol_name: Optional[str]) -> bytes:
        """The member's metadata for ``protocol_name``; b"" when it does not support it (Kafka's
        ClassicGroupMember.metadata throws: kgroup reads members' subscriptions during a rebalance too,
        when a new member may not support the previous generation's protocol)."""
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        return b""

    def vote(self, candidates: AbstractSet[str]) -> str:
        """Kafka's ClassicGroupMember.vote: the member's most preferred protocol among ``candidates``."""
        for name in self.protocol_names:
            if name in candidates:
                return name
        raise GroupInvariantViolation(self.group_id, f"member {self.member_id!r} supports none of the "
                                      f"candidate protocols {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's ClassicGroupMember.hasSatisfiedHeartbeat: awaiting a JoinGroup or SyncGroup response
        counts as alive, except for a new member, whose join timeout its session deadline is."""
        return not self.is_new and (self.join_key is not None or self.sync_key is not None)

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
