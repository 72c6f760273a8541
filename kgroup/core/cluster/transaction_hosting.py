"""Transaction coordinators hosted on the leaders of ``__transaction_state`` partitions.

Exactly as :class:`~kgroup.core.cluster.group_hosting.GroupHosting` hosts group coordinators on
``__consumer_offsets``: each of the topic's partitions (Kafka's ``transaction.state.log.num.partitions``,
50, replication factor 3 capped at the broker count) has one slot; the broker leading it runs a
:class:`~kgroup.core.transaction.TransactionCoordinator` for the transactional ids that hash to it
(Kafka's ``partitionFor``: ``abs(hashCode) % partitions``).  Records are appended with acks=all and
answers held until the high watermark covers them; a new leader loads the partition's log (and
resumes the markers of transactions it finds in PrepareCommit / PrepareAbort), answering
COORDINATOR_LOAD_IN_PROGRESS meanwhile; other brokers answer NOT_COORDINATOR.

It also owns the cluster's one producer-id counter: InitProducerId without a transactional id is
answered by any broker from it.  Markers go out through :class:`TopicRoutedMarkerWriter`: those for
``__consumer_offsets`` to the group hosting, the others to the data writer the host passes (the wire
server's data plane).  A marker counts as written once its partition's high watermark passed it in
the leader epoch it was appended in; the hosting checks that on the cluster's partitions.
"""
from __future__ import annotations

from collections import deque
from typing import Deque, Hashable, List, Optional, Sequence, Tuple, Union

import attrs

from kgroup.core import error_responses
from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.broker import BrokerUnreachable, Delivery, RequestContext, UnsupportedRequestError
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC, partition_for_group
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction import (
    MarkerStatus, ProducerIdAllocator, TransactionCoordinator, TransactionCoordinatorConfig,
    TransactionResult, TransactionState,
)
from kgroup.core.transaction.log import TRANSACTION_STATE_TOPIC
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker, TxnMarkerWriter
from kgroup.errors import ClusterError, ConfigError
from kgroup.values import TopicPartition

__all__ = [
    "TRANSACTION_STATE_TOPIC", "TopicRoutedMarkerWriter", "TransactionHosting", "TransactionHostingConfig",
]

E = ErrorCode

#: Requests a transaction coordinator answers for one transactional id.
_SINGLE_ID_REQUESTS = (tx.InitProducerIdRequest, tx.AddPartitionsToTxnRequest, tx.AddOffsetsToTxnRequest,
                       tx.EndTxnRequest)
_REQUESTS = _SINGLE_ID_REQUESTS + (tx.DescribeTransactionsRequest, tx.ListTransactionsRequest)


@attrs.frozen
class TransactionHostingConfig:
    #: Kafka's ``transaction.state.log.num.partitions``.
    transaction_state_partitions: int = 50
    #: Kafka's ``transaction.state.log.replication.factor`` (capped at the number of brokers).
    transaction_state_replication_factor: int = 3
    #: How long a new leader takes to load a partition's transactions.
    load_time_ms: int = 100
    coordinator: TransactionCoordinatorConfig = TransactionCoordinatorConfig()
    #: The first producer id handed out (idempotent and transactional producers alike).
    first_producer_id: int = 0
    #: As GroupHostingConfig's: followers fetch a coordinator's write at once.
    eager_replication: bool = False

    def __attrs_post_init__(self) -> None:
        if self.transaction_state_partitions < 1:
            raise ConfigError(
                f"transaction_state_partitions must be >= 1, got {self.transaction_state_partitions}")
        if self.transaction_state_replication_factor < 1:
            raise ConfigError("transaction_state_replication_factor must be >= 1, "
                              f"got {self.transaction_state_replication_factor}")
        if self.load_time_ms < 0:
            raise ConfigError(f"load_time_ms must be >= 0, got {self.load_time_ms}")


class TopicRoutedMarkerWriter:
    """Markers for ``__consumer_offsets`` to the group hosting, every other one to the data writer."""

    def __init__(self, offsets_writer: TxnMarkerWriter, data_writer: TxnMarkerWriter) -> None:
        self.offsets_writer = offsets_writer
        self.data_writer = data_writer

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, ErrorCode]:
        writer = self.offsets_writer if marker.topic == GROUP_METADATA_TOPIC else self.data_writer
        return writer.write_txn_marker(marker, now_ms)


@attrs.define
class _HeldAnswers:
    """Answers released (and markers started) once the slot's log is committed up to ``offset``."""
    leader_epoch: int
    offset: int
    deliveries: Tuple[Delivery, ...]
    prepared: Tuple[str, ...]


@attrs.define
class _TransactionSlot:
    index: int
    leader: Optional[int] = None
    leader_epoch: int = -1
    coordinator: Optional[TransactionCoordinator] = None
    load_due_ms: Optional[int] = None
    held: Deque[_HeldAnswers] = attrs.field(factory=deque)


class TransactionHosting:
    def __init__(self, cluster: ClusterStateMachine,
                 config: TransactionHostingConfig = TransactionHostingConfig(), now_ms: int = 0, *,
                 offsets_writer: TxnMarkerWriter, data_writer: TxnMarkerWriter) -> None:
        self.cluster = cluster
        self.config = config
        self.now_ms = now_ms
        self.producer_ids = ProducerIdAllocator(config.first_producer_id)
        self.marker_writer = TopicRoutedMarkerWriter(offsets_writer, data_writer)
        if TRANSACTION_STATE_TOPIC not in cluster.topics:
            rf = min(config.transaction_state_replication_factor, len(cluster.brokers))
            cluster.create_topic(TRANSACTION_STATE_TOPIC, config.transaction_state_partitions, rf)
        self._slots = [_TransactionSlot(i) for i in range(len(cluster.topics[TRANSACTION_STATE_TOPIC]))]
        #: (old leader, new leader, partition, time) for every coordinator move.
        self.failovers: List[Tuple[Optional[int], Optional[int], int, int]] = []
        self._pending: List[Delivery] = self._sync(now_ms)

    @staticmethod
    def handles(request: object) -> bool:
        """Whether ``request`` is this hosting's (a transaction API, or FindCoordinator for a
        transactional id); group requests go to the group hosting."""
        if isinstance(request, m.FindCoordinatorRequest):
            return request.key_type == tx.TRANSACTION_KEY_TYPE
        return isinstance(request, _REQUESTS)

    # -- queries ----------------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for_group(transactional_id, len(self._slots))

    def coordinator_node(self, transactional_id: str) -> Optional[int]:
        return self._slots[self.partition_for(transactional_id)].leader

    def coordinator_for(self, transactional_id: str) -> Optional[TransactionCoordinator]:
        return self._slots[self.partition_for(transactional_id)].coordinator

    def all_coordinators_loaded(self) -> bool:
        return all(slot.leader is not None and slot.coordinator is not None for slot in self._slots)

    def offsets_partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id`` (AddOffsetsToTxn adds it)."""
        return partition_for_group(group_id, len(self.cluster.topics[GROUP_METADATA_TOPIC]))

    # -- the broker seam --------------------------------------------------------------------------

    def send(self, node_id: Optional[int], request_key: Hashable, request: object, now_ms: int,
             context: Optional[RequestContext] = None) -> List[Delivery]:
        out = self._advance(now_ms)
        if node_id is None or node_id not in self.cluster.live_brokers():
            out.append(Delivery(request_key, BrokerUnreachable(node_id)))
            return out
        if isinstance(request, m.FindCoordinatorRequest) and self.handles(request):
            out.append(Delivery(request_key, self._find_coordinator(request.key)))
        elif isinstance(request, tx.InitProducerIdRequest) and request.transactional_id is None:
            # Any broker answers an idempotent producer (KafkaApis -> ProducerIdManager).
            answer = tx.InitProducerIdResponse(E.NONE, self.producer_ids.generate(), 0)
            out.append(Delivery(request_key, answer))
        elif isinstance(request, tx.ListTransactionsRequest):
            out.append(Delivery(request_key, self._list_transactions(node_id, request, now_ms)))
        elif isinstance(request, tx.DescribeTransactionsRequest):
            out.append(Delivery(request_key, tx.DescribeTransactionsResponse(
                tuple(self._describe(node_id, t) for t in request.transactional_ids))))
        elif isinstance(request, _SINGLE_ID_REQUESTS):
            out.extend(self._single_id(node_id, request_key, request))
        else:
            raise UnsupportedRequestError(f"the transaction hosting cannot handle {type(request).__name__}")
        out.extend(self._release())
        return out

    def _single_id(self, node_id: int, request_key: Hashable, request) -> List[Delivery]:
        """A request about one transactional id, answered by the coordinator of its partition."""
        transactional_id = request.transactional_id
        if not transactional_id:
            # An empty id is INVALID_REQUEST from any broker (TransactionCoordinator checks it first).
            return [Delivery(request_key, error_responses.for_request(request, E.INVALID_REQUEST))]
        slot = self._slots[self.partition_for(transactional_id)]
        serving = self._serving(slot, node_id)
        if isinstance(serving, ErrorCode):
            return [Delivery(request_key, error_responses.for_request(request, serving))]
        return self._apply(slot, serving.handle(request_key, request, self.now_ms))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> List[Tuple[TopicPartition, ErrorCode]]:
        """KIP-890 part 1: what the transactional id's coordinator answers a partition leader's
        AddPartitionsToTxn ``verify_only`` (Kafka's ``AddPartitionsToTxnManager.verifyTransaction``),
        asked in process.  COORDINATOR_NOT_AVAILABLE when its ``__transaction_state`` partition has no
        live leader (``getTransactionCoordinator`` finds no alive node); NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS while the hosting has not loaded the leader's coordinator (a
        failover under way); else :meth:`TransactionCoordinator.verify_partitions`.  A query: it
        changes nothing and does not advance time."""
        def every(code: ErrorCode) -> List[Tuple[TopicPartition, ErrorCode]]:
            return [(tp, code) for tp in partitions]

        if not transactional_id:
            return every(E.INVALID_REQUEST)
        slot = self._slots[self.partition_for(transactional_id)]
        leader = self.cluster.partition(TRANSACTION_STATE_TOPIC, slot.index).leader
        if leader is None or leader not in self.cluster.live_brokers():
            return every(E.COORDINATOR_NOT_AVAILABLE)
        serving = self._serving(slot, leader)
        if isinstance(serving, ErrorCode):
            return every(serving)
        answer = serving.verify_partitions(tx.AddPartitionsToTxnRequest(
            transactional_id, producer_id, producer_epoch, tuple(partitions), verify_only=True))
        return list(answer.errors)

    def handle_timer(self, now_ms: int) -> List[Delivery]:
        out = self._advance(now_ms)
        for slot in self._slots:
            if slot.coordinator is not None:
                out.extend(self._apply(slot, slot.coordinator.handle_timer(self.now_ms)))
        out.extend(self._release())
        return out

    def get_timer(self) -> Optional[int]:
        best = self.cluster.get_timer()
        for slot in self._slots:
            deadline = slot.load_due_ms
            if deadline is None and slot.coordinator is not None:
                deadline = slot.coordinator.get_timer()
            if deadline is not None and (best is None or deadline < best):
                best = deadline
        return best

    # -- time, leadership, loads --------------------------------------------------------------------

    def _advance(self, now_ms: int) -> List[Delivery]:
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
        for slot in self._slots:
            p = self.cluster.partition(TRANSACTION_STATE_TOPIC, slot.index)
            epoch = p.leader_epoch if p.leader is not None else -1
            if (p.leader, epoch) == (slot.leader, slot.leader_epoch):
                continue
            old_leader = slot.leader
            out.extend(self._resign(slot))
            if old_leader != p.leader:
                self.failovers.append((old_leader, p.leader, slot.index, now_ms))
            slot.leader, slot.leader_epoch = p.leader, epoch
            if p.leader is not None:
                slot.load_due_ms = now_ms + self.config.load_time_ms
                if self.config.load_time_ms == 0:
                    self._load(slot)
        return out

    def _resign(self, slot: _TransactionSlot, code: ErrorCode = E.NOT_COORDINATOR) -> List[Delivery]:
        """Drop the slot's coordinator (and its markers in flight); held answers fail with ``code``."""
        if slot.leader is None:
            return []
        reachable = slot.leader in self.cluster.live_brokers()
        waiting = [d for held in slot.held for d in held.deliveries]
        slot.held.clear()
        slot.coordinator = None
        slot.load_due_ms = None
        slot.leader, slot.leader_epoch = None, -1
        if not reachable:
            return [Delivery(d.request_key, BrokerUnreachable(None)) for d in waiting]
        return [Delivery(d.request_key, error_responses.for_response(d.response, code)) for d in waiting]

    def _load(self, slot: _TransactionSlot) -> None:
        p = self.cluster.partition(TRANSACTION_STATE_TOPIC, slot.index)
        if slot.leader is None:
            raise ClusterError(f"{TRANSACTION_STATE_TOPIC}-{slot.index} has no leader",
                               E.NOT_LEADER_OR_FOLLOWER)
        records = [entry.payload for entry in p.logs[slot.leader].entries]
        slot.coordinator = TransactionCoordinator.load(
            records, slot.index, slot.leader_epoch, self.producer_ids, self.offsets_partition_for,
            self.config.coordinator, self.now_ms)
        slot.load_due_ms = None

    # -- routing ----------------------------------------------------------------------------------

    @staticmethod
    def _serving(slot: _TransactionSlot, node_id: int) -> Union[TransactionCoordinator, ErrorCode]:
        if slot.leader != node_id:
            return E.NOT_COORDINATOR
        if slot.coordinator is None:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return slot.coordinator

    def _find_coordinator(self, transactional_id: str) -> m.FindCoordinatorResponse:
        leader = self.coordinator_node(transactional_id)
        if leader is None:
            return m.FindCoordinatorResponse(E.COORDINATOR_NOT_AVAILABLE)
        host, port = self.cluster.config.listener(leader)
        return m.FindCoordinatorResponse(E.NONE, leader, host, port)

    def _describe(self, node_id: int, transactional_id: str) -> tx.DescribedTransaction:
        serving = self._serving(self._slots[self.partition_for(transactional_id)], node_id)
        if isinstance(serving, ErrorCode):
            return tx.DescribedTransaction(serving, transactional_id)
        return serving.describe(transactional_id)

    def _list_transactions(self, node_id: int, request: tx.ListTransactionsRequest,
                           now_ms: int) -> tx.ListTransactionsResponse:
        """What this broker coordinates (Kafka's ListTransactions goes to every broker)."""
        unknown = tuple(s for s in request.state_filters if TransactionState.from_kafka_name(s) is None)
        listed: List[tx.ListedTransaction] = []
        for slot in self._slots:
            if slot.leader != node_id:
                continue
            if slot.coordinator is None:
                return tx.ListTransactionsResponse(E.COORDINATOR_LOAD_IN_PROGRESS)
            listed.extend(slot.coordinator.list_transactions(request, now_ms))
        return tx.ListTransactionsResponse(E.NONE, unknown, listed)

    # -- writes and markers -------------------------------------------------------------------------

    def _apply(self, slot: _TransactionSlot, result: TransactionResult) -> List[Delivery]:
        """Append the result's records; hold its answers (and its markers) until they are committed."""
        if not result.records and not result.deliveries and not result.prepared:
            return []
        offset = self._write(slot, result.records)
        if offset is None:
            # Refused (ISR below min.insync.replicas): answer so, and reload what the log holds.
            failed = [Delivery(d.request_key,
                               error_responses.for_response(d.response, E.COORDINATOR_NOT_AVAILABLE))
                      for d in result.deliveries]
            leader, epoch = slot.leader, slot.leader_epoch
            failed.extend(self._resign(slot, E.COORDINATOR_NOT_AVAILABLE))
            slot.leader, slot.leader_epoch = leader, epoch
            self._load(slot)
            return failed
        slot.held.append(_HeldAnswers(slot.leader_epoch, offset, result.deliveries, result.prepared))
        return []

    def _write(self, slot: _TransactionSlot, records) -> Optional[int]:
        """Append ``records``; the offset the high watermark must reach, or None if refused."""
        p = self.cluster.partition(TRANSACTION_STATE_TOPIC, slot.index)
        try:
            if records:
                self.cluster.produce_many(TRANSACTION_STATE_TOPIC, slot.index, list(records), acks_all=True)
                if self.config.eager_replication:
                    self.cluster.replicate(self.now_ms, partitions=[p])
        except ClusterError:
            return None
        finally:
            p.acked.clear()   # completion is read from the HW, not the cluster's ack list
        assert slot.leader is not None
        return p.logs[slot.leader].leo

    def _committed(self, slot: _TransactionSlot, held: _HeldAnswers) -> bool:
        if slot.leader is None or slot.leader_epoch != held.leader_epoch:
            return False
        return self.cluster.partition(TRANSACTION_STATE_TOPIC, slot.index).logs[slot.leader].hw >= held.offset

    def _release(self) -> List[Delivery]:
        """Answer what is committed, start the markers of committed PrepareCommit / PrepareAbort,
        move every transaction's markers on."""
        out: List[Delivery] = []
        for slot in self._slots:
            while slot.held and self._committed(slot, slot.held[0]):
                held = slot.held.popleft()
                out.extend(held.deliveries)
                if held.prepared and slot.coordinator is not None:
                    slot.coordinator.start_markers(held.prepared, self.now_ms)
            coordinator = slot.coordinator
            if coordinator is not None and len(coordinator.markers):
                out.extend(self._apply(slot, coordinator.write_markers(
                    self.marker_writer, self._marker_status, self.now_ms)))
        return out

    def _marker_status(self, append: MarkerAppend) -> MarkerStatus:
        partitions = self.cluster.topics.get(append.topic)
        if partitions is None or append.partition >= len(partitions):
            return MarkerStatus.GONE
        p = partitions[append.partition]
        if p.leader is None or p.leader_epoch != append.leader_epoch:
            return MarkerStatus.LOST
        return MarkerStatus.WRITTEN if p.logs[p.leader].hw > append.offset else MarkerStatus.PENDING
