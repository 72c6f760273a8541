"""``__consumer_offsets`` and ``__transaction_state`` served as Kafka's record batches (no JVM here;
tests/server/test_coordinator_log_kafka.py has Kafka's own decoder read them).

Before: ``read_batches`` skipped every coordinator record, so a Fetch of those partitions answered no
records while the high watermark stood above the fetch offset, and a consumer assigned them (a
KIP-848 ``^.*`` regex is assigned ``__consumer_offsets``, as on Kafka) never progressed.  The keys
and values are Kafka's ``CoordinatorRecordSerde`` bytes: a short record type then the key struct; a
short version then the value struct (null for a tombstone), Kafka 4.4's versions
(``GroupCoordinatorRecordHelpers``, ``TransactionLog.valueToBytes``).
"""
from __future__ import annotations

import struct
import time
import uuid
from typing import List, Optional, Tuple

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetCommitRequest
from kafka.record import MemoryRecords

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.cluster.replica_log import LogEntry, ReplicaLog
from kgroup.core.consumer_group.member import ConsumerGroupMember, MemberState
from kgroup.core.consumer_group.records import (
    ConsumerGroupMemberRecord, ConsumerGroupMemberTombstone, ConsumerGroupMetadataRecord,
    ConsumerGroupRegularExpressionRecord, ConsumerGroupRegularExpressionTombstone,
    ConsumerGroupTargetAssignmentRecord, ResolvedTopicRegex,
)
from kgroup.core.coordinator.records import GroupMetadataRecord, MemberMetadataRecord, MemberTombstone
from kgroup.core.coordinator_common.records import (
    GroupTombstone, OffsetCommitRecord, OffsetTombstone, TxnMarkerRecord, TxnOffsetCommitRecord,
)
from kgroup.core.messages import JoinGroupProtocol, OffsetAndMetadata
from kgroup.core.transaction.log import (
    TRANSACTION_STATE_TOPIC, TransactionLogKey, TransactionLogRecord, TransactionLogValue,
)
from kgroup.core.transaction.states import TransactionState
from kgroup.server.coordinator_log import CoordinatorLogs, PartitionEncoder
from kgroup.values import TopicPartition

FETCH_V = 11
READ_COMMITTED = 1
TP = TopicPartition("t", 0)


# -- Kafka's types, written independently of kgroup.server.coordinator_records ----------------------

def _string(text: Optional[str]) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text.encode())) + text.encode()


def _compact(text: Optional[str]) -> bytes:
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def _records(data: bytes) -> List[Tuple[object, object]]:
    """(batch, record) of every record of a fetched partition, each batch's CRC checked."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        for record in batch:
            out.append((batch, record))
    return out


def _encode(*payloads: object, time_ms: int = 1_000) -> List[object]:
    """Each payload's batch at offsets 0, 1, ... (epoch 3) through one partition's encoder."""
    encoder = PartitionEncoder(lambda name: None)
    out = []
    for offset, payload in enumerate(payloads):
        served = encoder.encode(LogEntry(3, payload, time_ms), offset)
        assert served is not None
        (batch,) = _records(served.batch.data)
        out.append(batch)
    return out


# -- the bytes of each record type -----------------------------------------------------------------

def test_an_offset_commit_is_offset_commit_key_and_value_v4_at_its_offset():
    batch, record = _encode(OffsetCommitRecord("g", TP, OffsetAndMetadata(42, "meta", 7)), time_ms=5_000)[0]
    assert (batch.base_offset, batch.leader_epoch, batch.is_transactional, batch.is_control_batch) == (
        0, 3, False, False)
    assert (batch.producer_id, batch.timestamp_type, record.timestamp) == (-1, 0, 5_000)  # CreateTime
    assert record.key == struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 0)
    # OffsetCommitValue v4: offset, leader epoch, compact metadata, commit timestamp, no tagged fields.
    assert record.value == (struct.pack(">hqi", 4, 42, 7) + _compact("meta") + struct.pack(">q", 5_000)
                            + b"\x00")


def test_an_offset_tombstone_has_a_null_value_and_a_txn_offset_commit_is_its_producers_batch():
    (_, tombstone), (txn_batch, txn_record), (marker, _) = _encode(
        OffsetTombstone("g", TP),
        TxnOffsetCommitRecord("g", TP, OffsetAndMetadata(9), producer_id=77, producer_epoch=2),
        TxnMarkerRecord(77, 2, commit=False, coordinator_epoch=5))
    assert tombstone.value is None and tombstone.key.startswith(struct.pack(">h", 1))
    assert (txn_batch.is_transactional, txn_batch.producer_id, txn_batch.producer_epoch,
            txn_batch.base_sequence) == (True, 77, 2, -1)
    assert txn_record.value[:2] == struct.pack(">h", 4)
    # MemoryRecords.withEndTransactionMarker: a control batch whose key is ControlRecordType ABORT (0).
    assert (marker.is_control_batch, marker.is_transactional, marker.producer_id, marker.base_offset) == (
        True, True, 77, 2)


def _member(member_id: str, assignment: bytes) -> MemberMetadataRecord:
    return MemberMetadataRecord("g", member_id, None, "client", "/127.0.0.1", 10_000, 30_000,
                                (JoinGroupProtocol("range", b"sub-" + member_id.encode()),
                                 JoinGroupProtocol("other", b"x")), assignment)


def test_a_classic_groups_records_are_served_as_the_whole_group_in_group_metadata_v3():
    """kgroup writes a header and a record per member; Kafka one GroupMetadata record of the whole
    group, so each is served as the group as of that offset (members in their join order)."""
    header = GroupMetadataRecord("g", "Stable", 4, "consumer", "range", "m1")
    served = _encode(header, _member("m1", b"a1"), _member("m2", b"a2"), MemberTombstone("g", "m1"),
                     time_ms=8_000)
    keys = {record.key for _, record in served}
    assert keys == {struct.pack(">h", 2) + _string("g")}
    prefix = (struct.pack(">h", 3) + _string("consumer") + struct.pack(">i", 4) + _string("range")
              + _string("m1") + struct.pack(">q", 8_000))

    def member(member_id: str, assignment: bytes) -> bytes:
        subscription = b"sub-" + member_id.encode()
        return (_string(member_id) + _string(None) + _string("client") + _string("/127.0.0.1")
                + struct.pack(">ii", 30_000, 10_000) + struct.pack(">i", len(subscription)) + subscription
                + struct.pack(">i", len(assignment)) + assignment)
    values = [record.value for _, record in served]
    assert values == [prefix + struct.pack(">i", 0),
                      prefix + struct.pack(">i", 1) + member("m1", b"a1"),
                      prefix + struct.pack(">i", 2) + member("m1", b"a1") + member("m2", b"a2"),
                      prefix + struct.pack(">i", 1) + member("m2", b"a2")]
    (_, tombstone), = _encode(header, GroupTombstone("g"))[1:]
    assert (tombstone.key, tombstone.value) == (struct.pack(">h", 2) + _string("g"), None)


def test_a_consumer_groups_records_map_to_the_kafka_record_of_what_moved():
    member = ConsumerGroupMember("m", member_epoch=1, client_id="c", client_host="/h",
                                 subscribed_topic_regex="^t.*", rebalance_timeout_ms=300_000,
                                 assigned_partitions=[TP])
    served = _encode(
        ConsumerGroupMetadataRecord("g", 1, 0, ()),
        ConsumerGroupMetadataRecord("g", 1, 1, ()),           # only the assignment epoch moved
        ConsumerGroupMemberRecord("g", member),               # a new member: its subscription
        ConsumerGroupMemberRecord("g", member.__class__(**{**_fields(member), "member_epoch": 2})),
        ConsumerGroupTargetAssignmentRecord("g", "m", frozenset({TP})),
        ConsumerGroupRegularExpressionRecord("g", "^t.*", ResolvedTopicRegex(frozenset({"t"}), 123)),
        ConsumerGroupRegularExpressionTombstone("g", "^t.*"),
        ConsumerGroupMemberTombstone("g", "m"),
        GroupTombstone("g"))
    types = [struct.unpack_from(">h", record.key)[0] for _, record in served]
    assert types == [3, 6, 5, 8, 7, 16, 16, 5, 3]
    values = [record.value for _, record in served]
    assert values[0] == struct.pack(">hi", 0, 1) + b"\x00"  # ConsumerGroupMetadataValue: epoch, no tags
    # ConsumerGroupTargetAssignmentMetadataValue: the epoch, the AssignmentTimestamp tag (0).
    assert values[1] == struct.pack(">hi", 0, 1) + b"\x01\x00\x08" + struct.pack(">q", 1_000)
    assert values[2] == (struct.pack(">h", 0) + _compact(None) + _compact(None) + _compact("c")
                         + _compact("/h")
                         + b"\x01" + _compact("^t.*") + struct.pack(">i", 300_000) + _compact(None) + b"\x00")
    # ConsumerGroupCurrentMemberAssignmentValue: epochs, state, then [topic id (zero: "t" is no live
    # topic here), [partition 0]] and no partitions pending revocation.
    assert values[3] == (struct.pack(">hiib", 0, 2, -1, MemberState.STABLE.value) + b"\x02" + bytes(16)
                         + b"\x02" + struct.pack(">i", 0) + b"\x00" + b"\x01" + b"\x00")
    assert values[4] == (struct.pack(">h", 0) + b"\x02" + bytes(16) + b"\x02" + struct.pack(">i", 0)
                         + b"\x00\x00")
    assert values[5] == struct.pack(">h", 0) + b"\x02" + _compact("t") + struct.pack(">qq", 0, 123) + b"\x00"
    assert values[6:] == [None, None, None]
    assert served[5][1].key == struct.pack(">h", 16) + _string("g") + _string("^t.*")


def _fields(member: ConsumerGroupMember) -> dict:
    import attrs
    return attrs.asdict(member, recurse=False)


def test_a_transaction_log_record_is_transaction_log_key_and_value_v1():
    value = TransactionLogValue(producer_id=5, previous_producer_id=4, producer_epoch=1,
                                transaction_timeout_ms=60_000, state=TransactionState.ONGOING,
                                partitions=(TopicPartition("b", 1), TopicPartition("a", 0),
                                            TopicPartition("b", 0)),
                                last_update_timestamp_ms=20, start_timestamp_ms=10)
    (_, record), (_, empty), (_, tombstone) = _encode(
        TransactionLogRecord(TransactionLogKey("tx"), value),
        TransactionLogRecord(TransactionLogKey("tx"), TransactionLogValue(
            5, -1, 1, 60_000, TransactionState.EMPTY, (), 30, -1)),
        TransactionLogRecord(TransactionLogKey("tx"), None))
    assert record.key == struct.pack(">h", 0) + _string("tx")
    partitions = (b"\x03" + _compact("a") + b"\x02" + struct.pack(">i", 0) + b"\x00"
                  + _compact("b") + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00")
    assert record.value == (struct.pack(">hqhib", 1, 5, 1, 60_000, 1) + partitions
                            + struct.pack(">qq", 20, 10)
                            + b"\x01\x00\x08" + struct.pack(">q", 4))  # PreviousProducerId tag (0)
    # Empty: null partitions (TransactionLog.valueToBytes), no previous producer id.
    assert empty.value == (struct.pack(">hqhib", 1, 5, 1, 60_000, 0) + b"\x00" + struct.pack(">qq", 30, -1)
                           + b"\x00")
    assert tombstone.value is None


# -- the shadow log: encoded once, never outliving the log ------------------------------------------

class _Partition:
    topic = GROUP_METADATA_TOPIC
    key = (GROUP_METADATA_TOPIC, 0)


def test_the_encoded_batches_are_reused_and_cut_back_with_the_log():
    logs = CoordinatorLogs({}, lambda name: uuid.uuid4())
    partition = _Partition()
    source = ReplicaLog()
    for offset in range(3):
        source.append(LogEntry(0, OffsetCommitRecord("g", TP, OffsetAndMetadata(offset)), offset))
    first = logs.readable(partition, source)  # type: ignore[arg-type]
    held = [entry.payload for entry in first.entries]
    again = logs.readable(partition, source)  # type: ignore[arg-type]
    assert [entry.payload for entry in again.entries] == held
    assert all(a is b for a, b in zip(again.entries, first.entries))  # not encoded again
    source.truncate_to(1)
    source.append(LogEntry(1, OffsetTombstone("g", TP), 9))
    cut = logs.readable(partition, source)  # type: ignore[arg-type]
    assert len(cut.entries) == 2
    (_, record), = _records(cut.entries[1].payload.batch.data)
    assert record.value is None and record.timestamp == 9


# -- over the engine: Fetch and ListOffsets --------------------------------------------------------

def _fetch(partition: int, offset: int = 0, isolation_level: int = 0,
           topic: str = GROUP_METADATA_TOPIC) -> FetchRequest:
    topic_cls = FetchRequest.FetchTopic
    return FetchRequest(version=FETCH_V, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=isolation_level, session_id=0, session_epoch=-1,
                        forgotten_topics_data=[], topics=[topic_cls(version=FETCH_V, topic=topic, partitions=[
                            topic_cls.FetchPartition(
                                version=FETCH_V, partition=partition, fetch_offset=offset,
                                partition_max_bytes=1 << 20, current_leader_epoch=-1, log_start_offset=-1)])])


def _fetched(harness, partition: int, offset: int = 0, isolation_level: int = 0,
             topic: str = GROUP_METADATA_TOPIC):
    answer = harness.call(_fetch(partition, offset, isolation_level, topic),
                          node_id=harness.leader(topic, partition))
    (part,) = answer.responses[0].partitions
    return part


def _commit(group: str, offset: int) -> OffsetCommitRequest:
    topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(version=8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                               group_instance_id=None, topics=[topic_cls(version=8, name="t", partitions=[
                                   topic_cls.OffsetCommitRequestPartition(
                                       version=8, partition_index=0, committed_offset=offset,
                                       committed_leader_epoch=-1, committed_metadata="")])])


@pytest.fixture
def harness(make_engine):
    engine = make_engine(brokers=1, offsets_partitions=1)
    engine.cluster.create_topic("t", 1, 1)
    engine.advance(engine.config.group_load_time_ms + 1)  # the coordinators load
    return engine


def test_a_fetch_of_consumer_offsets_returns_the_records_up_to_the_high_watermark(harness):
    harness.now_ms = 50_000
    for offset in (5, 8):
        (topic,) = harness.call(_commit("g", offset)).topics
        assert topic.partitions[0].error_code == 0
    log = harness.cluster.partition(GROUP_METADATA_TOPIC, 0).leader_log()
    part = _fetched(harness, 0)
    served = _records(part.records)
    # Every offset up to the high watermark, one record each (the HW moved past 0 before: no records).
    assert part.high_watermark == log.leo > 0
    assert [record.offset for _, record in served] == list(range(part.high_watermark))
    commits = [record for _, record in served if record.key[:2] == struct.pack(">h", 1)]
    assert [record.value[:10] for record in commits] == [struct.pack(">hq", 4, o) for o in (5, 8)]
    assert {record.timestamp for _, record in served} == {50_000}  # the append time
    assert _fetched(harness, 0, offset=part.high_watermark).records in (b"", None)


def test_list_offsets_by_timestamp_finds_a_coordinator_record(harness):
    for now_ms, offset in ((10_000, 1), (20_000, 2)):
        harness.now_ms = now_ms
        harness.call(_commit("g", offset))
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    answer = harness.call(ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[
        topic_cls(version=7, name=GROUP_METADATA_TOPIC, partitions=[
            topic_cls.ListOffsetsPartition(version=7, partition_index=0, current_leader_epoch=-1,
                                           timestamp=ts)
            for ts in (15_000, -3, 30_000)])]), node_id=harness.leader(GROUP_METADATA_TOPIC))
    entries = harness.cluster.partition(GROUP_METADATA_TOPIC, 0).leader_log().entries
    second = next(offset for offset, entry in enumerate(entries) if entry.append_time_ms == 20_000)
    assert second > 0  # the first commit's records came before
    # Before: (-1, -1) for every lookup (no batch was ever read there).
    assert [(p.offset, p.timestamp) for p in answer.topics[0].partitions] == [
        (second, 20_000), (second, 20_000), (-1, -1)]


def test_an_open_transactional_offset_commit_holds_read_committed_back_until_its_marker(harness):
    cluster = harness.cluster
    records = [OffsetCommitRecord("g", TP, OffsetAndMetadata(1)),
               TxnOffsetCommitRecord("g", TP, OffsetAndMetadata(2), producer_id=9, producer_epoch=0),
               OffsetCommitRecord("h", TP, OffsetAndMetadata(3))]
    cluster.produce_many(GROUP_METADATA_TOPIC, 0, records, acks_all=False)
    open_txn = _fetched(harness, 0, isolation_level=READ_COMMITTED)
    assert (open_txn.high_watermark, open_txn.last_stable_offset) == (3, 1)
    assert [record.offset for _, record in _records(open_txn.records)] == [0]
    cluster.produce_many(GROUP_METADATA_TOPIC, 0, [TxnMarkerRecord(9, 0, False, 0)], acks_all=False)
    decided = _fetched(harness, 0, isolation_level=READ_COMMITTED)
    assert (decided.high_watermark, decided.last_stable_offset) == (4, 4)
    assert [(txn.producer_id, txn.first_offset) for txn in decided.aborted_transactions] == [(9, 1)]
    # Every batch up to the LSO, the marker a control batch (a consumer drops it and, read_committed,
    # the aborted record at offset 1).
    served = _records(decided.records)
    assert [(record.offset, batch.is_control_batch) for batch, record in served] == [
        (0, False), (1, False), (2, False), (3, True)]


def test_a_fetch_of_transaction_state_returns_its_records(harness):
    value = TransactionLogValue(3, -1, 0, 60_000, TransactionState.EMPTY, (), 0, -1)
    partition = 0
    harness.cluster.produce_many(TRANSACTION_STATE_TOPIC, partition,
                                 [TransactionLogRecord(TransactionLogKey("tx"), value)], acks_all=False)
    part = _fetched(harness, partition, topic=TRANSACTION_STATE_TOPIC)
    (_, record), = _records(part.records)
    assert record.key == struct.pack(">h", 0) + _string("tx")


# -- a client reads them ----------------------------------------------------------------------------

def test_a_kafka_python_consumer_assigned_consumer_offsets_reads_to_the_high_watermark(server1, raw_client):
    server1.create_topic("t", partitions=1)
    server1.wait_coordinators_loaded()
    client = raw_client(server1.listener(1))
    for offset in range(1, 4):
        (topic,) = client.request(_commit(f"group-{offset}", offset)).topics
        assert topic.partitions[0].error_code == 0
    consumer = KafkaConsumer(bootstrap_servers=server1.bootstrap_servers, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=10_000)
    try:
        partitions = [KafkaTopicPartition(GROUP_METADATA_TOPIC, p)
                      for p in consumer.partitions_for_topic(GROUP_METADATA_TOPIC)]
        consumer.assign(partitions)
        ends = consumer.end_offsets(partitions)
        assert sum(ends.values()) >= 3
        read = 0
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            assert time.monotonic() < deadline, {tp: (consumer.position(tp), end) for tp, end in ends.items()}
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        assert read == sum(ends.values())  # one record per offset
    finally:
        consumer.close()
