"""kgroup's broker fixed where the broker conformance suite found it answering differently from Kafka 4.4
(kgroup/broker_conformance, recorded/kafka-4.4.0.json): CreateTopics validate_only figures, a topic named
twice, colliding names; FindCoordinator of an unknown key type; SyncGroup v5 without protocol type and
name; the classic DescribeGroups of a KIP-848 group; ListOffsets finding no record.  Each test failed
before its fix (the answer kgroup gave is in its docstring)."""
from __future__ import annotations

import pytest
from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import JoinGroupRequest, ListOffsetsRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from kgroup.core.error_codes import ErrorCode as E
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
