"""The sans-I/O ServerEngine driven frame by frame with a mock clock (no sockets, no threads).

Each test names the Kafka code whose behaviour it pins:
``KafkaApis`` (request handling), ``ReplicaManager`` / ``DelayedProduce`` / ``DelayedFetch``
(acks=all held until the high watermark covers the append, fetch long polls),
``ProducerStateManager`` / ``ProducerAppendInfo`` (idempotent producer sequences),
``UnifiedLog.fetchOffsetByTimestamp`` (ListOffsets), ``ReplicationControlManager``
(CreateTopics / CreatePartitions errors) and the classic ``GroupCoordinator`` (parked JoinGroup).
"""
from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin import (
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
)
from kafka.protocol.consumer import FetchRequest, HeartbeatRequest, JoinGroupRequest, ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from kgroup.core.error_codes import ErrorCode
from kgroup.core.error_codes import ErrorCode as E

PRODUCE_V = 9
FETCH_V = 12
_TOPIC = ProduceRequest.TopicProduceData
_FETCH_TOPIC = FetchRequest.FetchTopic
_LIST_TOPIC = ListOffsetsRequest.ListOffsetsTopic


def produce(records: bytes, acks: int = -1, timeout_ms: int = 30_000, topic: str = "t", partition: int = 0,
            version: int = PRODUCE_V) -> ProduceRequest:
    return ProduceRequest(version=version, acks=acks, timeout_ms=timeout_ms, topic_data=[
        _TOPIC(version=version, name=topic, partition_data=[
            _TOPIC.PartitionProduceData(version=version, index=partition, records=records)])])


def fetch(offset: int, max_wait_ms: int, min_bytes: int = 1, topic: str = "t") -> FetchRequest:
    v = FETCH_V
    return FetchRequest(version=v, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                        max_bytes=1 << 20, forgotten_topics_data=[], topics=[
                            _FETCH_TOPIC(version=v, topic=topic, partitions=[
                                _FETCH_TOPIC.FetchPartition(version=v, partition=0, fetch_offset=offset,
                                                            partition_max_bytes=1 << 20,
                                                            current_leader_epoch=-1, log_start_offset=-1)])])


def list_offsets(*timestamps: int, version: int = 7) -> ListOffsetsRequest:
    return ListOffsetsRequest(version=version, replica_id=-1, topics=[
        _LIST_TOPIC(version=version, name="t", partitions=[
            _LIST_TOPIC.ListOffsetsPartition(version=version, partition_index=0, timestamp=ts,
                                             current_leader_epoch=-1)
            for ts in timestamps])])


def partition_answer(response):
    (topic,) = response.responses
    (answer,) = topic.partition_responses
    return answer


def fetched_answer(response):
    (topic,) = response.responses
    (answer,) = topic.partitions
    return answer


@pytest.fixture
def engine(make_engine):
    """Three brokers; topic "t" (one partition, three replicas) and "solo" (one replica)."""
    harness = make_engine(brokers=3)
    harness.cluster.create_topic("t", 1, 3)
    harness.cluster.create_topic("solo", 1, 1)
    harness.engine.data.topic_id("t")
    harness.engine.data.topic_id("solo")
    return harness


# -- Produce ------------------------------------------------------------------------------------


def test_acks_all_produce_is_held_until_the_high_watermark_covers_it(engine, make_records, kafka_codec):
    """ReplicaManager.appendRecords parks an acks=-1 append in DelayedProduce until every ISR
    member has it (the HW passes its last offset); only then is the response sent."""
    _, decode, _ = kafka_codec
    p = engine.cluster.topics["t"][0]
    for follower in p.assigned:
        if follower != p.leader:
            engine.cluster.slow_follower(follower, 1_000)
    connection = engine.connect(p.leader)
    request = produce(make_records(3))
    assert engine.send(connection, request) == []
    assert p.leader_log().leo == 3 and p.leader_log().hw == 0   # appended, not committed
    engine.advance(990)
    assert engine.replies[connection] == []
    assert p.leader_log().hw < 3
    engine.advance(100)   # the slowed followers' next fetch round
    assert p.leader_log().hw == 3
    answer = partition_answer(engine.answer(connection, request))
    assert (answer.error_code, answer.base_offset) == (0, 0)
    (entry,) = [e for e in engine.engine.trace if e.api == "Produce"]
    assert entry.received_ms == 0 and 990 < entry.answered_ms <= 1_090


def test_acks_all_produce_times_out_when_the_isr_never_catches_up(engine, make_records):
    """DelayedProduce expiry: REQUEST_TIMED_OUT after the request's timeout_ms, data stays appended."""
    p = engine.cluster.topics["t"][0]
    for follower in p.assigned:
        if follower != p.leader:
            engine.cluster.slow_follower(follower, 60_000)
    connection = engine.connect(p.leader)
    request = produce(make_records(1), timeout_ms=500)
    engine.send(connection, request)
    engine.advance(499)
    assert engine.replies[connection] == []
    engine.advance(1)
    assert partition_answer(engine.answer(connection, request)).error_code == E.REQUEST_TIMED_OUT


def test_acks_1_is_answered_at_once_and_acks_0_not_at_all(engine, make_records, kafka_codec):
    """KafkaApis.handleProduceRequest: acks=0 sends no response (the connection just reads on)."""
    leader = engine.leader("t")
    one = engine.connect(leader)
    engine.send(one, produce(make_records(2), acks=1))
    assert partition_answer(engine.answer(one, produce(b"", acks=1))).base_offset == 0
    zero = engine.connect(leader)
    replies = engine.send(zero, produce(make_records(2), acks=0), correlation_id=7)
    assert [(r.data, r.close) for r in replies if r.connection_id == zero] == [(None, False)]
    assert engine.cluster.topics["t"][0].leader_log().leo == 4   # appended all the same
    (entry,) = [e for e in engine.engine.trace if e.correlation_id == 7]
    assert entry.outcome == "no response (acks=0)"


def test_produce_to_a_follower_is_not_leader_or_follower(engine, make_records):
    follower = next(b for b in engine.cluster.topics["t"][0].assigned if b != engine.leader("t"))
    answer = partition_answer(engine.call(produce(make_records(1)), node_id=follower))
    assert answer.error_code == E.NOT_LEADER_OR_FOLLOWER and answer.base_offset == -1


def test_idempotent_duplicate_batch_returns_the_original_offset(engine, make_records):
    """ProducerStateManager keeps the last 5 batches per producer; a retried batch
    (same producer id, epoch, base sequence) is not appended again and is answered with the
    offset the original got (ProducerStateEntry.findDuplicateBatch)."""
    leader = engine.leader("solo")
    init = engine.call(InitProducerIdRequest(version=4, transactional_id=None, transaction_timeout_ms=60_000,
                                             producer_id=-1, producer_epoch=-1))
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    engine.call(produce(make_records(2, value=b"other"), acks=1, topic="solo"), node_id=leader)  # offsets 0-1
    first = produce(make_records(3, pid, epoch, 0), acks=1, topic="solo")
    original = partition_answer(engine.call(first, node_id=leader))
    assert (original.error_code, original.base_offset) == (0, 2)
    second = partition_answer(engine.call(produce(make_records(2, pid, epoch, 3), acks=1, topic="solo"),
                                          node_id=leader))
    assert second.base_offset == 5
    retried = partition_answer(engine.call(first, node_id=leader))
    assert (retried.error_code, retried.base_offset) == (0, 2)
    assert engine.cluster.topics["solo"][0].leader_log().leo == 7   # nothing appended twice


def test_idempotent_sequence_gap_is_out_of_order_and_old_epoch_is_fenced(engine, make_records):
    """ProducerAppendInfo.checkSequence: a base sequence that does not follow the last one is
    OUT_OF_ORDER_SEQUENCE_NUMBER; a batch from an older epoch is INVALID_PRODUCER_EPOCH."""
    leader = engine.leader("solo")
    engine.call(produce(make_records(3, 42, 1, 0), acks=1, topic="solo"), node_id=leader)
    gap = partition_answer(engine.call(produce(make_records(1, 42, 1, 5), acks=1, topic="solo"),
                                       node_id=leader))
    assert (gap.error_code, gap.base_offset) == (E.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    old = partition_answer(engine.call(produce(make_records(1, 42, 0, 3), acks=1, topic="solo"),
                                       node_id=leader))
    assert old.error_code == E.INVALID_PRODUCER_EPOCH
    in_order = partition_answer(engine.call(produce(make_records(1, 42, 1, 3), acks=1, topic="solo"),
                                            node_id=leader))
    assert (in_order.error_code, in_order.base_offset) == (0, 3)
    assert engine.cluster.topics["solo"][0].leader_log().leo == 4


def test_corrupt_records_are_refused_without_touching_the_log(engine, make_records):
    """LogValidator: a batch whose CRC does not match is CORRUPT_MESSAGE; nothing is appended."""
    data = bytearray(make_records(2))
    data[-1] ^= 0xFF
    answer = partition_answer(engine.call(produce(bytes(data), acks=1, topic="solo"),
                                          node_id=engine.leader("solo")))
    assert answer.error_code == E.CORRUPT_MESSAGE
    assert engine.cluster.topics["solo"][0].leader_log().leo == 0


def test_init_producer_id_without_a_transactional_id_is_a_fresh_id_from_any_broker(engine):
    """TransactionCoordinator.handleInitProducerId with a null transactional id: any broker answers a
    new producer id, epoch 0, from the cluster's one counter; a KIP-360 producer id and epoch in the
    request change nothing (Kafka "blindly accepts" and generates a new id).  Transactional ids:
    tests/server/test_transactions_wire.py."""
    ids = []
    for node_id in (1, 2, 3):
        plain = engine.call(InitProducerIdRequest(version=4, transactional_id=None,
                                                  transaction_timeout_ms=60_000, producer_id=-1,
                                                  producer_epoch=-1), node_id=node_id)
        assert (plain.error_code, plain.producer_epoch) == (0, 0)
        ids.append(plain.producer_id)
    again = engine.call(InitProducerIdRequest(version=4, transactional_id=None, transaction_timeout_ms=60_000,
                                              producer_id=ids[0], producer_epoch=0))
    assert (again.error_code, again.producer_epoch) == (0, 0)
    ids.append(again.producer_id)
    assert ids == list(range(ids[0], ids[0] + 4)) and ids[0] == engine.config.first_producer_id


# -- Fetch ----------------------------------------------------------------------------------------


def test_fetch_long_poll_is_answered_when_data_arrives(engine, make_records):
    """DelayedFetch: a fetch with nothing to read waits; an append that moves the HW completes it."""
    leader = engine.leader("solo")
    reader = engine.connect(leader)
    request = fetch(0, max_wait_ms=5_000, topic="solo")
    assert engine.send(reader, request) == []
    engine.advance(1_000)
    assert engine.replies[reader] == []
    writer = engine.connect(leader)
    replies = engine.send(writer, produce(make_records(2), acks=1, topic="solo"), correlation_id=2)
    assert {r.connection_id for r in replies} == {reader, writer}   # the append completed the fetch
    answer = fetched_answer(engine.answer(reader, request))
    assert answer.error_code == 0 and answer.high_watermark == 2 and len(answer.records) > 0
    (entry,) = [e for e in engine.engine.trace if e.api == "Fetch"]
    assert (entry.received_ms, entry.answered_ms) == (0, 1_000)


def test_fetch_long_poll_is_answered_empty_at_max_wait(engine):
    leader = engine.leader("solo")
    reader = engine.connect(leader)
    request = fetch(0, max_wait_ms=500, topic="solo")
    engine.send(reader, request)
    engine.advance(499)
    assert engine.replies[reader] == []
    engine.advance(1)
    answer = fetched_answer(engine.answer(reader, request))
    assert answer.error_code == 0 and not answer.records and answer.high_watermark == 0


def test_fetch_out_of_range_is_answered_at_once(engine):
    """ReplicaManager.readFromLog: an offset past the log end is OFFSET_OUT_OF_RANGE, no wait."""
    answer = fetched_answer(engine.call(fetch(10, max_wait_ms=5_000, topic="solo"),
                                        node_id=engine.leader("solo")))
    assert answer.error_code == E.OFFSET_OUT_OF_RANGE


# -- ListOffsets ----------------------------------------------------------------------------------


def test_list_offsets_earliest_latest_and_by_timestamp(engine, make_records):
    """UnifiedLog.fetchOffsetByTimestamp: -2 is the log start, -1 the HW, -3 the record with the
    largest timestamp (v7, KIP-734), t the first record with timestamp >= t (-1 if none)."""
    leader = engine.leader("solo")
    engine.call(produce(make_records(3, timestamps=[1_000, 3_000, 2_000]), acks=1, topic="solo"),
                node_id=leader)
    engine.call(produce(make_records(2, timestamps=[4_000, 5_000]), acks=1, topic="solo"), node_id=leader)
    request = list_offsets(-2, -1, -3, 1_500, 3_500, 9_000)
    request.topics[0].name = "solo"
    (topic,) = engine.call(request, node_id=leader).topics
    found = [(p.error_code, p.offset, p.timestamp) for p in topic.partitions]
    assert found == [(0, 0, -1), (0, 5, -1), (0, 4, 5_000), (0, 1, 3_000), (0, 3, 4_000), (0, -1, -1)]
    # No epoch with the offset of a lookup that found nothing (Kafka 4.4's broker.list-offsets.* answers).
    epoch = engine.cluster.topics["solo"][0].leader_epoch
    assert [p.leader_epoch for p in topic.partitions] == [epoch] * 5 + [-1]


def test_list_offsets_on_a_follower_and_with_a_stale_epoch(engine):
    """Partition.fetchOffsetForTimestamp: NOT_LEADER_OR_FOLLOWER off the leader; a current leader
    epoch older than the partition's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH."""
    p = engine.cluster.topics["t"][0]
    follower = next(b for b in p.assigned if b != p.leader)
    (topic,) = engine.call(list_offsets(-1), node_id=follower).topics
    assert topic.partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER
    engine.engine.apply_fault(engine.now_ms, lambda now: engine.hosting.kill_broker(p.leader, now))
    assert p.leader_epoch >= 1
    for epoch, code in ((p.leader_epoch - 1, E.FENCED_LEADER_EPOCH),
                        (p.leader_epoch + 1, E.UNKNOWN_LEADER_EPOCH)):
        request = list_offsets(-1)
        request.topics[0].partitions[0].current_leader_epoch = epoch
        (topic,) = engine.call(request, node_id=p.leader).topics
        assert topic.partitions[0].error_code == code


# -- Metadata ------------------------------------------------------------------------------------


def test_metadata_by_topic_id_answers_the_name(engine):
    """KIP-516 (Metadata v10+): a topic asked by id with a null name is answered with its name;
    an unknown id is UNKNOWN_TOPIC_ID."""
    topic_id = engine.engine.data.topic_id("t")
    unknown = uuid.uuid4()
    request = MetadataRequest(version=12, allow_auto_topic_creation=False, topics=[
        MetadataRequest.MetadataRequestTopic(version=12, topic_id=topic_id, name=None),
        MetadataRequest.MetadataRequestTopic(version=12, topic_id=unknown, name=None)])
    known, missing = engine.call(request).topics
    assert (known.error_code, known.name, known.topic_id) == (0, "t", topic_id)
    assert [p.leader_id for p in known.partitions] == [engine.leader("t")]
    assert (missing.error_code, missing.name) == (E.UNKNOWN_TOPIC_ID, None)


def test_metadata_auto_creates_only_when_asked(engine):
    off = MetadataRequest(version=12, allow_auto_topic_creation=False, topics=[
        MetadataRequest.MetadataRequestTopic(version=12, topic_id=None, name="fresh")])
    assert engine.call(off).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert "fresh" not in engine.cluster.topics
    on = MetadataRequest(version=12, allow_auto_topic_creation=True, topics=[
        MetadataRequest.MetadataRequestTopic(version=12, topic_id=None, name="fresh")])
    (topic,) = engine.call(on).topics
    assert topic.error_code == 0 and len(topic.partitions) == 1 and "fresh" in engine.cluster.topics


# -- topic admin ------------------------------------------------------------------------------------

_CREATABLE = CreateTopicsRequest.CreatableTopic


def create_topics(*topics, validate_only: bool = False, version: int = 7) -> CreateTopicsRequest:
    return CreateTopicsRequest(version=version, timeout_ms=1_000, validate_only=validate_only, topics=[
        _CREATABLE(version=version, name=name, num_partitions=partitions, replication_factor=rf,
                   assignments=[], configs=[])
        for name, partitions, rf in topics])


def test_create_topics_errors(engine):
    """ReplicationControlManager.createTopics / validateCreateTopic: each topic gets its own error."""
    answer = engine.call(create_topics(("t", 1, 1), ("zero", 0, 1), ("bad rf", 1, 1), ("rf", 1, 4),
                                       ("rf0", 1, 0), ("ok", 2, 2), ("default", -1, -1)))
    codes = {r.name: r.error_code for r in answer.topics}
    assert codes == {"t": E.TOPIC_ALREADY_EXISTS, "zero": E.INVALID_PARTITIONS,
                     "bad rf": E.INVALID_TOPIC_EXCEPTION, "rf": E.INVALID_REPLICATION_FACTOR,
                     "rf0": E.INVALID_REPLICATION_FACTOR, "ok": 0, "default": 0}
    created = {r.name: (r.num_partitions, r.replication_factor) for r in answer.topics if r.error_code == 0}
    assert created == {"ok": (2, 2), "default": (1, 3)}
    assert {"ok", "default"} <= set(engine.cluster.topics) and "zero" not in engine.cluster.topics


def test_create_topics_validate_only_creates_nothing(engine):
    (result,) = engine.call(create_topics(("dry", 3, 1), validate_only=True)).topics
    assert result.error_code == 0 and "dry" not in engine.cluster.topics


def test_create_topics_over_the_partition_cap_is_a_policy_violation(engine):
    """ReplicationControlManager.validateTotalNumberOfPartitions: more than 10,000 partitions in
    one request refuses every topic of it with POLICY_VIOLATION (found by the frame fuzzer:
    a mutated count made the server allocate partitions for minutes)."""
    answer = engine.call(create_topics(("small", 1, 1), ("huge", 2_000_000_000, 1)))
    assert [(r.name, r.error_code) for r in answer.topics] == [("small", E.POLICY_VIOLATION),
                                                               ("huge", E.POLICY_VIOLATION)]
    assert "small" not in engine.cluster.topics


def test_delete_topics_errors(engine):
    v6 = DeleteTopicsRequest(version=6, timeout_ms=1_000, topic_names=[], topics=[
        DeleteTopicsRequest.DeleteTopicState(version=6, name="nope", topic_id=None),
        DeleteTopicsRequest.DeleteTopicState(version=6, name=None, topic_id=uuid.uuid4()),
        DeleteTopicsRequest.DeleteTopicState(version=6, name="__consumer_offsets", topic_id=None),
        DeleteTopicsRequest.DeleteTopicState(version=6, name=None,
                                             topic_id=engine.engine.data.topic_id("solo"))])
    codes = [(r.name, r.error_code) for r in engine.call(v6).responses]
    assert codes == [("nope", E.UNKNOWN_TOPIC_OR_PARTITION), (None, E.UNKNOWN_TOPIC_ID),
                     ("__consumer_offsets", E.INVALID_TOPIC_EXCEPTION), ("solo", 0)]
    assert "solo" not in engine.cluster.topics
    v5 = DeleteTopicsRequest(version=5, timeout_ms=1_000, topic_names=["t", "t2"])
    assert [(r.name, r.error_code) for r in engine.call(v5).responses] == [
        ("t", 0), ("t2", E.UNKNOWN_TOPIC_OR_PARTITION)]


def test_create_partitions_errors(engine):
    """ReplicationControlManager.createPartitions: unknown topic, a count that does not grow the
    topic (INVALID_PARTITIONS), assignments (refused here), a count over the per-request cap."""
    cp = CreatePartitionsRequest.CreatePartitionsTopic
    request = CreatePartitionsRequest(version=3, timeout_ms=1_000, validate_only=False, topics=[
        cp(version=3, name="nope", count=2, assignments=None),
        cp(version=3, name="t", count=1, assignments=None),
        cp(version=3, name="solo", count=3, assignments=[
            cp.CreatePartitionsAssignment(version=3, broker_ids=[1]),
            cp.CreatePartitionsAssignment(version=3, broker_ids=[2])]),
        cp(version=3, name="t", count=20_000, assignments=None)])
    codes = [(r.name, r.error_code) for r in engine.call(request).results]
    assert codes == [("nope", E.UNKNOWN_TOPIC_OR_PARTITION), ("t", E.INVALID_PARTITIONS),
                     ("solo", E.INVALID_REPLICA_ASSIGNMENT), ("t", E.POLICY_VIOLATION)]
    grow = CreatePartitionsRequest(version=3, timeout_ms=1_000, validate_only=False,
                                   topics=[cp(version=3, name="t", count=4, assignments=None)])
    assert [r.error_code for r in engine.call(grow).results] == [0]
    assert len(engine.cluster.topics["t"]) == 4


# -- groups -----------------------------------------------------------------------------------


JOIN_V = 5


def join(member_id: str, rebalance_timeout_ms: int = 5_000) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=JOIN_V, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id, protocol_type="consumer", protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(version=JOIN_V, name="range", metadata=b"")])


def test_join_group_is_parked_until_the_rebalance_completes(engine, kafka_codec):
    """GroupCoordinator.handleJoinGroup: a new member's JoinGroup is held while the group
    rebalances and answered when every known member rejoined (here: after the stable member
    learnt of the rebalance through REBALANCE_IN_PROGRESS on its heartbeat)."""
    _, decode, _ = kafka_codec
    engine.advance(200)   # the coordinator finished loading its partition
    node = engine.hosting.coordinator_node("g")
    a, b = engine.connect(node), engine.connect(node)

    def join_and_get_id(connection: int) -> str:
        request = join("")
        (reply,) = engine.send(connection, request)
        answer = decode(request, reply.data)
        assert answer.error_code == ErrorCode.MEMBER_ID_REQUIRED
        return answer.member_id

    member_a = join_and_get_id(a)
    engine.send(a, join(member_a), correlation_id=2)
    (reply,) = engine.advance(0)   # the (zero) initial rebalance delay fires at the same millisecond
    first = decode(join(member_a), reply.data)
    assert first.error_code == 0 and first.generation_id == 1 and first.leader == member_a

    member_b = join_and_get_id(b)
    assert engine.send(b, join(member_b), correlation_id=2) == []   # parked: A must rejoin first
    assert engine.advance(1_000) == []
    heartbeat = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id=member_a)
    (reply,) = engine.send(a, heartbeat, correlation_id=3)
    assert decode(heartbeat, reply.data).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    replies = engine.send(a, join(member_a), correlation_id=4) + engine.advance(0)   # completes the rebalance
    answers = {r.connection_id: decode(join(""), r.data) for r in replies}
    assert set(answers) == {a, b}
    assert {x.generation_id for x in answers.values()} == {2}
    assert {x.error_code for x in answers.values()} == {0}
    parked = [e for e in engine.engine.trace if e.api == "JoinGroup" and e.connection_id == b][-1]
    assert parked.answered_ms - parked.received_ms == 1_000


def test_parked_join_is_answered_at_the_rebalance_timeout(engine, kafka_codec):
    """A member that never rejoins is removed when the rebalance timeout expires; the parked
    JoinGroup of the new member is answered then, with a generation of its own."""
    _, decode, _ = kafka_codec
    engine.advance(200)
    node = engine.hosting.coordinator_node("g")
    a, b = engine.connect(node), engine.connect(node)
    first = join("", rebalance_timeout_ms=3_000)
    member_a = decode(first, engine.send(a, first)[0].data).member_id
    engine.send(a, join(member_a, 3_000), correlation_id=2)
    assert decode(first, engine.advance(0)[0].data).generation_id == 1
    member_b = decode(first, engine.send(b, first)[0].data).member_id
    assert engine.send(b, join(member_b, 3_000), correlation_id=2) == []
    engine.advance(2_999)
    assert len([r for r in engine.replies[b] if r.data]) == 1   # only the MEMBER_ID_REQUIRED answer
    engine.advance(1)
    answer = decode(first, [r for r in engine.replies[b] if r.data][-1].data)
    assert answer.error_code == 0 and answer.generation_id == 2 and answer.leader == member_b
    assert [m.member_id for m in answer.members] == [member_b]


def test_offset_fetch_v1_carries_a_group_error_on_every_partition(make_engine):
    """OffsetFetch v0-v1 have no top-level error code: Kafka's OffsetFetchRequest.getErrorResponse
    puts the error on every requested partition.  (It used to answer an empty topic list, which
    a v1 client reads as "nothing committed" while the coordinator is still loading.)"""
    from kafka.protocol.consumer import OffsetFetchRequest
    harness = make_engine(brokers=1)   # at time 0 the coordinator is loading its partition
    topic = OffsetFetchRequest.OffsetFetchRequestTopic
    for version in (1, 2):
        answer = harness.call(OffsetFetchRequest(version=version, group_id="g", topics=[
            topic(version=version, name="t", partition_indexes=[0, 1])]))
        if version == 1:
            loading = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert [(p.partition_index, p.error_code, p.committed_offset)
                    for p in answer.topics[0].partitions] == [(0, loading, -1), (1, loading, -1)]
        else:
            assert (answer.error_code, answer.topics) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])


# -- OffsetForLeaderEpoch -----------------------------------------------------------------------


def test_offset_for_leader_epoch_answers_where_each_epoch_ends(engine, make_records):
    """LeaderEpochFileCache.endOffsetFor on the leader: the latest epoch ends at the LEO, an older
    one where the next epoch starts, one older than any known is (-1, -1); the current leader
    epoch fences like Fetch.  (kafka-python 3 validates its position this way after every leader
    change; without the API its consumer stalled on the partition.)"""
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest
    p = engine.cluster.topics["t"][0]
    first_leader = p.leader
    engine.call(produce(make_records(3)), node_id=first_leader)
    engine.advance(100)
    epoch_before = p.leader_epoch
    engine.engine.apply_fault(engine.now_ms, lambda now: engine.hosting.kill_broker(first_leader, now))
    engine.call(produce(make_records(2), acks=1), node_id=p.leader)
    topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic

    def ask(node: int, *epochs: int, current: int = -1):
        request = OffsetForLeaderEpochRequest(version=4, replica_id=-1, topics=[
            topic(version=4, topic="t", partitions=[
                topic.OffsetForLeaderPartition(version=4, partition=0, current_leader_epoch=current,
                                               leader_epoch=e)
                for e in epochs])])
        answered = engine.call(request, node_id=node).topics[0].partitions
        return [(x.error_code, x.leader_epoch, x.end_offset) for x in answered]

    assert ask(p.leader, epoch_before, p.leader_epoch, -1) == [
        (0, epoch_before, 3), (0, p.leader_epoch, 5), (0, -1, -1)]
    assert ask(p.leader, 0, current=p.leader_epoch - 1)[0][0] == E.FENCED_LEADER_EPOCH
    assert ask(p.leader, 0, current=p.leader_epoch + 1)[0][0] == E.UNKNOWN_LEADER_EPOCH
    follower = next(b for b in p.isr if b != p.leader)
    assert ask(follower, 0)[0][0] == E.NOT_LEADER_OR_FOLLOWER


def test_create_topics_with_replica_assignments(engine):
    """ReplicationControlManager.createTopic with manual assignments: counts must be -1
    (INVALID_REQUEST), partitions must be 0..n-1, replicas live, distinct and of one size
    (INVALID_REPLICA_ASSIGNMENT)."""
    ra = _CREATABLE.CreatableReplicaAssignment

    def topic(name, assignments, partitions=-1, rf=-1):
        return _CREATABLE(version=7, name=name, num_partitions=partitions, replication_factor=rf,
                          configs=[], assignments=[ra(version=7, partition_index=i, broker_ids=b)
                                                   for i, b in assignments])

    request = CreateTopicsRequest(version=7, timeout_ms=1_000, validate_only=False, topics=[
        topic("placed", [(0, [2, 3]), (1, [3, 1])]),
        topic("counted", [(0, [1])], partitions=1),
        topic("gap", [(0, [1]), (2, [2])]),
        topic("ghost", [(0, [9])]),
        topic("twice", [(0, [1, 1])]),
        topic("ragged", [(0, [1, 2]), (1, [3])])])
    codes = {r.name: r.error_code for r in engine.call(request).topics}
    assert codes == {"placed": 0, "counted": E.INVALID_REQUEST, "gap": E.INVALID_REPLICA_ASSIGNMENT,
                     "ghost": E.INVALID_REPLICA_ASSIGNMENT, "twice": E.INVALID_REPLICA_ASSIGNMENT,
                     "ragged": E.INVALID_REPLICA_ASSIGNMENT}
    placed = engine.cluster.topics["placed"]
    assert [p.assigned for p in placed] == [[2, 3], [3, 1]] and [p.leader for p in placed] == [2, 3]
