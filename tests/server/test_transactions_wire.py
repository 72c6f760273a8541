"""The transaction APIs over the wire (issue 26): raw kafka-python requests to a real 3-broker
``KafkaServer`` on loopback, answers compared with what Kafka's ``KafkaApis`` and
``TransactionCoordinator`` give (including INVALID_PRODUCER_EPOCH for the versions before KIP-588's
PRODUCER_FENCED).

The markers an EndTxn sets off are written by ``DataPlane.write_txn_marker`` and
``GroupHosting.write_txn_marker``, built beside the coordinator on other branches of issue 26;
where a class does not have its method yet, ``marker_writers`` lends it one that appends the marker
to the partition (and does nothing once the real one exists).
"""
from __future__ import annotations

import time

import pytest
from kafka.protocol.admin import (
    DescribeTransactionsRequest, ListTransactionsRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest,
)

from kgroup.core.cluster.group_hosting import GroupHosting
from kgroup.core.error_codes import ErrorCode as E
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.errors import ClusterError
from kgroup.server.data_plane import DataPlane
from kgroup.server.transactions import MissingTxnMarkerWriter, _WriterByName

TXN = "wire-txn"
WAIT_S = 10.0


def _append_marker(self, marker: TxnMarker, now_ms: int):
    """A stand-in writer: the marker appended (acks=all) to its partition's leader log."""
    try:
        offset = self.cluster.produce(marker.topic, marker.partition, marker, acks_all=True)
    except ClusterError as error:
        return E(error.error_code)
    p = self.cluster.partition(marker.topic, marker.partition)
    return MarkerAppend(marker.topic, marker.partition, p.leader_epoch, offset)


@pytest.fixture
def marker_writers(monkeypatch):
    for owner in (DataPlane, GroupHosting):
        if not hasattr(owner, "write_txn_marker"):
            monkeypatch.setattr(owner, "write_txn_marker", _append_marker, raising=False)


@pytest.fixture
def txn_server(server, marker_writers):
    server.create_topic("t", partitions=2)
    server.wait_coordinators_loaded()
    return server


def _client(server, raw_client, node_id):
    return raw_client(server.listener(node_id))


def _coordinator(server, raw_client, txn=TXN):
    return _client(server, raw_client, server.transaction_coordinator_node(txn))


def _init(client, version=4, txn=TXN, timeout_ms=60_000, producer_id=-1, epoch=-1):
    return client.request(InitProducerIdRequest(version=version, transactional_id=txn,
                                                transaction_timeout_ms=timeout_ms, producer_id=producer_id,
                                                producer_epoch=epoch))


def _add(client, producer_id, epoch, partitions=((("t", (0, 1)),)), version=3, txn=TXN):
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    return client.request(AddPartitionsToTxnRequest(
        version=version, v3_and_below_transactional_id=txn, v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
            topic(version=version, name=name, partitions=list(indexes)) for name, indexes in partitions]))


def _add_errors(response):
    return {(t.name, p.partition_index): p.partition_error_code
            for t in response.results_by_topic_v3_and_below for p in t.results_by_partition}


def _end(client, producer_id, epoch, committed=True, version=3, txn=TXN):
    return client.request(EndTxnRequest(version=version, transactional_id=txn, producer_id=producer_id,
                                        producer_epoch=epoch, committed=committed))


def _wait_state(server, state, txn=TXN):
    deadline = time.monotonic() + WAIT_S
    while server.transaction_state(txn) != state:
        assert time.monotonic() < deadline, \
            f"{txn} never reached {state} (is {server.transaction_state(txn)})"
        time.sleep(0.01)


def test_find_coordinator_for_a_transactional_id(txn_server, raw_client):
    """FindCoordinator key_type 1 (TRANSACTION) answers the leader of the id's __transaction_state
    partition, from any broker, at every version that has a key type (v1-v3 one key, v4 several)."""
    server = txn_server
    node_id = server.transaction_coordinator_node(TXN)
    host, port = server.listener(node_id).rsplit(":", 1)
    client = _client(server, raw_client, 1)
    for version in (1, 2, 3):
        answer = client.request(FindCoordinatorRequest(version=version, key=TXN, key_type=1))
        assert (answer.error_code, answer.node_id, answer.host, answer.port) == (0, node_id, host, int(port))
    answer = client.request(FindCoordinatorRequest(version=4, key_type=1, coordinator_keys=[TXN, "other"]))
    assert [(c.key, c.error_code, c.node_id) for c in answer.coordinators] == [
        (TXN, 0, node_id), ("other", 0, server.transaction_coordinator_node("other"))]


def test_init_producer_id_bumps_the_epoch_and_fences_by_version(txn_server, raw_client):
    """InitProducerId: epoch 0 for a new id, +1 on re-init; a stale KIP-360 epoch is PRODUCER_FENCED
    from v4 and INVALID_PRODUCER_EPOCH before (KafkaApis.handleInitProducerIdRequest); another broker
    answers NOT_COORDINATOR; an idempotent producer gets a fresh id from any broker."""
    server = txn_server
    client = _coordinator(server, raw_client)
    first = _init(client)
    assert (first.error_code, first.producer_epoch) == (0, 0)
    second = _init(client, version=3, producer_id=first.producer_id, epoch=0)
    assert (second.error_code, second.producer_id, second.producer_epoch) == (0, first.producer_id, 1)
    assert _init(client, version=4, producer_id=first.producer_id, epoch=5).error_code == E.PRODUCER_FENCED
    stale_v3 = _init(client, version=3, producer_id=first.producer_id, epoch=5)
    assert stale_v3.error_code == E.INVALID_PRODUCER_EPOCH
    assert _init(client, timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    other = next(b for b in (1, 2, 3) if b != server.transaction_coordinator_node(TXN))
    assert _init(_client(server, raw_client, other)).error_code == E.NOT_COORDINATOR
    idempotent = _init(_client(server, raw_client, other), txn=None)
    assert (idempotent.error_code, idempotent.producer_epoch) == (0, 0)
    assert idempotent.producer_id > first.producer_id


def test_add_partitions_answers_per_partition_and_by_version(txn_server, raw_client):
    """AddPartitionsToTxn v0-v3: a partition that does not exist fails the request (the others
    OPERATION_NOT_ATTEMPTED, KafkaApis); a stale epoch is INVALID_PRODUCER_EPOCH before v2,
    PRODUCER_FENCED from v2; v4 batches transactions and answers verify_only per partition."""
    server = txn_server
    client = _coordinator(server, raw_client)
    init = _init(client)
    pid, epoch = init.producer_id, init.producer_epoch
    missing = _add(client, pid, epoch, (("t", (0, 9)),))
    assert _add_errors(missing) == {("t", 0): E.OPERATION_NOT_ATTEMPTED,
                                    ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert _add_errors(_add(client, pid, epoch + 1, version=1)) == {
        ("t", 0): E.INVALID_PRODUCER_EPOCH, ("t", 1): E.INVALID_PRODUCER_EPOCH}
    assert _add_errors(_add(client, pid, epoch + 1, version=2)) == {
        ("t", 0): E.PRODUCER_FENCED, ("t", 1): E.PRODUCER_FENCED}
    assert _add_errors(_add(client, pid, epoch, (("t", (0,)),))) == {("t", 0): 0}
    assert server.transaction_state(TXN) == "Ongoing"
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    verify = client.request(AddPartitionsToTxnRequest(version=4, transactions=[
        txn(version=4, transactional_id=TXN, producer_id=pid, producer_epoch=epoch, verify_only=True,
            topics=[txn.AddPartitionsToTxnTopic(version=4, name="t", partitions=[0, 1])])]))
    (result,) = verify.results_by_transaction
    assert verify.error_code == 0 and result.transactional_id == TXN
    assert {(t.name, p.partition_index): p.partition_error_code for t in result.topic_results
            for p in t.results_by_partition} == {("t", 0): 0, ("t", 1): 120}  # TRANSACTION_ABORTABLE


def test_end_txn_commit_retries_and_crossed_outcomes(txn_server, raw_client):
    """EndTxn commit answers 0 once PrepareCommit is committed; the markers complete it; a retried
    commit answers 0, an abort after it INVALID_TXN_STATE; a stale epoch INVALID_PRODUCER_EPOCH (v1) /
    PRODUCER_FENCED (v2+); AddOffsetsToTxn puts the group's offsets partition in the transaction."""
    server = txn_server
    client = _coordinator(server, raw_client)
    init = _init(client)
    pid, epoch = init.producer_id, init.producer_epoch
    assert _add_errors(_add(client, pid, epoch)) == {("t", 0): 0, ("t", 1): 0}
    added = client.request(AddOffsetsToTxnRequest(version=3, transactional_id=TXN, producer_id=pid,
                                                  producer_epoch=epoch, group_id="g"))
    assert added.error_code == 0
    assert client.request(AddOffsetsToTxnRequest(version=1, transactional_id=TXN, producer_id=pid,
                                                 producer_epoch=epoch + 1, group_id="g")).error_code \
        == E.INVALID_PRODUCER_EPOCH
    assert _end(client, pid, epoch + 1, version=1).error_code == E.INVALID_PRODUCER_EPOCH
    assert _end(client, pid, epoch + 1, version=2).error_code == E.PRODUCER_FENCED
    assert _end(client, pid, epoch).error_code == 0
    _wait_state(server, "CompleteCommit")
    assert _end(client, pid, epoch).error_code == 0                      # a retry
    assert _end(client, pid, epoch, committed=False).error_code == E.INVALID_TXN_STATE
    assert _end(client, pid + 1, epoch).error_code == E.INVALID_PRODUCER_ID_MAPPING


def test_describe_and_list_transactions(txn_server, raw_client):
    """DescribeTransactions (KIP-664): state, producer, timeout, start time and partitions; unknown ids
    TRANSACTIONAL_ID_NOT_FOUND.  ListTransactions on each broker lists its own ids, filtered by state,
    producer id and (v1) duration; unknown state names come back in unknown_state_filters."""
    server = txn_server
    client = _coordinator(server, raw_client)
    init = _init(client, timeout_ms=30_000)
    _add(client, init.producer_id, init.producer_epoch)
    node_id = server.transaction_coordinator_node(TXN)
    nobody = next(f"nobody-{i}" for i in range(1000)
                  if server.transaction_coordinator_node(f"nobody-{i}") == node_id)
    elsewhere_id = next(f"x-{i}" for i in range(1000)
                        if server.transaction_coordinator_node(f"x-{i}") != node_id)
    described = client.request(DescribeTransactionsRequest(version=0,
                                                           transactional_ids=[TXN, nobody, elsewhere_id]))
    state, unknown, not_here = described.transaction_states
    assert (state.error_code, state.transaction_state, state.producer_id, state.producer_epoch,
            state.transaction_timeout_ms) == (0, "Ongoing", init.producer_id, init.producer_epoch, 30_000)
    assert state.transaction_start_time_ms > 0
    assert [(t.topic, sorted(t.partitions)) for t in state.topics] == [("t", [0, 1])]
    assert (unknown.error_code, not_here.error_code) == (E.TRANSACTIONAL_ID_NOT_FOUND, E.NOT_COORDINATOR)
    listed = client.request(ListTransactionsRequest(version=1, state_filters=["Ongoing", "Bogus"],
                                                    producer_id_filters=[], duration_filter=-1))
    assert listed.error_code == 0 and listed.unknown_state_filters == ["Bogus"]
    assert [(t.transactional_id, t.producer_id, t.transaction_state) for t in listed.transaction_states] == [
        (TXN, init.producer_id, "Ongoing")]
    none_older = client.request(ListTransactionsRequest(version=1, state_filters=[], producer_id_filters=[],
                                                        duration_filter=3_600_000))
    assert none_older.transaction_states == []
    for broker in (b for b in (1, 2, 3) if b != server.transaction_coordinator_node(TXN)):
        elsewhere = _client(server, raw_client, broker).request(ListTransactionsRequest(
            version=0, state_filters=[], producer_id_filters=[init.producer_id]))
        assert elsewhere.error_code == 0 and elsewhere.transaction_states == []


def test_a_missing_marker_writer_fails_loudly_in_one_place():
    """The server finds ``write_txn_marker`` by name when a marker is written; an object without it
    raises MissingTxnMarkerWriter naming its class (until every writer of issue 26 is merged)."""
    marker = TxnMarker("t", 0, 1000, 0, True, 1)
    with pytest.raises(MissingTxnMarkerWriter, match="object has no write_txn_marker.*t-0"):
        _WriterByName(object()).write_txn_marker(marker, 0)

    class Writer:
        def write_txn_marker(self, marker, now_ms):
            return E.NOT_LEADER_OR_FOLLOWER
    assert _WriterByName(Writer()).write_txn_marker(marker, 0) is E.NOT_LEADER_OR_FOLLOWER
