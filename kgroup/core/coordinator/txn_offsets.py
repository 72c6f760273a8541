"""TxnOffsetCommit (KIP-98, with KIP-447's group checks) and the marker that ends a transaction on
an offsets partition.

After Kafka's ``OffsetMetadataManager.commitTransactionalOffset`` / ``validateTransactionalOffsetCommit``
and ``GroupCoordinatorService.commitTransactionalOffsets`` / ``completeTransaction``:

- the empty group id answers INVALID_GROUP_ID (``isGroupIdNotEmpty``: unlike OffsetCommit);
- an unknown group: generation -1 creates a simple (empty classic) group, any other generation
  answers ILLEGAL_GENERATION;
- a classic group: ``ClassicGroup.validateOffsetCommit`` with ``isTransactional=true``: a deleted group
  COORDINATOR_NOT_AVAILABLE; generation -1 on an Empty group, or no member identity at all (v0-v2
  send generation -1 and member id "") is accepted in any state; otherwise an unknown member or
  instance UNKNOWN_MEMBER_ID, an instance bound to another member FENCED_INSTANCE_ID, another
  generation ILLEGAL_GENERATION; the group state is not checked (no REBALANCE_IN_PROGRESS) and the
  commit does not count as a heartbeat;
- a KIP-848 consumer group: ``ConsumerGroup.validateOffsetCommit`` with ``isTransactional=true``:
  member epoch -1 on a group without members is accepted, an unknown member (v0-v2's "" too)
  UNKNOWN_MEMBER_ID, another member epoch STALE_MEMBER_EPOCH, which
  ``validateTransactionalOffsetCommit`` answers as ILLEGAL_GENERATION;
- a metadata string over ``offset.metadata.max.bytes`` refuses that partition alone;
- then the write carries the producer id and epoch: an epoch older than one the producer already
  wrote to this partition with is a zombie's, and the whole request answers INVALID_PRODUCER_EPOCH
  (the partition's ``ProducerAppendInfo.checkProducerEpoch``).

The offsets are written as :class:`TxnOffsetCommitRecord` and stay pending until
:meth:`TransactionalOffsets.complete` writes the producer's marker.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Union

from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.coordinator.group import Group
from kgroup.core.coordinator.pending_offsets import PendingOffsets
from kgroup.core.coordinator.records import Record
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator_common.records import TxnMarkerRecord, TxnOffsetCommitRecord
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import PartitionError, TxnOffsetCommitRequest, TxnOffsetCommitResponse

E = ErrorCode
S = GroupState

#: A group a commit may go to, or None: the group does not exist yet (a simple group is created).
_Target = Optional[Union[Group, ConsumerGroup]]


class TransactionalOffsets:
    def __init__(self, groups: Mapping[str, Group], create_group: Callable[[str], Group],
                 consumer_groups: Mapping[str, ConsumerGroup], emit: Callable[[Record], None],
                 pending: PendingOffsets, metadata_max_bytes: int) -> None:
        #: Read-only: the coordinator adds and drops groups.
        self._groups = groups
        self._create_group = create_group
        self._consumer_groups = consumer_groups
        self._emit = emit
        self._pending = pending
        self._metadata_max_bytes = metadata_max_bytes

    def commit(self, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        code, group = self._check(req)
        if code is not E.NONE:
            return _answer_all(req, code)
        answers = []
        records = []
        for commit in req.offsets:
            metadata = commit.committed.metadata
            if metadata is not None and len(metadata) > self._metadata_max_bytes:
                answers.append(PartitionError(commit.topic_partition, E.OFFSET_METADATA_TOO_LARGE))
                continue
            answers.append(PartitionError(commit.topic_partition, E.NONE))
            records.append(TxnOffsetCommitRecord(req.group_id, commit.topic_partition, commit.committed,
                                                 req.producer_id, req.producer_epoch))
        if records and self._pending.is_stale_epoch(req.producer_id, req.producer_epoch):
            return _answer_all(req, E.INVALID_PRODUCER_EPOCH)
        if records and group is None:
            # Kafka's getOrMaybeCreateClassicGroup: a simple group to hold the offsets.
            self._create_group(req.group_id)
        for record in records:
            self._emit(record)
        return TxnOffsetCommitResponse(tuple(answers))

    def _check(self, req: TxnOffsetCommitRequest) -> tuple[ErrorCode, _Target]:
        """The error code, and the group the offsets go to (None: a simple group to create)."""
        if not req.group_id:
            return E.INVALID_GROUP_ID, None
        consumer_group = self._consumer_groups.get(req.group_id)
        if consumer_group is not None and not consumer_group.is_(ConsumerGroupState.DEAD):
            return _check_consumer_group(consumer_group, req), consumer_group
        group = self._groups.get(req.group_id)
        if group is None:
            return (E.NONE if req.generation_id < 0 else E.ILLEGAL_GENERATION), None
        if group.is_(S.DEAD):
            # kgroup keeps a deleted group as Dead (docs/coordinator.md); Kafka's ClassicGroup answers
            # a Dead group COORDINATOR_NOT_AVAILABLE.  An identity-less commit starts a fresh group.
            if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
                return E.COORDINATOR_NOT_AVAILABLE, group
            return E.NONE, None
        if req.generation_id < 0 and group.is_(S.EMPTY):
            return E.NONE, group
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            code = group.validate_member(req.member_id, req.group_instance_id)
            if code is not E.NONE:
                return code, group
            if req.generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION, group
        # Without any member identity (TxnOffsetCommit v0-v2) Kafka accepts the commit in any state.
        return E.NONE, group

    def complete(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int) -> None:
        """Write the producer's marker: the coordinator's fold then commits or drops its pending offsets."""
        self._emit(TxnMarkerRecord(producer_id, producer_epoch, commit, coordinator_epoch))


def _check_consumer_group(group: ConsumerGroup, req: TxnOffsetCommitRequest) -> ErrorCode:
    if req.generation_id < 0 and not group.members:
        return E.NONE
    member = group.members.get(req.member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if req.generation_id != member.member_epoch:
        # STALE_MEMBER_EPOCH, which Kafka's validateTransactionalOffsetCommit answers as ILLEGAL_GENERATION.
        return E.ILLEGAL_GENERATION
    return E.NONE


def _answer_all(req: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(tuple(PartitionError(c.topic_partition, code) for c in req.offsets))
