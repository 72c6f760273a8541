"""Transaction coordinators on __transaction_state leaders (issue 26): placement, routing, loading,
answers held until committed, markers until replicated, failover mid-commit, timeouts.

Kafka references: ``TransactionStateManager`` (partitionFor, load, NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS), ``TransactionMarkerChannelManager`` (markers, CompleteX once all are
written) and ``TransactionCoordinator`` (timeouts).  The marker writers are fakes satisfying
``TxnMarkerWriter`` that append to the cluster's partitions: the real ones (``DataPlane`` and
``GroupHosting.write_txn_marker``) are built beside this on other branches.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Union

import pytest

from kgroup.core import messages as m
from kgroup.core import transaction_messages as tx
from kgroup.core.broker import BrokerUnreachable
from kgroup.core.cluster import ClusterConfig, ClusterStateMachine
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC, partition_for_group
from kgroup.core.cluster.transaction_hosting import (
    TRANSACTION_STATE_TOPIC, TransactionHosting, TransactionHostingConfig,
)
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction import TransactionCoordinatorConfig, TransactionState
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import ClusterError, ConfigError
from kgroup.values import TopicPartition

S = TransactionState
TXN = "payments-1"
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
#: One replication round: what a committed append waits at most once every follower fetches.
ROUND_MS = 100


class ClusterMarkerWriter:
    """Appends each marker to its partition's leader log (acks=all), as the real writers do."""

    def __init__(self, cluster: ClusterStateMachine) -> None:
        self.cluster = cluster
        self.written: List[TxnMarker] = []
        self.refuse: Optional[E] = None

    def write_txn_marker(self, marker: TxnMarker, now_ms: int) -> Union[MarkerAppend, E]:
        if self.refuse is not None:
            return self.refuse
        try:
            offset = self.cluster.produce(marker.topic, marker.partition, marker, acks_all=True)
        except ClusterError as error:
            return E(error.error_code)
        self.written.append(marker)
        p = self.cluster.partition(marker.topic, marker.partition)
        return MarkerAppend(marker.topic, marker.partition, p.leader_epoch, offset)


class Harness:
    def __init__(self, brokers=(1, 2, 3), load_ms: int = 0, min_isr: int = 1,
                 coordinator: TransactionCoordinatorConfig = TransactionCoordinatorConfig()) -> None:
        self.cluster = ClusterStateMachine(ClusterConfig(broker_ids=brokers, min_insync_replicas=min_isr,
                                                         replica_fetch_interval_ms=ROUND_MS))
        self.groups = GroupHosting(self.cluster, GroupHostingConfig(offsets_topic_partitions=5))
        self.cluster.create_topic("t", 2, len(brokers))
        self.writer = ClusterMarkerWriter(self.cluster)
        self.hosting = TransactionHosting(self.cluster, TransactionHostingConfig(
            transaction_state_partitions=10, load_time_ms=load_ms, coordinator=coordinator,
            first_producer_id=1000), 0, offsets_writer=self.writer, data_writer=self.writer)
        self.now_ms = 0
        self.answers: Dict[object, object] = {}
        self._keys = iter(range(10**6))

    def _collect(self, deliveries) -> None:
        for d in deliveries:
            self.answers[d.request_key] = d.response

    def send(self, request: object, node_id: Optional[int] = None) -> int:
        key = next(self._keys)
        node = node_id if node_id is not None else self.hosting.coordinator_node(TXN)
        self._collect(self.hosting.send(node, key, request, self.now_ms))
        return key

    def advance_to(self, end_ms: int) -> None:
        """Every deadline up to ``end_ms`` at its own time."""
        while True:
            deadline = self.hosting.get_timer()
            if deadline is None or deadline > end_ms:
                break
            self.now_ms = max(self.now_ms, deadline)
            self._collect(self.hosting.handle_timer(self.now_ms))
        self.now_ms = end_ms
        self._collect(self.hosting.handle_timer(end_ms))

    def call(self, request: object, node_id: Optional[int] = None, within_ms: int = 3 * ROUND_MS):
        key = self.send(request, node_id)
        if key not in self.answers:
            self.advance_to(self.now_ms + within_ms)
        assert key in self.answers, f"no answer to {request!r} within {within_ms} ms"
        return self.answers.pop(key)

    def state(self) -> Optional[TransactionState]:
        coordinator = self.hosting.coordinator_for(TXN)
        metadata = coordinator.transaction(TXN) if coordinator is not None else None
        return None if metadata is None else metadata.state

    def open_transaction(self, timeout_ms: int = 60_000):
        init = self.call(tx.InitProducerIdRequest(TXN, timeout_ms))
        assert init.error_code == E.NONE
        added = self.call(tx.AddPartitionsToTxnRequest(TXN, init.producer_id, init.producer_epoch, (T0, T1)))
        assert added.errors == ((T0, E.NONE), (T1, E.NONE))
        return init.producer_id, init.producer_epoch


def test_the_topic_is_created_like_consumer_offsets_and_ids_placed_by_java_hash():
    """transaction.state.log.num.partitions / replication factor 3 capped at the broker count;
    TransactionStateManager.partitionFor = Utils.abs(transactionalId.hashCode) % partitions."""
    h = Harness(brokers=(1, 2))
    partitions = h.cluster.topics[TRANSACTION_STATE_TOPIC]
    assert len(partitions) == 10 and all(len(p.assigned) == 2 for p in partitions)
    assert h.hosting.partition_for(TXN) == partition_for_group(TXN, 10)
    default = TransactionHostingConfig()
    assert (default.transaction_state_partitions, default.transaction_state_replication_factor) == (50, 3)
    assert default.coordinator.transaction_max_timeout_ms == 900_000
    with pytest.raises(ConfigError):
        TransactionHostingConfig(transaction_state_partitions=0)


def test_find_coordinator_key_type_1_answers_the_leader_of_the_transactions_partition():
    h = Harness()
    request = m.FindCoordinatorRequest(TXN, key_type=tx.TRANSACTION_KEY_TYPE)
    assert h.hosting.handles(request) and not h.hosting.handles(m.FindCoordinatorRequest(TXN))
    answer = h.call(request, node_id=1)
    leader = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN)).leader
    assert (answer.error_code, answer.node_id) == (E.NONE, leader)
    assert (answer.host, answer.port) == h.cluster.config.listener(leader)


def test_other_brokers_answer_not_coordinator_and_a_loading_leader_load_in_progress():
    """TransactionStateManager.getTransactionState: NOT_COORDINATOR off the leader,
    COORDINATOR_LOAD_IN_PROGRESS while it loads."""
    h = Harness(load_ms=500)
    leader = h.hosting.coordinator_node(TXN)
    other = next(b for b in (1, 2, 3) if b != leader)
    init = tx.InitProducerIdRequest(TXN, 60_000)
    assert h.call(init, node_id=other).error_code == E.NOT_COORDINATOR
    assert h.call(init, node_id=leader, within_ms=0).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    h.advance_to(500)
    assert h.call(init, node_id=leader).error_code == E.NONE
    described = h.call(tx.DescribeTransactionsRequest((TXN,)), node_id=other)
    assert described.transactions[0].error_code == E.NOT_COORDINATOR
    # An empty transactional id is INVALID_REQUEST whichever broker is asked.
    for broker in (1, 2, 3):
        assert h.call(tx.EndTxnRequest("", 1, 0, True), node_id=broker).error_code == E.INVALID_REQUEST
        assert h.call(tx.InitProducerIdRequest("", 60_000), node_id=broker).error_code == E.INVALID_REQUEST


def test_an_answer_is_held_until_the_high_watermark_covers_its_record():
    """Records appended acks=all; the InitProducerId answer waits for the followers (as GroupHosting)."""
    h = Harness()
    p = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN))
    for follower in p.assigned:
        if follower != p.leader:
            h.cluster.slow_follower(follower, 1_000)
    key = h.send(tx.InitProducerIdRequest(TXN, 60_000))
    h.advance_to(900)
    assert key not in h.answers and p.leader_log().leo == 1 and p.leader_log().hw == 0
    h.advance_to(1_100)
    assert h.answers[key].error_code == E.NONE and p.leader_log().hw == 1


def test_idempotent_and_transactional_producers_share_one_counter_on_any_broker():
    """KafkaApis.handleInitProducerIdRequest: a null transactional id is answered by any broker."""
    h = Harness()
    first = h.call(tx.InitProducerIdRequest(None, 60_000), node_id=1)
    transactional = h.call(tx.InitProducerIdRequest(TXN, 60_000))
    second = h.call(tx.InitProducerIdRequest(None, 60_000), node_id=3)
    assert [first.producer_id, transactional.producer_id, second.producer_id] == [1000, 1001, 1002]


def test_commit_writes_prepare_then_a_marker_per_partition_then_complete():
    """EndTxn is answered once PrepareCommit is committed; the markers follow (one per partition, with
    the coordinator epoch); CompleteCommit is written once every marker is replicated."""
    h = Harness()
    producer_id, epoch = h.open_transaction()
    offsets = TopicPartition(GROUP_METADATA_TOPIC, partition_for_group("group-a", 5))
    assert h.call(tx.AddOffsetsToTxnRequest(TXN, producer_id, epoch, "group-a")).error_code == E.NONE
    answer = h.call(tx.EndTxnRequest(TXN, producer_id, epoch, committed=True))
    assert answer.error_code == E.NONE
    h.advance_to(h.now_ms + 3 * ROUND_MS)
    slot_epoch = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN)).leader_epoch
    assert sorted((mk.topic, mk.partition) for mk in h.writer.written) == sorted(
        [("t", 0), ("t", 1), (offsets.topic, offsets.partition)])
    assert all(mk.commit and mk.producer_id == producer_id and mk.coordinator_epoch == slot_epoch
               for mk in h.writer.written)
    assert h.state() is S.COMPLETE_COMMIT
    (described,) = h.call(tx.DescribeTransactionsRequest((TXN,))).transactions
    assert (described.state, described.partitions) == ("CompleteCommit", ())
    assert h.call(tx.EndTxnRequest(TXN, producer_id, epoch, committed=True)).error_code == E.NONE   # a retry


def test_failover_mid_prepare_commit_completes_after_the_new_leader_loads():
    """The coordinator's broker dies after PrepareCommit is committed and before its markers are
    written: the new leader of the __transaction_state partition answers COORDINATOR_LOAD_IN_PROGRESS
    while it loads, then finds the PrepareCommit, writes the markers with its own epoch and completes."""
    h = Harness(load_ms=200)
    h.advance_to(200)
    producer_id, epoch = h.open_transaction()
    h.writer.refuse = E.NOT_LEADER_OR_FOLLOWER      # the markers cannot be written yet
    assert h.call(tx.EndTxnRequest(TXN, producer_id, epoch, committed=True)).error_code == E.NONE
    h.advance_to(h.now_ms + 3 * ROUND_MS)
    assert h.state() is S.PREPARE_COMMIT and h.writer.written == []
    old_leader = h.hosting.coordinator_node(TXN)
    old_epoch = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN)).leader_epoch
    h.cluster.kill_broker(old_leader)
    h.writer.refuse = None
    h.advance_to(h.now_ms + 1)
    new_leader = h.hosting.coordinator_node(TXN)
    assert new_leader not in (None, old_leader) and h.hosting.coordinator_for(TXN) is None
    retry = tx.EndTxnRequest(TXN, producer_id, epoch, committed=True)
    assert h.call(retry, within_ms=0).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    h.advance_to(h.now_ms + 200 + 3 * ROUND_MS)
    assert h.state() is S.COMPLETE_COMMIT
    assert sorted(mk.partition for mk in h.writer.written) == [0, 1]
    assert all(mk.commit and mk.coordinator_epoch > old_epoch for mk in h.writer.written)
    assert h.call(retry).error_code == E.NONE
    assert [f[:2] for f in h.hosting.failovers if f[2] == h.hosting.partition_for(TXN)][-1] == (
        old_leader, new_leader)


def test_a_broker_dying_with_a_held_answer_drops_the_connection():
    h = Harness()
    p = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN))
    for follower in p.assigned:
        if follower != p.leader:
            h.cluster.slow_follower(follower, 10_000)
    key = h.send(tx.InitProducerIdRequest(TXN, 60_000))
    h.cluster.kill_broker(p.leader)
    h.advance_to(h.now_ms + 1)
    assert isinstance(h.answers[key], BrokerUnreachable)


def test_a_stalled_producer_past_its_timeout_is_aborted_and_fenced():
    """TransactionCoordinator.abortTimedOutTransactions: the open transaction is aborted with a bumped
    epoch on the cleanup round after its timeout; the markers carry the new epoch; the producer's
    next EndTxn / AddPartitionsToTxn is PRODUCER_FENCED."""
    h = Harness(coordinator=TransactionCoordinatorConfig(abort_timed_out_transaction_cleanup_interval_ms=500))
    producer_id, epoch = h.open_transaction(timeout_ms=1_000)
    started_ms = h.hosting.coordinator_for(TXN).transaction(TXN).start_timestamp_ms
    h.advance_to(started_ms + 1_000)
    assert h.state() is S.ONGOING                      # not past its timeout yet
    h.advance_to(started_ms + 1_000 + 500 + 3 * ROUND_MS)
    assert h.state() is S.COMPLETE_ABORT
    assert sorted((mk.partition, mk.commit, mk.producer_epoch) for mk in h.writer.written) == [
        (0, False, epoch + 1), (1, False, epoch + 1)]
    assert h.call(tx.EndTxnRequest(TXN, producer_id, epoch, committed=True)).error_code == E.PRODUCER_FENCED
    added = h.call(tx.AddPartitionsToTxnRequest(TXN, producer_id, epoch, (T0,)))
    assert added.errors == ((T0, E.PRODUCER_FENCED),)
    again = h.call(tx.InitProducerIdRequest(TXN, 1_000, producer_id, epoch))
    assert again.error_code == E.PRODUCER_FENCED       # KIP-360: its epoch is neither current nor last


def test_list_transactions_answers_each_brokers_own_partitions():
    """ListTransactions goes to every broker; each lists what it coordinates."""
    h = Harness()
    ids = [f"txn-{i}" for i in range(12)]
    for txn in ids:
        answer = h.call(tx.InitProducerIdRequest(txn, 60_000), node_id=h.hosting.coordinator_node(txn))
        assert answer.error_code == E.NONE
    seen = []
    for broker in (1, 2, 3):
        answer = h.call(tx.ListTransactionsRequest(("Empty", "Bogus")), node_id=broker)
        assert answer.error_code == E.NONE and answer.unknown_state_filters == ("Bogus",)
        assert all(h.hosting.coordinator_node(t.transactional_id) == broker for t in answer.transactions)
        seen.extend(t.transactional_id for t in answer.transactions)
    assert sorted(seen) == sorted(ids)


def test_a_refused_append_answers_coordinator_not_available_and_undoes_the_change():
    """Below min.insync.replicas the append fails (NOT_ENOUGH_REPLICAS): the coordinator reloads what
    the log holds, so the id is as if the request never came."""
    h = Harness(min_isr=2)
    assert h.call(tx.InitProducerIdRequest(TXN, 60_000)).error_code == E.NONE
    p = h.cluster.partition(TRANSACTION_STATE_TOPIC, h.hosting.partition_for(TXN))
    for follower in p.assigned:
        if follower != p.leader:
            h.cluster.kill_broker(follower)
    h.advance_to(h.now_ms + 31_000)          # replica.lag.time.max.ms: the ISR shrinks to the leader
    assert p.isr == [p.leader] or set(p.isr) == {p.leader}
    assert h.call(tx.InitProducerIdRequest(TXN, 60_000)).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.hosting.coordinator_for(TXN).transaction(TXN).producer_epoch == 0
