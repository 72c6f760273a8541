"""kgroup's broker fixed where the broker conformance suite found it answering differently from Kafka 4.4
(kgroup/broker_conformance, recorded/kafka-4.4.0.json): CreateTopics validate_only figures, a topic named
twice, colliding names; FindCoordinator of an unknown key type; SyncGroup v5 without protocol type and
name; the classic DescribeGroups of a KIP-848 group; ListOffsets finding no record; the data plane's
answers: refused produces (log_start_offset -1, Kafka's order of checks, malformed batches, several
batches, a base offset other than 0, unknown codecs), an acks=all produce whose leader moves, a duplicate
idempotent batch's append time, an out-of-range fetch, Metadata of an invalid name.  Each test failed
before its fix (the answer kgroup gave is in its docstring)."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import FetchRequest, JoinGroupRequest, ListOffsetsRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup.core.error_codes import ErrorCode as E
from kgroup.server.crc32c import crc32c
from kgroup.server.topic_admin import NIL_UUID
from kgroup.wire.kafka_python import ConsumerGroupHeartbeatRequestStruct

_CREATABLE = CreateTopicsRequest.CreatableTopic


@pytest.fixture
def engine(make_engine):
    """One broker, topic "foo" of two partitions; the group coordinator loaded."""
    harness = make_engine(brokers=1)
    harness.cluster.create_topic("foo", 2, 1)
    harness.engine.data.topic_id("foo")
    harness.advance(harness.config.group_load_time_ms)
    return harness


def create_topics(*topics, validate_only: bool = False) -> CreateTopicsRequest:
    """CreateTopics v7 of (name, partitions, replication factor, {partition: brokers}) tuples."""
    return CreateTopicsRequest(version=7, timeout_ms=1_000, validate_only=validate_only, topics=[
        _CREATABLE(version=7, name=name, num_partitions=partitions, replication_factor=replicas,
                   assignments=[_CREATABLE.CreatableReplicaAssignment(version=7, partition_index=p,
                                                                      broker_ids=brokers)
                                for p, brokers in (assignments or {}).items()],
                   configs=[])
        for name, partitions, replicas, assignments in topics])


def results(answer) -> list:
    return [(r.name, r.error_code, r.num_partitions, r.replication_factor) for r in answer.topics]


# -- CreateTopics --------------------------------------------------------------------------------


def test_create_topics_validate_only_answers_the_figures_it_would_create(engine):
    """ReplicationControlManager.createTopic fills the result's partition count and replication factor
    whether or not the records are kept (validate_only); -1 takes the broker's defaults (scenario
    broker.create-topics.validate-only).  (kgroup answered -1 and -1.)"""
    answer = engine.call(create_topics(("planned", 3, -1, None), ("defaults", -1, -1, None),
                                       ("placed", -1, -1, {0: [1], 1: [1]}), validate_only=True))
    assert results(answer) == [("planned", 0, 3, 1), ("defaults", 0, engine.config.default_partitions, 1),
                               ("placed", 0, 2, 1)]
    assert not {"planned", "defaults", "placed"} & set(engine.cluster.topics)
    refused = engine.call(create_topics(("foo", 3, 1, None), ("bad", 1, 2, None), validate_only=True))
    assert results(refused) == [("foo", E.TOPIC_ALREADY_EXISTS, -1, -1),
                                ("bad", E.INVALID_REPLICATION_FACTOR, -1, -1)]


def test_create_topics_naming_a_topic_twice_answers_invalid_request_once_and_creates_it_not(engine):
    """ControllerApis.createTopics drops a name given twice from the request and answers it once,
    INVALID_REQUEST "Duplicate topic name.", after the others' results (scenario
    broker.create-topics.duplicate-in-request).  (kgroup created it and answered TOPIC_ALREADY_EXISTS
    for the second.)"""
    answer = engine.call(create_topics(("twice", 1, 1, None), ("once", 1, 1, None), ("twice", 2, 1, None)))
    assert results(answer) == [("once", 0, 1, 1), ("twice", E.INVALID_REQUEST, -1, -1)]
    assert answer.topics[1].error_message == "Duplicate topic name."
    assert "twice" not in engine.cluster.topics and "once" in engine.cluster.topics


def test_create_topics_refuses_a_name_colliding_through_dot_and_underscore(engine):
    """ReplicationControlManager.validateNewTopicNames (Topic.hasCollisionChars, unifyCollisionChars):
    'a_b' collides with an existing 'a.b' (their metric names would be the same): INVALID_TOPIC_EXCEPTION
    (scenario broker.create-topics.collision); the same name answers TOPIC_ALREADY_EXISTS.  Only topics
    that existed before the request count.  (kgroup created 'a_b'.)"""
    assert results(engine.call(create_topics(("a.b", 1, 1, None)))) == [("a.b", 0, 1, 1)]
    for validate_only in (True, False):
        answer = engine.call(create_topics(("a_b", 1, 1, None), ("a.b", 1, 1, None), ("a-b", 1, 1, None),
                                           validate_only=validate_only))
        assert results(answer) == [("a_b", E.INVALID_TOPIC_EXCEPTION, -1, -1),
                                   ("a.b", E.TOPIC_ALREADY_EXISTS, -1, -1), ("a-b", 0, 1, 1)]
        assert answer.topics[0].error_message == "Topic 'a_b' collides with existing topic: a.b"
    assert "a_b" not in engine.cluster.topics
    both_new = engine.call(create_topics(("x.y", 1, 1, None), ("x_y", 1, 1, None)))
    assert results(both_new) == [("x.y", 0, 1, 1), ("x_y", 0, 1, 1)]


# -- FindCoordinator ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize("key_type", [2, 7, -1])
def test_find_coordinator_of_an_unknown_key_type_is_an_invalid_request(engine, version, key_type):
    """FindCoordinatorRequest.CoordinatorType.forId refuses an unknown key type, and
    KafkaApis.getCoordinator a share-group key (2) below v6 (scenario
    broker.find-coordinator.invalid-key-type).  (kgroup answered COORDINATOR_NOT_AVAILABLE.)"""
    answer = engine.call(FindCoordinatorRequest(version=version, key="g", key_type=key_type,
                                                coordinator_keys=["g"]))
    found = answer.coordinators[0] if version >= 4 else answer
    assert (found.error_code, found.node_id) == (E.INVALID_REQUEST, -1)
    group = engine.call(FindCoordinatorRequest(version=version, key="g", key_type=0, coordinator_keys=["g"]))
    assert (group.coordinators[0] if version >= 4 else group).error_code == 0


# -- SyncGroup ------------------------------------------------------------------------------------


def _joined_member(engine) -> tuple:
    """(member id, generation) of the one member of classic group "g", joined with JoinGroup v5."""
    def join(member_id: str):
        request = JoinGroupRequest(
            version=5, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id=member_id, group_instance_id=None, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(version=5, name="range", metadata=b"")])
        connection = engine.connect()
        engine.send(connection, request)
        engine.advance(1)  # the join completes on the coordinator's next timer (no rebalance delay)
        return engine.answer(connection, request)
    first = join("")
    assert first.error_code == E.MEMBER_ID_REQUIRED
    joined = join(first.member_id)
    assert joined.error_code == 0
    return joined.member_id, joined.generation_id


@pytest.mark.parametrize("protocol_type, protocol_name", [(None, None), ("consumer", None), (None, "range")])
def test_sync_group_v5_without_protocol_type_or_name_is_inconsistent(engine, protocol_type, protocol_name):
    """KIP-559: from v5 both are mandatory; KafkaApis.handleSyncGroupRequest answers
    INCONSISTENT_GROUP_PROTOCOL with an empty assignment before the coordinator sees the request
    (SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent; scenario classic.sync.v5-null-protocol).
    v4 has no such fields.  (kgroup accepted it and answered the assignment.)"""
    member_id, generation = _joined_member(engine)

    def sync(version: int, protocol_type, protocol_name):
        return engine.call(SyncGroupRequest(
            version=version, group_id="g", generation_id=generation, member_id=member_id,
            group_instance_id=None, protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(version=version, member_id=member_id,
                                                                     assignment=b"\x00\x01")]))
    refused = sync(5, protocol_type, protocol_name)
    assert (refused.error_code, refused.protocol_type, refused.protocol_name, refused.assignment) == (
        E.INCONSISTENT_GROUP_PROTOCOL, None, None, b"")
    accepted = sync(5, "consumer", "range")
    assert (accepted.error_code, accepted.assignment) == (0, b"\x00\x01")
    assert sync(4, None, None).error_code == 0


# -- DescribeGroups -------------------------------------------------------------------------------


def test_classic_describe_groups_of_a_consumer_group_answers_dead_with_no_members(engine):
    """GroupMetadataManager.describeGroups describes classic groups only: a KIP-848 consumer group is
    answered as a missing one, NONE and Dead with no members and empty protocol fields (Kafka 4.4's
    recorded answer, scenario consumer.describe-groups-on-consumer-group).  (kgroup described it:
    Stable, its member, "consumer", "uniform".)"""
    joined = engine.call(ConsumerGroupHeartbeatRequestStruct(
        version=1, group_id="cg", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout_ms=10_000, subscribed_topic_names=["foo"], subscribed_topic_regex=None,
        server_assignor=None, topic_partitions=[]))
    assert joined.error_code == 0
    (described,) = engine.call(DescribeGroupsRequest(version=5, groups=["cg"],
                                                     include_authorized_operations=False)).groups
    assert (described.error_code, described.group_id, described.group_state, described.protocol_type,
            described.protocol_data, described.members) == (0, "cg", "Dead", "", "", [])


# -- ListOffsets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 7])
def test_list_offsets_finding_no_record_answers_no_leader_epoch(engine, version):
    """UnifiedLog.fetchOffsetByTimestamp answers no epoch (-1) with the -1 offset of a timestamp (or
    max-timestamp) lookup that finds no record; LATEST and EARLIEST carry the leader's epoch (scenarios
    broker.list-offsets.empty-log, broker.list-offsets.v4/v6/v7).  (kgroup answered epoch 0.)"""
    asked = [(1, -1, -1), (-3, -1, -1), (-1, 0, 0), (-2, 0, 0)]
    if version < 7:
        asked = asked[:1] + asked[2:]  # MAX_TIMESTAMP (-3) is v7+ (KIP-734)
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    answer = engine.call(ListOffsetsRequest(version=version, replica_id=-1, isolation_level=0, topics=[
        topic_cls(version=version, name="foo", partitions=[
            topic_cls.ListOffsetsPartition(version=version, partition_index=0, current_leader_epoch=-1,
                                           timestamp=timestamp)
            for timestamp, _, _ in asked])]))
    got = [(p.error_code, p.offset, p.leader_epoch) for p in answer.topics[0].partitions]
    assert got == [(0, offset, epoch) for _, offset, epoch in asked]


# -- Produce: what a refused append answers ---------------------------------------------------------


def batch(count: int = 2, producer_id: int = -1, epoch: int = -1, sequence: int = -1,
          transactional: bool = False, timestamps=None) -> bytes:
    """A v2 record batch of ``count`` records, timestamps 1000, 1001... unless given."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    if producer_id >= 0:
        builder.set_producer_state(producer_id, epoch, sequence, transactional)
    for i in range(count):
        builder.append(timestamp=timestamps[i] if timestamps else 1_000 + i, key=b"k%d" % i,
                       value=b"v%d" % i, headers=[])
    builder.close()
    return bytes(builder.buffer())


def produce(records: bytes, topic: str = "foo", partition: int = 0, acks: int = -1, version: int = 9,
            transactional_id=None) -> ProduceRequest:
    topic_cls = ProduceRequest.TopicProduceData
    return ProduceRequest(version=version, transactional_id=transactional_id, acks=acks, timeout_ms=1_000,
                          topic_data=[topic_cls(version=version, name=topic, partition_data=[
                              topic_cls.PartitionProduceData(version=version, index=partition,
                                                             records=records)])])


def produced(engine, request) -> tuple:
    """(error code, base offset, log_append_time_ms, log_start_offset) of the one partition answered."""
    answer = engine.call(request).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset, answer.log_append_time_ms, answer.log_start_offset


def log_end(engine, topic: str = "foo") -> int:
    return engine.cluster.topics[topic][0].leader_log().leo


def _with(data: bytes, at: int, fmt: str, value: int, fix_crc: bool = False) -> bytes:
    changed = bytearray(data)
    struct.pack_into(fmt, changed, at, value)
    if fix_crc:
        struct.pack_into(">I", changed, 17, crc32c(bytes(changed[21:])))
    return bytes(changed)


_GOOD = batch(3)
_BAD_CRC = _GOOD[:-1] + bytes([_GOOD[-1] ^ 0xFF])


@pytest.mark.parametrize("topic, partition, acks, records, code", [
    ("nope", 0, -1, _GOOD, E.UNKNOWN_TOPIC_OR_PARTITION),
    ("foo", 5, -1, _GOOD, E.UNKNOWN_TOPIC_OR_PARTITION),
    ("foo", 0, 2, _GOOD, E.INVALID_REQUIRED_ACKS),
    ("__consumer_offsets", 0, -1, _GOOD, E.INVALID_TOPIC_EXCEPTION),
    ("__transaction_state", 0, -1, _GOOD, E.INVALID_TOPIC_EXCEPTION),
    ("foo", 0, -1, _BAD_CRC, E.CORRUPT_MESSAGE),
    ("foo", 0, -1, _with(_GOOD, 16, ">b", 1), E.INVALID_RECORD),                  # magic 1
    ("foo", 0, -1, _GOOD[:-4], E.INVALID_RECORD),                                # cut short
    ("foo", 0, -1, _with(_GOOD, 8, ">i", len(_GOOD) + 100), E.INVALID_RECORD),   # length past the data
    ("foo", 0, -1, b"", E.INVALID_RECORD),                                       # no batch at all
    ("foo", 0, -1, _GOOD[:11], E.INVALID_RECORD),                                # not even a length
    ("foo", 0, -1, _with(_GOOD, 8, ">i", 5), E.CORRUPT_MESSAGE),                 # below the record overhead
    ("foo", 0, -1, _GOOD + _GOOD, E.INVALID_RECORD),                             # two batches
    ("foo", 0, 2, _GOOD[:-4], E.INVALID_RECORD),                                 # validateRecords before acks
    ("foo", 0, 2, _BAD_CRC, E.INVALID_REQUIRED_ACKS),                            # acks before the log's CRC
    ("nope", 0, 2, _GOOD[:-4], E.UNKNOWN_TOPIC_OR_PARTITION),                    # existence first
    ("__consumer_offsets", 0, -1, _GOOD[:-4], E.INVALID_RECORD),                 # validateRecords first
], ids=["unknown-topic", "unknown-partition", "acks-2", "consumer-offsets", "transaction-state", "crc",
        "magic-1", "truncated", "length-past-data", "empty", "11-bytes", "length-below-overhead",
        "two-batches", "truncated-acks-2", "crc-acks-2", "unknown-topic-acks-2", "internal-truncated"])
def test_a_produce_refused_before_the_log_answers_log_start_offset_minus_one(
        engine, topic, partition, acks, records, code):
    """KafkaApis.handleProduceRequest answers an unknown partition and what
    ProduceRequest.validateRecords refuses (no whole batch, magic other than 2, more than one batch:
    INVALID_RECORD; a length below the record overhead: CORRUPT_MESSAGE) with
    ``new PartitionResponse(error)``, whose base offset, append time and log start are -1;
    ReplicaManager answers invalid acks (sendInvalidRequiredAcksResponse), an internal topic, a
    CorruptRecordException (the CRC) with LogAppendInfo.UNKNOWN_LOG_APPEND_INFO, -1 as well; in that
    order (scenarios broker.produce.unknown-topic, unknown-partition, invalid-acks, internal-topic,
    malformed-crc/magic/truncated/length).  (kgroup answered log_start_offset 0, CORRUPT_MESSAGE for a
    batch cut short or running past the data, and checked acks first.)"""
    engine.call(FindCoordinatorRequest(version=3, key="g", key_type=0, coordinator_keys=[]))
    ends = {t: log_end(engine, t) for t in ("foo", "__consumer_offsets") if t in engine.cluster.topics}
    assert produced(engine, produce(records, topic, partition, acks)) == (code, -1, -1, -1)
    assert {t: log_end(engine, t) for t in ends} == ends  # nothing appended


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state"])
def test_internal_topics_are_refused_even_to_kafkas_admin_client_id(engine, topic):
    """Deliberate departure (docs/conformance/broker.md): KafkaApis.handleProduceRequest lets the client
    id ``__admin_client`` (AdminUtils.ADMIN_CLIENT_ID) append to internal topics; kgroup's coordinators
    write their records in process, never by Produce, and would skip a raw batch there, so kgroup
    refuses it from every client."""
    engine.call(FindCoordinatorRequest(version=3, key="g", key_type=0, coordinator_keys=[]))
    answer = engine.call(produce(_GOOD, topic), client_id="__admin_client").responses[0]
    assert (answer.partition_responses[0].error_code, answer.partition_responses[0].log_start_offset) == (
        E.INVALID_TOPIC_EXCEPTION, -1)


@pytest.mark.parametrize("records, code", [
    (_with(batch(3), 57, ">i", 5, fix_crc=True), E.INVALID_RECORD),   # count 5 for 3 records
    (_with(batch(3), 21, ">h", 0x20, fix_crc=True), E.INVALID_RECORD),  # a control batch from a client
    (_with(batch(3), 21, ">h", 0x08, fix_crc=True), E.INVALID_TIMESTAMP),  # LogAppendTime from a client
], ids=["count", "control", "log-append-time"])
def test_a_batch_the_log_validator_refuses_answers_the_partitions_log_start(engine, records, code):
    """ReplicaManager.appendToLocalLog answers what LogValidator refuses (InvalidRecordException,
    InvalidTimestampException) with ``processFailedRecord``'s log start, the partition's: 0 (scenario
    broker.produce.malformed-count, which matched before and still does)."""
    assert produced(engine, produce(records)) == (code, -1, -1, 0)
    assert log_end(engine) == 0


def test_producer_state_refusals_answer_the_partitions_log_start(engine):
    """An idempotent batch the producer state refuses (OutOfOrderSequenceException,
    InvalidProducerEpochException) is answered with the partition's log start
    (ReplicaManager.processFailedRecord, scenario broker.produce.out-of-order-sequence: 0).  A
    transactional batch of an older epoch is refused by its KIP-890 verification
    first, with log start -1: tests/server/test_txn_verification.py."""
    assert produced(engine, produce(batch(1, 7, 1, 0))) == (0, 0, -1, 0)
    assert produced(engine, produce(batch(1, 7, 1, 5))) == (E.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1, 0)
    assert produced(engine, produce(batch(1, 7, 0, 1))) == (E.INVALID_PRODUCER_EPOCH, -1, -1, 0)
    assert log_end(engine) == 1


def test_bytes_after_the_last_whole_batch_are_dropped_as_kafka_trims_them(engine):
    """UnifiedLog.trimInvalidBytes: a whole batch followed by a partial one is appended without the
    partial bytes (ProduceRequest.validateRecords sees one batch).  (kgroup refused it,
    CORRUPT_MESSAGE.)"""
    assert produced(engine, produce(_GOOD + _GOOD[:30])) == (0, 0, -1, 0)
    assert produced(engine, produce(batch(1) + b"\x00" * 11)) == (0, 3, -1, 0)
    (stored,) = {id(e.payload.batch): e.payload.batch for e in engine.cluster.topics["foo"][0].leader_log()
                 .entries[:3]}.values()
    assert bytes(stored.tail) == _GOOD[16:]
    assert log_end(engine) == 4


# -- Produce: several batches, the base offset, batches broken two ways, unknown codecs --------------


def legacy_batch() -> bytes:
    """A magic 1 message set of one record (what a pre-0.11 producer sent)."""
    builder = MemoryRecordsBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(timestamp=2_000, key=b"k", value=b"v", headers=[])
    builder.close()
    return bytes(builder.buffer())


def _codec(records: bytes, codec: int, fix_crc: bool = True) -> bytes:
    (attributes,) = struct.unpack_from(">h", records, 21)
    return _with(records, 21, ">h", (attributes & ~0x07) | codec, fix_crc)


_BAD_CRC_1 = batch(1)[:-1] + bytes([batch(1)[-1] ^ 0xFF])


@pytest.mark.parametrize("records, code", [
    (batch(1) + _BAD_CRC_1 + batch(1), E.INVALID_RECORD),
    (_BAD_CRC_1 + batch(1), E.INVALID_RECORD),
    (batch(1) + batch(1) + batch(1), E.INVALID_RECORD),
    (batch(1) + legacy_batch(), E.INVALID_RECORD),
    (batch(1) + _with(batch(1), 8, ">i", 5), E.CORRUPT_MESSAGE),
    (_BAD_CRC_1 + _with(batch(1), 8, ">i", 5), E.CORRUPT_MESSAGE),
], ids=["second-crc", "first-crc", "three-valid", "magic1-after-v2", "second-length-tiny",
        "first-crc-second-length-tiny"])
def test_a_second_batch_is_refused_before_any_crc_is_read(engine, records, code):
    """ProduceRequest.validateRecords (KafkaApis.handleProduceRequest, before the log) allows exactly one
    batch per partition and looks at the second only through ByteBufferLogInputStream.nextBatchSize
    (a length below the record overhead: CORRUPT_MESSAGE); no CRC is read before, so nothing of the
    partition is appended and log_start_offset is -1 (scenarios broker.produce.batches.*).  (kgroup
    read the CRCs batch by batch: CORRUPT_MESSAGE for second-crc and first-crc.)"""
    assert produced(engine, produce(records)) == (code, -1, -1, -1)
    assert log_end(engine) == 0


@pytest.mark.parametrize("records, code, log_start", [
    (_with(_GOOD, 0, ">q", 5), E.INVALID_RECORD, 0),
    (_with(_BAD_CRC, 0, ">q", 5), E.INVALID_RECORD, 0),
], ids=["base-offset-5", "base-offset-5-bad-crc"])
def test_a_clients_batch_must_start_at_offset_0(engine, records, code, log_start):
    """UnifiedLog.analyzeAndValidateRecords refuses a client's v2 batch whose base offset is not 0
    (InvalidRecordException, before the size and CRC checks), answered with processFailedRecord's log
    start (scenarios broker.produce.base-offset-nonzero, malformed-crc-and-base-offset).  (kgroup
    appended it at offset 0, or answered CORRUPT_MESSAGE with -1 for a bad CRC.)"""
    assert produced(engine, produce(records)) == (code, -1, -1, log_start)
    assert log_end(engine) == 0


@pytest.mark.parametrize("records", [
    _with(_GOOD, 16, ">B", 3), _with(_GOOD, 16, ">B", 0xFF),
    _with(_with(_GOOD, 16, ">B", 3), 8, ">i", len(_GOOD) + 100),
], ids=["magic-3", "magic-minus-1", "magic-3-length-past"])
def test_a_magic_above_2_is_corrupt_even_before_the_batch_is_whole(engine, records):
    """ByteBufferLogInputStream.nextBatchSize throws CorruptRecordException for a magic below 0 or above
    2 as soon as the bytes up to it are there, before it compares the length with the data (scenarios
    broker.produce.malformed-magic-3, malformed-magic-3-and-length-past).  (kgroup answered
    INVALID_RECORD.)"""
    assert produced(engine, produce(records)) == (E.CORRUPT_MESSAGE, -1, -1, -1)
    assert log_end(engine) == 0


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_is_an_unknown_server_error_after_the_crc(engine, codec):
    """UnifiedLog.analyzeAndValidateRecords reads the codec after the CRC: CompressionType.forId throws
    an IllegalArgumentException, which ReplicaManager.appendToLocalLog answers as any Throwable,
    UNKNOWN_SERVER_ERROR (-1) with the partition's log start; a bad CRC is found first (scenarios
    broker.produce.unknown-codec-5/6/7, unknown-codec-5-and-crc).  (kgroup answered
    UNSUPPORTED_COMPRESSION_TYPE, 76.)"""
    assert produced(engine, produce(_codec(_GOOD, codec))) == (E.UNKNOWN_SERVER_ERROR, -1, -1, 0)
    assert produced(engine, produce(_codec(_GOOD, codec, fix_crc=False))) == (E.CORRUPT_MESSAGE, -1, -1, -1)
    assert log_end(engine) == 0


@pytest.mark.parametrize("version", [3, 5, 6])
def test_below_v7_an_unknown_codec_fails_the_whole_request(engine, version):
    """ProduceRequest.validateRecords reads the first batch's codec below v7 (its zstd check): codec 5
    throws an IllegalArgumentException out of KafkaApis.handleProduceRequest, whose error answer
    (ProduceRequest.getErrorResponse) is UNKNOWN_SERVER_ERROR for every partition, nothing appended
    (scenarios broker.produce.unknown-codec-5.v3, unknown-codec-5.v3-two-partitions).  (kgroup
    appended partition 0 and answered partition 1 UNSUPPORTED_COMPRESSION_TYPE.)  v7+ is the test
    above."""
    topic_cls = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=1_000, topic_data=[
        topic_cls(version=version, name="foo", partition_data=[
            topic_cls.PartitionProduceData(version=version, index=0, records=_GOOD),
            topic_cls.PartitionProduceData(version=version, index=1, records=_codec(_GOOD, 5))])])
    answers = engine.call(request).responses[0].partition_responses
    assert [(a.index, a.error_code, a.base_offset) for a in answers] == [
        (0, E.UNKNOWN_SERVER_ERROR, -1), (1, E.UNKNOWN_SERVER_ERROR, -1)]
    assert [p.leader_log().leo for p in engine.cluster.topics["foo"]] == [0, 0]


def test_a_batch_too_large_is_refused_before_its_crc(make_engine):
    """UnifiedLog.analyzeAndValidateRecords checks, in order, the base offset, the size against
    max.message.bytes (RecordTooLargeException, log start -1) and then the CRC.  (kgroup read the CRC
    first: CORRUPT_MESSAGE for a batch both too large and corrupt.)"""
    harness = make_engine(brokers=1, max_message_bytes=len(_GOOD) - 1)
    harness.cluster.create_topic("foo", 1, 1)
    assert produced(harness, produce(_BAD_CRC)) == (E.MESSAGE_TOO_LARGE, -1, -1, -1)
    assert produced(harness, produce(_with(_BAD_CRC, 0, ">q", 5))) == (E.INVALID_RECORD, -1, -1, 0)
    assert log_end(harness) == 0


# -- Produce: an acks=all append whose leader moves --------------------------------------------------


def test_an_acks_all_produce_losing_its_leader_keeps_the_appends_answer(make_engine):
    """DelayedProduce.tryComplete, when Partition.checkEnoughReplicasReachOffset answers
    NOT_LEADER_OR_FOLLOWER (this broker no longer leads), sets only ``status.responseStatus.error``: the
    PartitionResponse that ReplicaManager.buildProducePartitionStatus made from the append's
    LogAppendInfo keeps its base offset, append time and log start (as onExpiration keeps them with
    REQUEST_TIMED_OUT).  One broker cannot record it, hence no scenario.  (kgroup answered base_offset
    -1.)"""
    harness = make_engine(brokers=3)
    harness.cluster.create_topic("t", 1, 3)
    p = harness.cluster.topics["t"][0]
    leader = p.leader
    assert produced(harness, produce(batch(2), "t", acks=1)) == (0, 0, -1, 0)
    for follower in p.assigned:
        if follower != leader:
            harness.cluster.slow_follower(follower, 60_000)
    connection = harness.connect(leader)
    request = produce(batch(3), "t")
    assert harness.send(connection, request) == []   # waiting for the followers
    harness._collect(harness.engine.apply_fault(harness.now_ms,
                                                lambda now: harness.hosting.isolate_broker(leader, now)))
    assert p.leader != leader
    answer = harness.answer(connection, request).responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset, answer.log_append_time_ms, answer.log_start_offset) == (
        E.NOT_LEADER_OR_FOLLOWER, 2, -1, 0)


# -- Produce: a duplicate idempotent batch ----------------------------------------------------------


def test_a_duplicate_batch_answers_its_stored_max_timestamp_as_the_append_time(engine):
    """ProducerStateEntry.findDuplicateBatch returns the appended batch's BatchMetadata, whose timestamp
    ProducerAppendInfo took from ``batch.maxTimestamp()``; UnifiedLog.append answers a retried batch
    with it as ``logAppendTime`` (scenario broker.produce.idempotent-duplicate: 1001).  The max, not the
    last record's; the same once the producer state is rebuilt from the log (a new leader's
    UnifiedLog.rebuildProducerState).  (kgroup answered -1.)"""
    sent = batch(3, producer_id=9, epoch=0, sequence=0, timestamps=[1_000, 5_000, 3_000])
    assert produced(engine, produce(sent)) == (0, 0, -1, 0)
    assert produced(engine, produce(sent)) == (0, 0, 5_000, 0)
    engine.engine.data.producer_states.forget("foo")
    assert produced(engine, produce(sent)) == (0, 0, 5_000, 0)
    assert log_end(engine) == 3


# -- Fetch --------------------------------------------------------------------------------------------


def fetch(offset: int, version: int = 12) -> FetchRequest:
    fetch_topic = FetchRequest.FetchTopic
    return FetchRequest(version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[],
                        rack_id="", topics=[fetch_topic(version=version, topic="foo", partitions=[
                            fetch_topic.FetchPartition(version=version, partition=0, fetch_offset=offset,
                                                       partition_max_bytes=1 << 20, current_leader_epoch=-1,
                                                       last_fetched_epoch=-1, log_start_offset=-1)])])


@pytest.mark.parametrize("version", [5, 12])
def test_an_out_of_range_fetch_answers_no_high_watermark_lso_or_log_start(engine, version):
    """ReplicaManager.readFromLocalLog answers OffsetOutOfRangeException with createLogReadResult(e):
    high watermark, log start and last stable offset unknown, -1 (scenario broker.fetch.out-of-range).
    (kgroup answered the high watermark, the LSO and 0.)"""
    assert produced(engine, produce(batch(5))) == (0, 0, -1, 0)
    (far,) = engine.call(fetch(100, version)).responses[0].partitions
    assert (far.error_code, far.high_watermark, far.last_stable_offset, far.log_start_offset) == (
        E.OFFSET_OUT_OF_RANGE, -1, -1, -1)
    (near,) = engine.call(fetch(5, version)).responses[0].partitions
    assert (near.error_code, near.high_watermark, near.last_stable_offset, near.log_start_offset) == (
        0, 5, 5, 0)


# -- Metadata -------------------------------------------------------------------------------------


_INVALID_NAMES = ["", ".", "..", "bad/name", "bad name", "x" * 250]


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12])
@pytest.mark.parametrize("auto_create", [False, True])
def test_metadata_of_an_invalid_topic_name_is_invalid_topic_exception(make_engine, version, auto_create):
    """KafkaApis.getTopicMetadata: a name missing from the cache is checked with Topic.validate, at every
    version: INVALID_TOPIC_EXCEPTION for an invalid one, UNKNOWN_TOPIC_OR_PARTITION for a valid one
    (without auto-creation; with it, DefaultAutoTopicCreationManager refuses the invalid ones the same
    way) (scenarios broker.create-topics.name-*).  (kgroup answered UNKNOWN_TOPIC_OR_PARTITION.)"""
    harness = make_engine(brokers=1, auto_create_topics=auto_create)
    answer = harness.call(MetadataRequest(
        version=version, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
        topics=[MetadataRequest.MetadataRequestTopic(version=version, name=name, topic_id=NIL_UUID)
                for name in _INVALID_NAMES + ["missing"]]))
    got = [(t.name, t.error_code, t.partitions) for t in answer.topics]
    assert got[:-1] == [(name, E.INVALID_TOPIC_EXCEPTION, []) for name in _INVALID_NAMES]
    if not auto_create or version >= 4:  # Metadata v0-v3 ask for auto-creation (KIP-204: v4 may say no)
        assert got[-1] == ("missing", E.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert not set(_INVALID_NAMES) & set(harness.cluster.topics)
