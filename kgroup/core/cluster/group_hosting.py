"""Group coordinators hosted on the leaders of ``__consumer_offsets`` partitions.

Each offsets partition has one slot.  The broker leading the partition runs a
:class:`GroupCoordinator` for the groups that hash to it; every record the
coordinator emits is appended to the partition with acks=all, and the
responses of that step are held until the leader's high watermark covers
everything written so far (Kafka's coordinator runtime does the same, so a
member never sees state a failover could lose).  When leadership moves, the
old coordinator resigns (parked requests answer ``NOT_COORDINATOR``, held
responses fail) and the new leader loads the partition's log; until the load
completes it answers ``COORDINATOR_LOAD_IN_PROGRESS``.  Requests to a broker
that does not lead the group's partition answer ``NOT_COORDINATOR``; requests
to a dead or isolated broker complete as :class:`BrokerUnreachable`.
GroupHosting is a :class:`kgroup.core.broker.BrokerBackend`: the seam a
transport talks to.

Sans-I/O like the rest of the core: every call takes ``now_ms`` and returns
the deliveries that became ready.  The fault-injection methods wrap the
cluster's and return deliveries too, because a failover answers parked
requests.
"""
from __future__ import annotations

from collections import deque
from typing import (
    Any, Callable, Deque, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, Union, cast,
)

import attrs

from kgroup.core import consumer_group_messages as cg
from kgroup.core import error_responses
from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.broker import BrokerUnreachable, RequestContext, UnsupportedRequestError, with_context
from kgroup.core.cluster.group_txn_markers import write_txn_marker
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC, INTERNAL_TOPICS, partition_for_group
from kgroup.core.cluster.partition import Partition
from kgroup.core.cluster.replica_log import ReplicaLog
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.coordinator import CoordinatorResult, Delivery, GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ClusterError, ConfigError
from kgroup.values import TopicPartition

__all__ = ["BrokerUnreachable", "GroupHosting", "GroupHostingConfig"]

E = ErrorCode

_SINGLE_GROUP_REQUESTS = (m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest, m.LeaveGroupRequest,
                          m.OffsetCommitRequest, m.OffsetFetchRequest, m.OffsetDeleteRequest,
                          m.TxnOffsetCommitRequest, cg.ConsumerGroupHeartbeatRequest)
_MULTI_GROUP_REQUESTS = (m.DescribeGroupsRequest, m.DeleteGroupsRequest, cg.ConsumerGroupDescribeRequest)


@attrs.frozen
class GroupHostingConfig:
    #: Kafka's ``offsets.topic.num.partitions``.
    offsets_topic_partitions: int = 50
    #: Kafka's ``offsets.topic.replication.factor`` (capped at the number of brokers).
    offsets_topic_replication_factor: int = 3
    #: How long a new leader takes to load a partition's groups.
    group_load_time_ms: int = 100
    coordinator: GroupCoordinatorConfig = GroupCoordinatorConfig()
    #: Let followers fetch a coordinator's write at once (parked follower fetches, as in Kafka)
    #: instead of at the next periodic replication round; a wire server turns it on so group
    #: responses are not held for up to ``replica_fetch_interval_ms``.
    eager_replication: bool = False

    def __attrs_post_init__(self) -> None:
        if self.offsets_topic_partitions < 1:
            raise ConfigError(f"offsets_topic_partitions must be >= 1, got {self.offsets_topic_partitions}")
        if self.offsets_topic_replication_factor < 1:
            raise ConfigError(
                f"offsets_topic_replication_factor must be >= 1, got {self.offsets_topic_replication_factor}")
        if self.group_load_time_ms < 0:
            raise ConfigError(f"group_load_time_ms must be >= 0, got {self.group_load_time_ms}")


@attrs.define
class _Held:
    """Responses released once every (slot, epoch) listed has committed up to its offset."""
    waits: Tuple[Tuple[int, int, int], ...]
    deliveries: Tuple[Delivery, ...]


@attrs.define
class _Slot:
    index: int
    leader: Optional[int] = None
    leader_epoch: int = -1
    coordinator: Optional[GroupCoordinator] = None
    load_due_ms: Optional[int] = None
    #: Single-slot holds, in write order (their offsets never decrease).
    held: Deque[_Held] = attrs.field(factory=deque)

    def leader_log(self, partition: Partition) -> ReplicaLog:
        # A slot loads and writes only while it has a leader: _sync schedules a load only then, and
        # _serving hands out only a slot the asking broker leads.
        if self.leader is None:
            raise ClusterError(f"{GROUP_METADATA_TOPIC}-{self.index} has no leader", E.NOT_LEADER_OR_FOLLOWER)
        return partition.logs[self.leader]


class GroupHosting:
    def __init__(self, cluster: ClusterStateMachine, config: GroupHostingConfig = GroupHostingConfig(),
                 now_ms: int = 0, *, member_id_factory: Optional[Callable[[str], str]] = None,
                 on_transition=None) -> None:
        self.cluster = cluster
        self.config = config
        self._member_id_factory = member_id_factory
        self._on_transition = on_transition
        self.now_ms = now_ms
        if GROUP_METADATA_TOPIC not in cluster.topics:
            rf = min(config.offsets_topic_replication_factor, len(cluster.brokers))
            cluster.create_topic(GROUP_METADATA_TOPIC, config.offsets_topic_partitions, rf)
        self._slots = [_Slot(i) for i in range(len(cluster.topics[GROUP_METADATA_TOPIC]))]
        self._slot_of_group: Dict[str, int] = {}
        #: Holds that span several slots (DeleteGroups over groups on different partitions).
        self._multi_held: List[_Held] = []
        #: (old leader, new leader, group partition, time) for every coordinator move.
        self.failovers: List[Tuple[Optional[int], Optional[int], int, int]] = []
        self._pending: List[Delivery] = self._sync(now_ms)
        cluster.topic_deletion_listeners.append(self._topic_deleted)

    # -- queries ------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        # Asked for every request: the Java string hash is Python code, so each group's answer is kept
        # (the slot count never changes).
        index = self._slot_of_group.get(group_id)
        if index is None:
            if len(self._slot_of_group) >= 10_000:
                self._slot_of_group.clear()  # bounded: clients name the groups
            index = self._slot_of_group[group_id] = partition_for_group(group_id, len(self._slots))
        return index

    def coordinator_node(self, group_id: str) -> Optional[int]:
        """The broker coordinating ``group_id`` (None while its partition has no leader)."""
        return self._slots[self.partition_for(group_id)].leader

    def coordinator_for(self, group_id: str) -> Optional[GroupCoordinator]:
        """The loaded coordinator of ``group_id`` (None while loading or leaderless)."""
        return self._slots[self.partition_for(group_id)].coordinator

    def all_coordinators_loaded(self) -> bool:
        """Every ``__consumer_offsets`` partition has a leader whose coordinator has loaded it: any
        group request is then answered by a coordinator, none with COORDINATOR_LOAD_IN_PROGRESS."""
        return all(slot.leader is not None and slot.coordinator is not None for slot in self._slots)

    def group_state(self, group_id: str):
        """The group's state (a classic GroupState or a KIP-848 ConsumerGroupState), None if unknown."""
        coordinator = self.coordinator_for(group_id)
        if coordinator is None:
            return None
        consumer_group = coordinator.consumer_group(group_id)
        return coordinator.group_state(group_id) if consumer_group is None else consumer_group.state

    # -- the broker seam (kgroup.core.broker.BrokerBackend); markers: TxnMarkerWriter (group_txn_markers.py)
    write_txn_marker = write_txn_marker

    def send(self, node_id: Optional[int], request_key: Hashable, request: object, now_ms: int,
             context: Optional[RequestContext] = None) -> List[Delivery]:
        out = self._advance(now_ms)
        live = self.cluster.live_brokers()  # once: nothing below changes the brokers before the check
        if node_id is None:
            node_id = min(live) if live else None
        if node_id is None or node_id not in live:
            out.append(Delivery(request_key, BrokerUnreachable(node_id)))
            return out
        if isinstance(request, m.FindCoordinatorRequest):
            out.append(Delivery(request_key, self._find_coordinator(request)))
        elif isinstance(request, m.ListGroupsRequest):
            out.append(Delivery(request_key, self._list_groups(node_id, request, now_ms)))
        elif isinstance(request, _MULTI_GROUP_REQUESTS):
            out.extend(self._multi_group(node_id, request_key, request, now_ms))
        elif isinstance(request, _SINGLE_GROUP_REQUESTS):
            slot = self._slots[self.partition_for(request.group_id)]
            serving = self._serving(slot, node_id)
            if isinstance(serving, ErrorCode):
                out.append(Delivery(request_key, error_responses.for_request(request, serving)))
            else:
                handled = serving.handle(request_key, with_context(request, context), now_ms)
                out.extend(self._apply(slot, handled))
        else:
            raise UnsupportedRequestError(f"the in-memory cluster cannot handle {type(request).__name__}")
        out.extend(self._release())
        return out

    def handle_timer(self, now_ms: int) -> List[Delivery]:
        out = self._advance(now_ms)
        for slot in self._slots:
            if slot.coordinator is not None:
                out.extend(self._apply(slot, slot.coordinator.handle_timer(now_ms)))
        out.extend(self._release())
        return out

    def get_timer(self) -> Optional[int]:
        best = self.cluster.get_timer()
        for slot in self._slots:
            deadline = slot.load_due_ms
            if deadline is None and slot.coordinator is not None:
                deadline = slot.coordinator.get_timer()
            if deadline is not None and deadline < best:
                best = deadline
        return best

    # -- topic deletion -------------------------------------------------------------

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition]) -> List[Delivery]:
        """The partitions' topics were deleted (Kafka's GroupCoordinatorService.onPartitionsDeleted):
        every loaded coordinator writes a tombstone of each of its groups' offsets of them (acks=all,
        like any coordinator write), so OffsetFetch, a failover's reload and a re-created topic of the
        same name no longer see them.  A slot that is loading or has no leader keeps its offsets:
        Kafka's scheduleWriteAllOperation fails on such a shard (COORDINATOR_LOAD_IN_PROGRESS) and the
        service logs and swallows the error.  Returns what the step released."""
        deleted = frozenset(partitions)
        out: List[Delivery] = []
        for slot in self._slots:
            if slot.leader is not None and slot.coordinator is not None:
                out.extend(self._apply(slot, slot.coordinator.on_partitions_deleted(deleted)))
        return out + self._release()

    def delete_topic(self, topic: str, now_ms: int) -> List[Delivery]:
        """Delete ``topic`` from the cluster (its offsets go with it) and return what that released."""
        if topic in INTERNAL_TOPICS:
            raise ClusterError(f"{topic} is internal: it cannot be deleted", E.INVALID_TOPIC_EXCEPTION)
        if topic not in self.cluster.topics:
            raise ClusterError(f"unknown topic {topic}", E.UNKNOWN_TOPIC_OR_PARTITION)
        out = self._advance(now_ms)
        self.cluster.delete_topic(topic)  # the listener (_topic_deleted) writes the tombstones
        out, self._pending = out + self._pending, []
        return out + self._release()

    def _topic_deleted(self, topic: str, partition_count: int) -> None:
        """The cluster deleted ``topic`` (a topic_deletion_listeners callback): its partitions' offsets
        go.  What this releases is returned by the next ``send`` / ``handle_timer``, as a marker's is."""
        if topic in INTERNAL_TOPICS:
            return  # the cluster's own topics hold no committed offsets (DeleteTopics refuses them)
        self._pending.extend(self.on_partitions_deleted(
            TopicPartition(topic, index) for index in range(partition_count)))

    # -- fault injection (each returns the deliveries the failover produced) -------

    def kill_broker(self, broker: int, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.kill_broker, broker)

    def restart_broker(self, broker: int, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.restart_broker, broker)

    def controlled_shutdown(self, broker: int, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.controlled_shutdown, broker)

    def isolate_broker(self, broker: int, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.isolate_broker, broker)

    def heal_broker(self, broker: int, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.heal_broker, broker)

    def elect_preferred_leaders(self, now_ms: int) -> List[Delivery]:
        return self._fault(now_ms, self.cluster.elect_preferred_leaders)

    def _fault(self, now_ms: int, action, *args) -> List[Delivery]:
        out = self._advance(now_ms)
        action(*args)
        out.extend(self._sync(now_ms))
        out.extend(self._release())
        return out

    # -- time -----------------------------------------------------------------------

    def _advance(self, now_ms: int) -> List[Delivery]:
        """Run replication up to ``now_ms``, follow leadership, finish due loads."""
        self.now_ms = max(self.now_ms, now_ms)
        out, self._pending = self._pending, []
        self.cluster.handle_timer(self.now_ms)
        out.extend(self._sync(self.now_ms))
        for slot in self._slots:
            if slot.load_due_ms is not None and slot.load_due_ms <= self.now_ms:
                self._load(slot)
        return out

    def _sync(self, now_ms: int) -> List[Delivery]:
        out: List[Delivery] = []
        partitions = self.cluster.topics[GROUP_METADATA_TOPIC]
        for slot in self._slots:
            # Runs before every request and timer round: compared field by field, no tuples built.
            p = partitions[slot.index]
            leader = p.leader
            if leader == slot.leader and (p.leader_epoch if leader is not None else -1) == slot.leader_epoch:
                continue
            old_leader = slot.leader
            out.extend(self._resign(slot))
            if old_leader != p.leader:
                self.failovers.append((old_leader, p.leader, slot.index, now_ms))
            slot.leader = p.leader
            slot.leader_epoch = p.leader_epoch if p.leader is not None else -1
            if p.leader is not None:
                slot.load_due_ms = now_ms + self.config.group_load_time_ms
                if self.config.group_load_time_ms == 0:
                    self._load(slot)
        return out

    def _resign(self, slot: _Slot, code: ErrorCode = E.NOT_COORDINATOR) -> List[Delivery]:
        """Drop the slot's coordinator; parked and held requests learn it is gone."""
        if slot.leader is None:
            return []
        reachable = slot.leader in self.cluster.live_brokers()
        waiting: List[Delivery] = []
        if slot.coordinator is not None:
            waiting.extend(slot.coordinator.resign(code).deliveries)
        for held in slot.held:
            waiting.extend(held.deliveries)
        slot.held.clear()
        still = []
        for held in self._multi_held:
            if any(index == slot.index for index, _, _ in held.waits):
                waiting.extend(held.deliveries)
            else:
                still.append(held)
        self._multi_held = still
        slot.coordinator = None
        slot.load_due_ms = None
        slot.leader = None
        slot.leader_epoch = -1
        return [self._fail(d, code, reachable) for d in waiting]

    @staticmethod
    def _fail(delivery: Delivery, code: ErrorCode, reachable: bool) -> Delivery:
        if not reachable:
            # The broker died with the request on it: the client sees its connection drop.
            return Delivery(delivery.request_key, BrokerUnreachable(None))
        return Delivery(delivery.request_key, error_responses.for_response(delivery.response, code))

    def _load(self, slot: _Slot) -> None:
        p = self.cluster.partition(GROUP_METADATA_TOPIC, slot.index)
        records = [entry.payload for entry in slot.leader_log(p).entries]
        slot.coordinator = GroupCoordinator.load(
            records, self.now_ms, self.config.coordinator,
            member_id_factory=self._member_id_factory, on_transition=self._on_transition,
            topic_metadata=self._partition_count, partition_racks=self._partition_racks,
            topic_names=self._topic_names)
        slot.load_due_ms = None

    def _partition_count(self, topic: str) -> Optional[int]:
        """What a KIP-848 coordinator assigns from: the partition count of any topic, internal ones too
        (Kafka's coordinator reads every topic of its metadata image)."""
        if topic not in self.cluster.topics:
            return None
        return len(self.cluster.topics[topic])

    def _partition_racks(self, topic: str) -> list[frozenset]:
        """Each partition's replica racks (KIP-881), for rack-aware server assignors: the racks of its
        assigned replicas' brokers, as ``broker_racks`` configures them."""
        if topic not in self.cluster.topics:
            return []
        rack_of = dict(self.cluster.config.broker_racks)
        if not rack_of:
            return []
        racks_of_replicas: dict[tuple, frozenset] = {}  # a few replica sets, a million partitions
        out = []
        for partition in self.cluster.topics[topic]:
            replicas = tuple(partition.assigned)
            racks = racks_of_replicas.get(replicas)
            if racks is None:
                racks = racks_of_replicas[replicas] = frozenset(
                    rack_of[b] for b in replicas if b in rack_of)
            out.append(racks)
        return out

    def _topic_names(self) -> list[str]:
        """What a KIP-848 regex subscription is resolved against: every topic, internal ones too, as
        Kafka's coordinator matches its whole metadata image (franz-go's Test848RegexBrokerResolves)."""
        return list(self.cluster.topics)

    # -- routing --------------------------------------------------------------------

    def _serving(self, slot: _Slot, node_id: int) -> Union[GroupCoordinator, ErrorCode]:
        """The slot's loaded coordinator if ``node_id`` leads the slot, else the error that broker answers."""
        if slot.leader != node_id:
            return E.NOT_COORDINATOR
        if slot.coordinator is None:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return slot.coordinator

    def _find_coordinator(self, request: m.FindCoordinatorRequest) -> m.FindCoordinatorResponse:
        if request.key_type == tx.TRANSACTION_KEY_TYPE:
            return m.FindCoordinatorResponse(E.COORDINATOR_NOT_AVAILABLE)  # no transaction hosting here
        if request.key_type != 0:
            # Kafka's FindCoordinatorRequest.CoordinatorType.forId refuses an unknown key type, and
            # KafkaApis.getCoordinator a share key (2) below v6 (every version served here).
            return m.FindCoordinatorResponse(E.INVALID_REQUEST)
        leader = self.coordinator_node(request.key)
        if leader is None:
            return m.FindCoordinatorResponse(E.COORDINATOR_NOT_AVAILABLE)
        host, port = self.cluster.config.listener(leader)
        return m.FindCoordinatorResponse(E.NONE, leader, host, port)

    def _list_groups(self, node_id: int, request: m.ListGroupsRequest, now_ms: int) -> m.ListGroupsResponse:
        groups: list = []
        for slot in self._slots:
            if slot.leader != node_id:
                continue
            if slot.coordinator is None:
                return m.ListGroupsResponse(E.COORDINATOR_LOAD_IN_PROGRESS)
            result = slot.coordinator.handle(None, request, now_ms)
            # A coordinator answers a ListGroupsRequest with a ListGroupsResponse, at once.
            groups.extend(cast(m.ListGroupsResponse, result.deliveries[0].response).groups)
        return m.ListGroupsResponse(E.NONE, tuple(groups))

    def _multi_group(self, node_id: int, request_key: Hashable, request, now_ms: int) -> List[Delivery]:
        """DescribeGroups / DeleteGroups: each group answered by its own coordinator, one reply."""
        # One single-group answer per group, all of the request's own response type.
        parts: List[Any] = []
        waits = []
        describes_consumer_groups = isinstance(request, cg.ConsumerGroupDescribeRequest)
        group_ids = request.group_ids if describes_consumer_groups else request.groups
        for group_id in group_ids:
            single = type(request)((group_id,))
            slot = self._slots[self.partition_for(group_id)]
            serving = self._serving(slot, node_id)
            if isinstance(serving, ErrorCode):
                parts.append(error_responses.for_request(single, serving))
                continue
            result = serving.handle(None, single, now_ms)
            parts.append(result.deliveries[0].response)
            waits.append(self._write(slot, result.records))
        response: object
        if isinstance(request, m.DescribeGroupsRequest):
            response = m.DescribeGroupsResponse(tuple(g for part in parts for g in part.groups))
        elif isinstance(request, cg.ConsumerGroupDescribeRequest):
            response = cg.ConsumerGroupDescribeResponse(tuple(g for part in parts for g in part.groups))
        else:
            response = m.DeleteGroupsResponse(tuple(r for part in parts for r in part.results))
        held = _Held(tuple(w for w in waits if w is not None), (Delivery(request_key, response),))
        if any(w is None for w in waits):
            refused = error_responses.for_response(response, E.COORDINATOR_NOT_AVAILABLE)
            return [Delivery(request_key, refused)]
        self._multi_held.append(held)
        return []

    # -- writes -----------------------------------------------------------------------

    def _apply(self, slot: _Slot, result: CoordinatorResult) -> List[Delivery]:
        """Append the result's records; hold its responses until they are committed."""
        if not result.records and not result.deliveries:
            # Nothing to append or hold (a timer round with nothing due): all _write would do.
            self.cluster.partition(GROUP_METADATA_TOPIC, slot.index).acked.clear()
            return []
        wait = self._write(slot, result.records)
        if wait is None:
            # The append was refused (ISR below min.insync.replicas): revert to what the log holds.
            failed = [self._fail(d, E.COORDINATOR_NOT_AVAILABLE, True) for d in result.deliveries]
            failed.extend(self._revert(slot))
            return failed
        if result.deliveries:
            slot.held.append(_Held((wait,), result.deliveries))
        return []

    def _write(self, slot: _Slot, records: Sequence) -> Optional[Tuple[int, int, int]]:
        """Append ``records``; return (slot, epoch, offset to commit) or None if refused."""
        p = self.cluster.partition(GROUP_METADATA_TOPIC, slot.index)
        try:
            if records:
                # One append of them all: what one append each does (produce_many), checked once.
                self.cluster.produce_many(GROUP_METADATA_TOPIC, slot.index, records, acks_all=True)
            if records and self.config.eager_replication:
                self.cluster.replicate(self.now_ms, partitions=[p])
        except ClusterError:
            return None
        finally:
            # Completion is tracked here by the HW, not through the cluster's ack list.
            p.acked.clear()
        return (slot.index, slot.leader_epoch, slot.leader_log(p).leo)

    def _revert(self, slot: _Slot) -> List[Delivery]:
        leader, epoch = slot.leader, slot.leader_epoch
        deliveries = self._resign(slot, E.COORDINATOR_NOT_AVAILABLE)
        slot.leader, slot.leader_epoch = leader, epoch
        self._load(slot)
        return deliveries

    def _committed(self, wait: Tuple[int, int, int]) -> bool:
        index, epoch, offset = wait
        slot = self._slots[index]
        if slot.leader_epoch != epoch or slot.leader is None:
            return False
        return self.cluster.partition(GROUP_METADATA_TOPIC, index).logs[slot.leader].hw >= offset

    def _release(self) -> List[Delivery]:
        out: List[Delivery] = []
        for slot in self._slots:
            while slot.held and self._committed(slot.held[0].waits[0]):
                out.extend(slot.held.popleft().deliveries)
        if self._multi_held:
            still = []
            for held in self._multi_held:
                if all(self._committed(w) for w in held.waits):
                    out.extend(held.deliveries)
                else:
                    still.append(held)
            self._multi_held = still
        return out
