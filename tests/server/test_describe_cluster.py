"""DescribeCluster (API key 60) as a Kafka 4 broker answers it: KafkaApis.handleDescribeCluster through
AuthHelper.computeDescribeClusterResponse (AuthHelperTest's testComputeDescribeClusterResponse* cases),
and every cluster operation when asked, as Kafka without an authorizer (issue 23 item 9)."""
from __future__ import annotations

import pytest
from kafka.protocol.admin import DescribeClusterRequest
from kafka.protocol.api_key import ApiKey
from kafka.protocol.metadata import ApiVersionsRequest

from kgroup.core.error_codes import ErrorCode
from kgroup.server import KafkaServer
from kgroup.server.acl_operations import AclOperation
from kgroup.testing.raw_kafka_connection import RawKafkaConnection

#: AclEntry.supportedOperations(CLUSTER): the 7 operations Kafka grants without an authorizer.
CLUSTER_OPERATIONS = {AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                      AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                      AclOperation.DESCRIBE}


def _request(version: int, operations: bool = True, endpoint_type: int = 1, fenced: bool = False):
    fields = {"include_cluster_authorized_operations": operations}
    if version >= 1:
        fields["endpoint_type"] = endpoint_type
    if version >= 2:
        fields["include_fenced_brokers"] = fenced
    return DescribeClusterRequest(version=version, **fields)


@pytest.fixture(scope="module")
def cluster():
    with KafkaServer(brokers=3) as server:
        yield server


@pytest.mark.parametrize("version", [0, 1, 2])
def test_each_version_round_trips_with_the_cluster_the_brokers_and_every_cluster_operation(cluster, version):
    connection = RawKafkaConnection(cluster.bootstrap_servers.split(",")[1])
    answer = connection.request(_request(version))
    assert answer.error_code == 0 and answer.error_message is None
    assert answer.cluster_id == "kgroup-in-memory"
    listeners = [int(host_port.rsplit(":", 1)[1]) for host_port in cluster.bootstrap_servers.split(",")]
    assert [(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers] == [
        (node, "127.0.0.1", port, None) for node, port in zip((1, 2, 3), listeners)]
    assert answer.controller_id in (1, 2, 3)
    assert answer.authorized_operations == CLUSTER_OPERATIONS
    if version >= 1:
        assert answer.endpoint_type == 1
    if version >= 2:
        assert [b.is_fenced for b in answer.brokers] == [False, False, False]


def test_operations_not_asked_for_answer_the_schema_default(cluster):
    connection = RawKafkaConnection(cluster.bootstrap_servers.split(",")[0])
    assert connection.request(_request(2, operations=False)).authorized_operations is None  # -2^31


@pytest.mark.parametrize("version, endpoint_type, code, message", [
    # A broker describes brokers: the controllers are another endpoint's (MISMATCHED_ENDPOINT_TYPE).
    (1, 2, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
     "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
    (2, 2, ErrorCode.MISMATCHED_ENDPOINT_TYPE,
     "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
    # testComputeDescribeClusterResponseV1WithUnknownEndpointType.
    (1, 123, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 123"),
    (2, 0, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 0"),
])
def test_an_endpoint_type_other_than_brokers_is_refused(cluster, version, endpoint_type, code, message):
    connection = RawKafkaConnection(cluster.bootstrap_servers.split(",")[0])
    answer = connection.request(_request(version, endpoint_type=endpoint_type))
    assert (answer.error_code, answer.error_message) == (code, message)
    assert answer.brokers == [] and answer.controller_id == -1 and answer.authorized_operations is None


def test_a_dead_broker_is_listed_fenced_only_when_asked():
    """KafkaApis lists a fenced broker (kgroup: dead or cut off) only with IncludeFencedBrokers (v2)."""
    with KafkaServer(brokers=3) as server:
        server.kill_broker(3)
        connection = RawKafkaConnection(server.bootstrap_servers.split(",")[0])
        unfenced = connection.request(_request(2))
        assert [(b.broker_id, b.is_fenced) for b in unfenced.brokers] == [(1, False), (2, False)]
        everyone = connection.request(_request(2, fenced=True))
        assert [(b.broker_id, b.is_fenced) for b in everyone.brokers] == [(1, False), (2, False), (3, True)]
        assert [b.broker_id for b in connection.request(_request(1)).brokers] == [1, 2]  # no such flag
        assert unfenced.controller_id in (1, 2) and everyone.controller_id in (1, 2)


def test_api_versions_advertises_describe_cluster_v0_to_v2(cluster):
    connection = RawKafkaConnection(cluster.bootstrap_servers.split(",")[0])
    answer = connection.request(ApiVersionsRequest(version=3, client_software_name="t",
                                                   client_software_version="1"))
    assert [(k.min_version, k.max_version) for k in answer.api_keys
            if k.api_key == ApiKey.DescribeCluster] == [(0, 2)]


def test_confluent_admin_describe_cluster_reads_the_seven_cluster_operations(cluster):
    admin_module = pytest.importorskip("confluent_kafka.admin")
    admin = admin_module.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    described = admin.describe_cluster(include_authorized_operations=True,
                                       request_timeout=20).result(timeout=30)
    assert described.cluster_id == "kgroup-in-memory"
    assert sorted(node.id for node in described.nodes) == [1, 2, 3]
    assert described.controller is not None and described.controller.id in (1, 2, 3)
    assert {operation.name for operation in described.authorized_operations} == {
        operation.name for operation in CLUSTER_OPERATIONS}
    # Answered by DescribeCluster, not by librdkafka's fallback to Metadata v10 (which it takes when 60 is
    # not advertised).
    assert [e.outcome for e in cluster.trace(api="DescribeCluster")][-1:] == ["answered"]
