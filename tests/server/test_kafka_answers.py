"""Answers the wire server gave differently from Kafka (found by librdkafka's test suite; issue 23),
each pinned frame by frame on the sans-I/O engine and named after the Kafka test or code it ports.

* OffsetCommit of a partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION (KafkaApis).
* CreateTopics with an unknown or badly typed topic config: INVALID_CONFIG, nothing created.
* Authorized operations asked for without an authorizer: every operation of the resource.
* OffsetDelete (API key 47), served with KafkaApis' and the group coordinator's semantics.
"""
from __future__ import annotations

import pytest
from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest
from kafka.protocol.metadata import MetadataRequest

from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import CLUSTER_OPERATIONS, GROUP_OPERATIONS, TOPIC_OPERATIONS, bit_set
from kgroup.server.apis import SUPPORTED_VERSIONS
from kgroup.core.error_codes import ErrorCode as E

GROUP = "g"
UNKNOWN = int(E.UNKNOWN_TOPIC_OR_PARTITION)
_COMMIT_TOPIC = OffsetCommitRequest.OffsetCommitRequestTopic
_DELETE_TOPIC = OffsetDeleteRequest.OffsetDeleteRequestTopic
_CREATABLE = CreateTopicsRequest.CreatableTopic


@pytest.fixture
def engine(make_engine):
    """One broker, topics "foo" and "bar" of two partitions; the group coordinator loaded."""
    harness = make_engine(brokers=1)
    for topic in ("foo", "bar"):
        harness.cluster.create_topic(topic, 2, 1)
        harness.engine.data.topic_id(topic)
    harness.advance(harness.config.group_load_time_ms)
    return harness


def offset_commit(version: int, topics: dict, group_id: str = GROUP) -> OffsetCommitRequest:
    """A simple (no generation) commit of ``{topic: {partition: offset}}``."""
    fields = {"generation_id_or_member_epoch": -1, "member_id": ""}
    if 2 <= version <= 4:
        fields["retention_time_ms"] = -1
    if version >= 7:
        fields["group_instance_id"] = None
    return OffsetCommitRequest(version=version, group_id=group_id, **fields, topics=[
        _COMMIT_TOPIC(version=version, name=name, partitions=[
            _COMMIT_TOPIC.OffsetCommitRequestPartition(version=version, partition_index=p, committed_offset=o,
                                                       committed_metadata="")
            for p, o in parts.items()])
        for name, parts in topics.items()])


def committed(engine, topic: str, partitions) -> dict:
    answer = engine.call(OffsetFetchRequest(version=7, group_id=GROUP, require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(version=7, name=topic,
                                                   partition_indexes=list(partitions))]))
    return {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}


def codes(answer) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}


# -- OffsetCommit --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(SUPPORTED_VERSIONS[OffsetCommitRequest.API_KEY][0],
                                          SUPPORTED_VERSIONS[OffsetCommitRequest.API_KEY][1] + 1))
def test_offset_commit_of_partitions_that_do_not_exist(engine, version):
    """KafkaApisTest.testHandleOffsetCommitRequestTopicsAndPartitionsValidation: foo exists with two
    partitions (foo-2 does not), bar exists, zar does not.  Only foo-0, foo-1, bar-0 and bar-1 reach the
    coordinator; the others answer UNKNOWN_TOPIC_OR_PARTITION.  (kgroup answered NO_ERROR for all of
    them and stored offsets of topics that do not exist.)"""
    request = offset_commit(version, {"foo": {0: 10, 1: 20, 2: 30}, "bar": {0: 40, 1: 50},
                                      "zar": {0: 60, 1: 70}})
    assert codes(engine.call(request)) == {
        ("foo", 0): 0, ("foo", 1): 0, ("foo", 2): UNKNOWN, ("bar", 0): 0, ("bar", 1): 0,
        ("zar", 0): UNKNOWN, ("zar", 1): UNKNOWN}
    assert committed(engine, "foo", [0, 1, 2]) == {0: 10, 1: 20, 2: -1}
    assert committed(engine, "zar", [0, 1]) == {0: -1, 1: -1}


def test_offset_commit_of_only_missing_topics_does_not_reach_the_coordinator(engine):
    """KafkaApis.handleOffsetCommitRequest: nothing left to commit, the answer is sent without asking the
    coordinator, so no group is created (a negative partition is never a partition)."""
    answer = engine.call(offset_commit(9, {"zar": {0: 1}, "foo": {-1: 1}}, group_id="nobody"))
    assert codes(answer) == {("zar", 0): UNKNOWN, ("foo", -1): UNKNOWN}
    coordinator = engine.hosting.coordinator_for("nobody")
    assert coordinator is not None and coordinator.group_ids() == []


def test_offset_commit_fault_still_answers_every_partition_with_its_code(engine):
    """fail_next answers with the fault's code on every partition the request names, existing or not."""
    from kgroup.server.faults import FaultAction
    engine.engine.faults.add(FaultAction("fail", error_code=27), api="OffsetCommit", count=1)
    answer = engine.call(offset_commit(8, {"foo": {0: 1}, "zar": {0: 1}}))
    assert codes(answer) == {("foo", 0): 27, ("zar", 0): 27}


# -- OffsetDelete --------------------------------------------------------------------------------


def offset_delete(topics: dict, group_id: str = GROUP) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(version=0, group_id=group_id, topics=[
        _DELETE_TOPIC(version=0, name=name, partitions=[
            _DELETE_TOPIC.OffsetDeleteRequestPartition(version=0, partition_index=p) for p in parts])
        for name, parts in topics.items()])


def test_offset_delete_is_served_and_advertised(engine):
    """OffsetDelete v0 is in ApiVersions (it was neither served nor listed as unsupported)."""
    from kafka.protocol.metadata import ApiVersionsRequest
    answer = engine.call(ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"))
    assert {(k.api_key, k.min_version, k.max_version) for k in answer.api_keys} >= {(47, 0, 0)}


def test_offset_delete_topics_and_partitions_validation(engine):
    """KafkaApisTest.testOffsetDeleteTopicsAndPartitionsValidation / testOffsetDeleteWithInvalidPartition:
    partitions that do not exist answer UNKNOWN_TOPIC_OR_PARTITION next to the coordinator's answers;
    OffsetMetadataManager.deleteOffsets removes the offset of an empty group."""
    assert set(codes(engine.call(offset_commit(9, {"foo": {0: 5, 1: 6}, "bar": {0: 7}}))).values()) == {0}
    answer = engine.call(offset_delete({"foo": [0, 2, -1], "bar": [0], "zar": [0]}))
    assert answer.error_code == 0
    assert codes(answer) == {("foo", 0): 0, ("foo", 2): UNKNOWN, ("foo", -1): UNKNOWN, ("bar", 0): 0,
                             ("zar", 0): UNKNOWN}
    assert committed(engine, "foo", [0, 1]) == {0: -1, 1: 6}
    assert committed(engine, "bar", [0]) == {0: -1}


def test_offset_delete_with_invalid_group(engine):
    """KafkaApisTest.testOffsetDeleteWithInvalidGroup / testOffsetDeleteWithInvalidGroupWithTopLevelError:
    the coordinator is asked even when no partition is left, and its group error replaces the answer."""
    for topics in ({}, {"foo": [0]}, {"topic-unknown": [0]}):
        answer = engine.call(offset_delete(topics, group_id="no-such-group"))
        assert (answer.error_code, answer.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])
    assert engine.call(offset_delete({"foo": [0]}, group_id="")).error_code == ErrorCode.INVALID_GROUP_ID


def test_offset_delete_refuses_topics_of_a_stable_group(engine):
    """GroupCoordinatorTest.testDeleteOffsetOfStableConsumerGroup, over the wire: a member subscribed to
    foo keeps foo's offsets (GROUP_SUBSCRIBED_TO_TOPIC); bar's go."""
    from kafka.protocol.consumer import JoinGroupRequest, SyncGroupRequest
    from kgroup.values import Subscription
    from kgroup.wire.consumer_protocol import encode_subscription
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(
        version=5, name="range", metadata=encode_subscription(Subscription(["foo"])))]
    join = JoinGroupRequest(version=5, group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                            member_id="", group_instance_id="static", protocol_type="consumer",
                            protocols=protocols)
    connection = engine.connect()
    engine.send(connection, join)
    engine.advance(1)
    joined = engine.answer(connection, join)
    assert joined.error_code == 0
    sync = SyncGroupRequest(version=3, group_id=GROUP, generation_id=joined.generation_id,
                            member_id=joined.member_id, group_instance_id="static", assignments=[])
    assert engine.call(sync).error_code == 0
    commit = offset_commit(7, {"foo": {0: 5}, "bar": {0: 7}})
    commit.generation_id_or_member_epoch, commit.member_id = joined.generation_id, joined.member_id
    commit.group_instance_id = "static"
    assert set(codes(engine.call(commit)).values()) == {0}
    answer = engine.call(offset_delete({"foo": [0], "bar": [0]}))
    assert answer.error_code == 0
    assert codes(answer) == {("foo", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("bar", 0): 0}
    assert committed(engine, "foo", [0]) == {0: 5} and committed(engine, "bar", [0]) == {0: -1}


# -- authorized operations ---------------------------------------------------------------------------


def test_acl_operation_bit_fields_are_kafkas():
    """AclEntry.supportedOperations with AclOperation's codes (READ 3, WRITE 4, CREATE 5, DELETE 6,
    ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12)."""
    assert TOPIC_OPERATIONS == 0b1101_1111_1000 == 3576 and bin(TOPIC_OPERATIONS).count("1") == 8
    assert CLUSTER_OPERATIONS == 0b1_1111_1010_0000 == 8096 and bin(CLUSTER_OPERATIONS).count("1") == 7
    assert GROUP_OPERATIONS == 0b1101_0100_1000 == 3400 and bin(GROUP_OPERATIONS).count("1") == 5


@pytest.mark.parametrize("version", [8, 10, 12])
def test_metadata_authorized_operations_without_an_authorizer(engine, version):
    """KafkaApis.handleTopicMetadataRequest with AuthHelper.authorizedOperations and no authorizer (what
    librdkafka's DescribeTopics / DescribeCluster and kafka-python's describe_topics ask): every topic
    operation per topic, every cluster operation for the cluster up to v10 (KIP-700 moved it to
    DescribeCluster); nothing when not asked.  (kgroup answered the schema default, no operations.)"""
    topics = [MetadataRequest.MetadataRequestTopic(version=version, name=n) for n in ("foo", "zar")]
    asked = engine.call(MetadataRequest(version=version, topics=topics, allow_auto_topic_creation=False,
                                        include_cluster_authorized_operations=True,
                                        include_topic_authorized_operations=True))
    # kafka-python decodes a bit field as the set of its bits (None for the schema default).
    assert {t.name: (t.error_code, t.authorized_operations) for t in asked.topics} == {
        "foo": (0, bit_set(TOPIC_OPERATIONS)), "zar": (UNKNOWN, bit_set(TOPIC_OPERATIONS))}
    assert bit_set(TOPIC_OPERATIONS) == {3, 4, 5, 6, 7, 8, 10, 11}
    if version <= 10:
        assert asked.authorized_operations == bit_set(CLUSTER_OPERATIONS) == {5, 7, 8, 9, 10, 11, 12}
    plain = engine.call(MetadataRequest(version=version, topics=topics, allow_auto_topic_creation=False))
    assert [t.authorized_operations for t in plain.topics] == [None, None]
    if version <= 10:
        assert plain.authorized_operations is None


def test_describe_groups_authorized_operations(engine):
    """KafkaApis.handleDescribeGroupsRequest (v3+): every group operation when asked."""
    engine.call(offset_commit(9, {"foo": {0: 1}}))
    for include, expected in ((True, bit_set(GROUP_OPERATIONS)), (False, None)):
        answer = engine.call(DescribeGroupsRequest(version=5, groups=[GROUP],
                                                   include_authorized_operations=include))
        assert [(g.error_code, g.authorized_operations) for g in answer.groups] == [(0, expected)]


# -- CreateTopics configs ----------------------------------------------------------------------------


def create_topic(name: str, configs: dict, validate_only: bool = False,
                 version: int = 7) -> CreateTopicsRequest:
    return CreateTopicsRequest(version=version, timeout_ms=1_000, validate_only=validate_only, topics=[
        _CREATABLE(version=version, name=name, num_partitions=1, replication_factor=1, assignments=[],
                   configs=[_CREATABLE.CreatableTopicConfig(version=version, name=k, value=v)
                            for k, v in configs.items()])])


@pytest.mark.parametrize("configs, message", [
    ({"dummy.doesntexist": "x"}, "Unknown topic config name: dummy.doesntexist"),
    ({"not.a.property": "error"}, "Unknown topic config name: not.a.property"),
    ({"message.format.version": "invalid-value"}, "message.format.version"),
    ({"retention.ms": "forever"}, "Not a number of type LONG"),
    ({"segment.bytes": "10"}, "at least 14"),
    ({"max.message.bytes": "2147483648"}, "Not a number of type INT"),
    ({"min.insync.replicas": "0"}, "at least 1"),
    ({"cleanup.policy": "compact,shred"}, "String must be one of: compact, delete"),
    ({"compression.type": "brotli"}, "String must be one of"),
    ({"message.timestamp.type": "WallClock"}, "String must be one of: CreateTime, LogAppendTime"),
    ({"unclean.leader.election.enable": "yes"}, "either true or false"),
    ({"min.cleanable.dirty.ratio": "2"}, "no greater than 1"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting"),
    ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled"),
    ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
])
@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_refuses_invalid_configs(engine, configs, message, validate_only):
    """CreateTopicsRequestTest.testErrorCreateTopicsRequests ("error-config", "error-config-value"),
    ReplicationControlManagerTest.testCreateTopicsWithConfigs (null value) and
    ControllerConfigurationValidatorTest.testInvalidTopicConfig / testNullTopicConfigValue: INVALID_CONFIG
    with LogConfig's reason, and no topic (validate_only answers the same).  (kgroup created the topic.)"""
    (result,) = engine.call(create_topic("configured", configs, validate_only)).topics
    assert result.error_code == E.INVALID_CONFIG == 40
    assert message in result.error_message
    assert "configured" not in engine.cluster.topics


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_accepts_valid_configs(engine, validate_only):
    """ControllerConfigurationValidatorTest.testValidTopicConfig: known names with values of their types
    (surrounding blanks trimmed, as ConfigDef.parseType does)."""
    configs = {"cleanup.policy": "compact, delete", "retention.ms": " -1 ", "segment.bytes": "1048576",
               "min.insync.replicas": "1", "compression.type": "zstd",
               "message.timestamp.type": "LogAppendTime",
               "max.message.bytes": "1000000", "min.cleanable.dirty.ratio": "0.3", "preallocate": "TRUE",
               "leader.replication.throttled.replicas": "*", "retention.bytes": "-5"}
    (result,) = engine.call(create_topic("configured", configs, validate_only)).topics
    assert (result.error_code, result.error_message) == (0, None)
    assert ("configured" in engine.cluster.topics) is not validate_only


def test_create_topics_checks_the_name_before_the_configs(engine):
    """ReplicationControlManager.createTopics: an existing or illegal name is answered as such first."""
    answer = engine.call(CreateTopicsRequest(version=7, timeout_ms=1_000, validate_only=False, topics=[
        _CREATABLE(version=7, name=name, num_partitions=1, replication_factor=1, assignments=[],
                   configs=[_CREATABLE.CreatableTopicConfig(version=7, name="nope", value="x")])
        for name in ("foo", "bad name")]))
    assert {r.name: r.error_code for r in answer.topics} == {"foo": E.TOPIC_ALREADY_EXISTS,
                                                             "bad name": E.INVALID_TOPIC_EXCEPTION}


def test_create_topics_with_replication_factor_minus_one_takes_the_brokers_default(engine):
    """KIP-464 (CreateTopics v4+): -1 partitions / replication factor mean the broker's defaults
    (CreateTopicsRequestTest.testValidCreateTopicsRequests, "topic10"); kgroup_spark creates its
    group's topic this way.  (kgroup answered INVALID_REPLICATION_FACTOR.)"""
    answer = engine.call(CreateTopicsRequest(version=7, timeout_ms=1_000, validate_only=False, topics=[
        _CREATABLE(version=7, name="defaulted", num_partitions=3, replication_factor=-1, assignments=[],
                   configs=[])]))
    assert [(r.name, r.error_code) for r in answer.topics] == [("defaulted", 0)]
    assert "defaulted" in engine.cluster.topics


# -- ConsumerGroupHeartbeat: blank ids ---------------------------------------------------------------


def test_consumer_group_heartbeat_with_a_blank_group_id_is_invalid(engine):
    """GroupMetadataManagerTest.testConsumerHeartbeatRequestValidation over the wire: a GroupId of
    spaces is INVALID_REQUEST ("GroupId can't be empty.") and creates no group (kgroup created one)."""
    from kafka.protocol.admin import ListGroupsRequest
    from kgroup.wire.kafka_python import ConsumerGroupHeartbeatRequestStruct
    for group_id, instance_id in (("   ", None), (GROUP, "  ")):
        answer = engine.call(ConsumerGroupHeartbeatRequestStruct(
            version=1, group_id=group_id, member_id="m-1", member_epoch=0, instance_id=instance_id,
            rebalance_timeout_ms=10_000, subscribed_topic_names=["foo"], topic_partitions=[]))
        assert answer.error_code == E.INVALID_REQUEST
        assert answer.error_message in ("GroupId can't be empty.", "InstanceId can't be empty.")
    assert engine.call(ListGroupsRequest(version=5, states_filter=[], types_filter=[])).groups == []
