"""Partition ownership over time, as the group coordinator hands it out.

Fed with every group-API answer the coordinator gives (``KafkaServer.observe_groups``),
it keeps per (group, partition) the intervals during which a member id held
the partition in the coordinator's view: from the SyncGroup answer that gave
it, until the SyncGroup answer that took it away, the member left
(LeaveGroup), was replaced by a new member of the same static instance id
(KIP-345), or was left out of a new generation (the leader's JoinGroup answer
lists every member of it).  Times are the coordinator's.  Pure: no clock,
no I/O.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import TopicPartition
from kgroup.wire.consumer_protocol import decode_assignment


@attrs.frozen
class OwnershipInterval:
    group_id: str
    partition: TopicPartition
    member_id: str
    generation_id: int
    start_ms: int
    #: None while the member still holds it.
    end_ms: Optional[int]

    def overlaps(self, other: "OwnershipInterval") -> bool:
        end = self.end_ms if self.end_ms is not None else float("inf")
        other_end = other.end_ms if other.end_ms is not None else float("inf")
        return self.start_ms < other_end and other.start_ms < end


@attrs.define
class _Holding:
    generation_id: int
    start_ms: int


class OwnershipRecorder:
    def __init__(self) -> None:
        self._open: dict[tuple[str, str], dict[TopicPartition, _Holding]] = {}
        self._closed: list[OwnershipInterval] = []
        self._instance_members: dict[tuple[str, str], str] = {}

    # -- feeding -----------------------------------------------------------------------------

    def observe(self, request: Any, response: Any, now_ms: int) -> None:
        if isinstance(request, m.SyncGroupRequest) and isinstance(response, m.SyncGroupResponse):
            if response.error_code is ErrorCode.NONE:
                self._synced(request, response.assignment, now_ms)
        elif isinstance(request, m.JoinGroupRequest) and isinstance(response, m.JoinGroupResponse):
            if response.error_code is ErrorCode.NONE:
                self._joined(request, response, now_ms)
        elif isinstance(request, m.LeaveGroupRequest) and isinstance(response, m.LeaveGroupResponse):
            left = [member for member in response.members if member.error_code is ErrorCode.NONE]
            for member in left:
                member_id = member.member_id or self._instance_members.get(
                    (request.group_id, member.group_instance_id or ""), ""
                )
                self._release(request.group_id, member_id, now_ms)

    def _synced(self, request: m.SyncGroupRequest, assignment: bytes, now_ms: int) -> None:
        try:
            owned = set(decode_assignment(assignment).partitions) if assignment else set()
        except InvalidProtocolMetadata:
            owned = set()
        holdings = self._open.setdefault((request.group_id, request.member_id), {})
        for partition in list(holdings):
            if partition not in owned:
                self._close(request.group_id, request.member_id, partition, holdings.pop(partition), now_ms)
        for partition in owned:
            holdings.setdefault(partition, _Holding(request.generation_id, now_ms))

    def _joined(self, request: m.JoinGroupRequest, response: m.JoinGroupResponse, now_ms: int) -> None:
        group_id = request.group_id
        if request.group_instance_id is not None:
            key = (group_id, request.group_instance_id)
            previous = self._instance_members.get(key)
            if previous is not None and previous != response.member_id:
                self._release(group_id, previous, now_ms)  # KIP-345: the old member id is fenced
            self._instance_members[key] = response.member_id
        if response.members:  # the leader's answer: every member of the new generation
            current = {member.member_id for member in response.members}
            for group, member_id in list(self._open):
                if group == group_id and member_id not in current:
                    self._release(group_id, member_id, now_ms)

    def _release(self, group_id: str, member_id: str, now_ms: int) -> None:
        for partition, holding in self._open.pop((group_id, member_id), {}).items():
            self._close(group_id, member_id, partition, holding, now_ms)

    def _close(
        self, group_id: str, member_id: str, partition: TopicPartition, holding: _Holding, now_ms: int
    ) -> None:
        self._closed.append(
            OwnershipInterval(group_id, partition, member_id, holding.generation_id, holding.start_ms, now_ms)
        )

    # -- reading -----------------------------------------------------------------------------

    def intervals(self, group_id: Optional[str] = None) -> list[OwnershipInterval]:
        current = [
            OwnershipInterval(group, partition, member_id, holding.generation_id, holding.start_ms, None)
            for (group, member_id), holdings in self._open.items()
            for partition, holding in holdings.items()
        ]
        every = self._closed + current
        return sorted(
            (i for i in every if group_id is None or i.group_id == group_id),
            key=lambda i: (i.group_id, i.partition, i.start_ms),
        )

    def overlaps(self, group_id: Optional[str] = None) -> list[tuple[OwnershipInterval, OwnershipInterval]]:
        """Pairs of intervals in which two member ids held one partition at the same time."""
        found = []
        by_partition: dict[tuple[str, TopicPartition], list[OwnershipInterval]] = {}
        for interval in self.intervals(group_id):
            by_partition.setdefault((interval.group_id, interval.partition), []).append(interval)
        for intervals in by_partition.values():
            for i, first in enumerate(intervals):
                for second in intervals[i + 1:]:
                    if first.member_id != second.member_id and first.overlaps(second):
                        found.append((first, second))
        return found
