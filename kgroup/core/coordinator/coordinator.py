"""The in-memory group coordinator: one entry point for Kafka's classic and consumer group protocols.

After Kafka's GroupCoordinatorShard, which routes each request to the manager that owns it: classic
groups to :class:`~kgroup.core.coordinator.classic_group_manager.ClassicGroupManager` (with the
JoinGroup / SyncGroup / Heartbeat / LeaveGroup handlers of :mod:`.classic_handlers`), KIP-848
consumer groups to :class:`kgroup.core.consumer_group.manager.ConsumerGroupManager`, offsets to
:class:`~kgroup.core.coordinator.offsets.OffsetHandler`, TxnOffsetCommit to
:class:`~kgroup.core.coordinator.txn_offsets.TransactionalOffsets` and the admin APIs to
:class:`~kgroup.core.coordinator.admin.AdminHandler`.  They share one
:class:`~kgroup.core.coordinator.context.GroupCoordinatorContext`: the timer (each deadline
carries its operation), the answers and records of the current call.  A group id has one type
at a time.

Sans-I/O: every call takes ``now_ms`` and returns a :class:`CoordinatorResult` with the responses
that became ready and the records that describe what changed.  ``get_timer()`` says when the next
deadline is due and ``handle_timer(now_ms)`` fires what is due.
"""
from __future__ import annotations

import uuid
from typing import Callable, Hashable, Iterable, Mapping, Optional, Sequence, Union

from kgroup.assignors.server_base import ServerAssignor
from kgroup.core.broker import Delivery
from kgroup.core.consumer_group.context import TopicMetadata, TopicNames, TopicPartitionRacks
from kgroup.core.consumer_group.group import ConsumerGroup, ConsumerGroupState
from kgroup.core.consumer_group.manager import ConsumerGroupManager, session_timer_key
from kgroup.core.consumer_group_messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from kgroup.core.coordinator.admin import AdminHandler
from kgroup.core.coordinator.classic_group_manager import ClassicGroupManager
from kgroup.core.coordinator.classic_handlers import HEARTBEAT_RESPONSES, ClassicGroupHandlers
from kgroup.core.coordinator.context import GroupCoordinatorContext
from kgroup.core.coordinator.group import Group, TransitionObserver, session_key
from kgroup.core.coordinator.offsets import OffsetHandler
from kgroup.core.coordinator.pending_offsets import GroupOffsets, PendingOffsets
from kgroup.core.coordinator.records import (
    GroupMetadataRecord, PersistedGroup, PersistedView, Record, replay_with_pending,
)
from kgroup.core.coordinator.results import CoordinatorResult
from kgroup.core.coordinator.state import GroupState
from kgroup.core.coordinator.txn_offsets import TransactionalOffsets
from kgroup.core.coordinator_common.config import GroupCoordinatorConfig
from kgroup.core.coordinator_common.errors import GroupInvariantViolation
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from kgroup.values import TopicPartition

E = ErrorCode
S = GroupState
_DEFAULT_CONFIG = GroupCoordinatorConfig()
#: What a timer round with nothing due and nothing pending returns (a frozen value, so shared).
_NOTHING = CoordinatorResult()


def _no_topics(topic: str) -> Optional[int]:
    return None


def _no_racks(topic: str) -> Sequence[frozenset]:
    return ()


def _no_topic_names() -> Iterable[str]:
    return ()


def _uuid_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class GroupCoordinator:
    def __init__(self, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
                 member_id_factory: Optional[Callable[[str], str]] = None,
                 on_transition: Optional[TransitionObserver] = None,
                 topic_metadata: TopicMetadata = _no_topics,
                 server_assignors: Optional[Mapping[str, ServerAssignor]] = None,
                 partition_racks: TopicPartitionRacks = _no_racks,
                 topic_names: TopicNames = _no_topic_names) -> None:
        """``topic_metadata`` maps a topic name to its partition count (None: no such topic); only
        KIP-848 consumer groups need it, because their coordinator computes the assignment.
        ``partition_racks`` maps a topic name to each partition's replica racks, for rack-aware
        server assignors (KIP-881).
        ``topic_names`` lists every topic (internal ones too), what a KIP-848 regex subscription is
        resolved against; both are asked again at every heartbeat (that is how topic changes reach the
        coordinator).
        ``server_assignors`` are assignor instances by name used before the registry's."""
        self.config = config
        context = self._context = GroupCoordinatorContext(topic_metadata, partition_racks, topic_names)
        classic = context.classic = self._classic = ClassicGroupManager(
            config, context, member_id_factory=member_id_factory or _uuid_member_id, observer=on_transition)
        # A given factory (tests, the simulator) makes the ids of classic members joining a consumer group
        # too, so a seeded run replays them; by default they are random UUIDs, as in Kafka.
        consumer_member_ids = None if member_id_factory is None else (lambda: member_id_factory("consumer"))
        consumer = context.consumer = self._consumer = ConsumerGroupManager(
            config, context, observer=on_transition, server_assignors=server_assignors,
            member_id_factory=consumer_member_ids)
        self._classic_handlers = handlers = ClassicGroupHandlers(config, context, classic)
        #: Offsets of open transactions; every record this coordinator writes is folded into it.
        self._pending = pending = PendingOffsets()
        self._offsets = OffsetHandler(classic.groups, classic.create_group, classic.schedule_session,
                                      context.emit, consumer.groups, config.offset_metadata_max_bytes,
                                      pending)
        self._txn_offsets = txn_offsets = TransactionalOffsets(
            classic.groups, classic.create_group, consumer.groups, context.emit, pending,
            config.offset_metadata_max_bytes)
        self._admin = AdminHandler(classic.groups, classic.cancel_group_timers, context.emit, consumer.groups,
                                   pending)
        deliver = context.deliver
        offsets, admin = self._offsets, self._admin
        self._handlers: dict[type, Callable[..., None]] = {
            JoinGroupRequest: handlers.join,
            SyncGroupRequest: handlers.sync,
            HeartbeatRequest: handlers.heartbeat,
            LeaveGroupRequest: handlers.leave,
            OffsetCommitRequest: lambda key, req, now_ms: deliver(key, offsets.commit(req, now_ms)),
            OffsetFetchRequest: lambda key, req, now_ms: deliver(key, offsets.fetch(req)),
            OffsetDeleteRequest: lambda key, req, now_ms: deliver(key, offsets.delete(req)),
            TxnOffsetCommitRequest: lambda key, req, now_ms: deliver(key, txn_offsets.commit(req)),
            DescribeGroupsRequest: lambda key, req, now_ms: deliver(key, admin.describe(req)),
            ListGroupsRequest: lambda key, req, now_ms: deliver(key, admin.list(req)),
            DeleteGroupsRequest: lambda key, req, now_ms: deliver(key, admin.delete(req)),
            ConsumerGroupHeartbeatRequest:
                lambda key, req, now_ms: deliver(key, consumer.heartbeat(req, now_ms)),
            ConsumerGroupDescribeRequest: lambda key, req, now_ms: deliver(key, consumer.describe(req)),
        }

    # -- public API ------------------------------------------------------------

    def handle(self, request_key: Hashable, request: object, now_ms: int) -> CoordinatorResult:
        if type(request) is HeartbeatRequest:
            # Hot path: a heartbeat changes no persisted state, so it skips the record flush.
            response = HEARTBEAT_RESPONSES[self._classic_handlers.heartbeat_code(request, now_ms)]
            return CoordinatorResult((Delivery(request_key, response),))
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"GroupCoordinator cannot handle {type(request).__name__}")
        try:
            handler(request_key, request, now_ms)
        except Exception:
            # The host answers a request that raised (an InProcessHub with UNKNOWN_SERVER_ERROR):
            # nothing queued for it may be released later as a second answer.
            context = self._context
            context.deliveries = [d for d in context.deliveries if d.request_key != request_key]
            raise
        return self._flush()

    def handle_timer(self, now_ms: int) -> CoordinatorResult:
        """Run every timer due at ``now_ms`` (each runs the operation it was scheduled with)."""
        context = self._context
        deadline = context.timer.get_timer()
        if (deadline is None or deadline > now_ms) and not (
                context.records or context.deliveries or self._classic.has_unwritten_changes):
            return _NOTHING  # nothing due and nothing to flush: what _flush would return
        context.timer.handle_timer(now_ms)
        return self._flush()

    def complete_transaction(self, producer_id: int, producer_epoch: int, commit: bool, now_ms: int,
                             coordinator_epoch: int = -1) -> CoordinatorResult:
        """The transaction's marker reached this offsets partition (Kafka's completeTransaction):
        the result writes the marker record, and the producer's pending offsets are now committed
        (``commit``) or dropped.  The host checks the epoch first (:meth:`is_stale_producer_epoch`)."""
        if self.is_stale_producer_epoch(producer_id, producer_epoch):
            raise ValueError(f"producer {producer_id} already wrote here with an epoch newer than "
                             f"{producer_epoch}: the marker is a zombie's (INVALID_PRODUCER_EPOCH)")
        self._txn_offsets.complete(producer_id, producer_epoch, commit, coordinator_epoch)
        return self._flush()

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition]) -> CoordinatorResult:
        """The partitions' topics were deleted (Kafka's GroupCoordinatorShard.onPartitionsDeleted):
        the result writes a tombstone for every group's offset of them, committed or pending."""
        self._offsets.delete_partitions(frozenset(partitions))
        return self._flush()

    def is_stale_producer_epoch(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer already wrote to this partition with a newer epoch."""
        return self._pending.is_stale_epoch(producer_id, producer_epoch)

    def get_timer(self) -> Optional[int]:
        """The earliest deadline (absolute, ms), None when no timer is armed."""
        return self._context.timer.get_timer()

    def group_state(self, group_id: str) -> Optional[GroupState]:
        group = self._classic.groups.get(group_id)
        return None if group is None else group.state

    def consumer_group(self, group_id: str) -> Optional[ConsumerGroup]:
        """The KIP-848 consumer group under ``group_id`` (None if there is none); read, never change it."""
        return self._consumer.group(group_id)

    def session_deadline_ms(self, group_id: str, member_id: str) -> Optional[int]:
        """When the member (or pending member) expires unless it is heard from."""
        return self._context.timer.deadline_of(session_key(group_id, member_id))

    def group_ids(self) -> list[str]:
        classic = [gid for gid, group in self._classic.groups.items() if not group.is_(S.DEAD)]
        consumer = [gid for gid, cg in self._consumer.groups.items() if not cg.is_(ConsumerGroupState.DEAD)]
        return classic + consumer

    def persisted_view(self) -> PersistedView:
        groups = {}
        offsets = {}
        for gid, group in self._classic.groups.items():
            if group.is_(S.DEAD):
                continue
            members = {mid: m.record(gid) for mid, m in group.members.items()}
            groups[gid] = PersistedGroup(group.header_record(), members)
            if group.offsets:
                offsets[gid] = dict(group.offsets)
        consumer_groups = {}
        for gid, cg in self._consumer.groups.items():
            if cg.is_(ConsumerGroupState.DEAD):
                continue
            consumer_groups[gid] = cg.persisted()
            if cg.offsets:
                offsets[gid] = dict(cg.offsets)
        return PersistedView(groups=groups, offsets=offsets, consumer_groups=consumer_groups,
                             pending_offsets=self._pending.view())

    def assert_invariants(self) -> None:
        """Check every group's own invariants and the timers the coordinator keeps for them.

        Raises GroupInvariantViolation naming the first violation; O(members), for tests.
        """
        self._classic.assert_invariants()
        timer = self._context.timer
        for gid, cg in self._consumer.groups.items():
            cg.assert_invariants()
            if self._classic.group_state_name(gid) is not None and not cg.is_(ConsumerGroupState.DEAD):
                raise GroupInvariantViolation(gid, "the id names a classic and a consumer group")
            for member_id in cg.members:
                if session_timer_key(gid, member_id) not in timer:
                    raise GroupInvariantViolation(gid, f"consumer group member {member_id!r} never expires")

    @classmethod
    def load(cls, records: Iterable[Record], now_ms: int, config: GroupCoordinatorConfig = _DEFAULT_CONFIG, *,
             member_id_factory: Optional[Callable[[str], str]] = None,
             on_transition: Optional[TransitionObserver] = None,
             topic_metadata: TopicMetadata = _no_topics,
             server_assignors: Optional[Mapping[str, ServerAssignor]] = None,
             partition_racks: TopicPartitionRacks = _no_racks,
             topic_names: TopicNames = _no_topic_names) -> "GroupCoordinator":
        """Rebuild from records, e.g. when this coordinator takes over a partition.

        Groups are replayed through the same Group methods as live requests (``Group.add``,
        then ``Group.restore`` for the header), as Kafka's GroupMetadataManager.replay adds
        loaded members with ClassicGroup.add.  Parked requests are not in the records: members
        simply retry.  Every loaded member gets a fresh session deadline, as Kafka does on load.
        """
        coordinator = cls(config, member_id_factory=member_id_factory, on_transition=on_transition,
                          topic_metadata=topic_metadata, server_assignors=server_assignors,
                          partition_racks=partition_racks, topic_names=topic_names)
        view, pending = replay_with_pending(records)
        coordinator._pending.take_over(pending)
        for gid, persisted_cg in view.consumer_groups.items():
            coordinator._consumer.load_group(gid, persisted_cg, view.offsets.get(gid, {}), now_ms)
        for gid, persisted in view.groups.items():
            coordinator._classic.load_group(gid, persisted, view.offsets.get(gid, {}), now_ms)
        for gid, offsets in view.offsets.items():
            if gid not in view.groups and gid not in view.consumer_groups:
                # Offsets of a group with no record of its own: Kafka's OffsetMetadataManager.replay
                # creates the simple group a commit would have (getOrMaybeCreateClassicGroup: Empty, no
                # protocol type) and writes nothing for it, so neither does this load.
                simple = PersistedGroup(GroupMetadataRecord(gid, S.EMPTY.value, 0, None, None, None), {})
                coordinator._classic.load_group(gid, simple, offsets, now_ms)
        # A group that changed state while loading has its new header written by the next call's flush.
        return coordinator

    def resign(self, code: ErrorCode = E.NOT_COORDINATOR) -> CoordinatorResult:
        """Answer every parked JoinGroup / SyncGroup with ``code``; the host drops this coordinator.

        Called when the broker stops leading the group's offsets partition
        (or must revert to what the log holds): parked members learn at once
        that they have to look for the coordinator again.
        """
        deliveries = self._classic.resign(code)
        self._consumer.clear()
        context = self._context
        context.timer.clear()
        context.deliveries = []
        context.records.clear()
        return CoordinatorResult(tuple(deliveries))

    # -- plumbing --------------------------------------------------------------

    def _flush(self) -> CoordinatorResult:
        context = self._context
        records = list(context.records)
        context.records.clear()
        # The same fold as replay, in write order; a COMMIT marker hands back offsets to make visible.
        fold = self._pending.apply
        for record in records:
            committed = fold(record)
            if committed:
                self._commit_transactional(committed)
        # Classic groups' headers and members last: they change no offsets.
        records.extend(self._classic.take_records())
        result = CoordinatorResult(tuple(context.deliveries), tuple(records))
        context.deliveries = []
        return result

    def _commit_transactional(self, committed: GroupOffsets) -> None:
        """Make a committed transaction's offsets the groups' (the marker record already says so)."""
        for gid, group_offsets in committed.items():
            group: Union[ConsumerGroup, Group, None] = self._consumer.group(gid)
            if group is None:
                group = self._classic.groups.get(gid)
                if group is None or group.is_(S.DEAD):
                    # A group deleted since the commit had its pending offsets tombstoned with it, so this
                    # is a simple group replay creates too (Kafka's getOrMaybeCreateClassicGroup).
                    group = self._classic.create_group(gid)
            for tp, om in group_offsets.items():
                group.commit_offset(tp, om)  # the record is the marker, already written
