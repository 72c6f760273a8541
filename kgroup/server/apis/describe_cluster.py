"""DescribeCluster (API key 60, KIP-700; v1 KIP-919 endpoint types, v2 KIP-1073 fenced brokers).

Answered as a Kafka 4 broker does (KafkaApis.handleDescribeCluster through
AuthHelper.computeDescribeClusterResponse): a broker describes the brokers, so a request for the
controllers answers MISMATCHED_ENDPOINT_TYPE and an endpoint type Kafka does not know answers
UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which cannot name one).  The brokers listed are
the unfenced ones, plus the fenced ones (kgroup: dead or cut off) when the request asks for them.
The controller id is the broker Metadata names (Kafka: a random alive broker), -1 when it is not
listed.  Without an authorizer every cluster operation is authorized (issue 23 item 9).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.api_key import ApiKey

from kgroup.core.error_codes import ErrorCode
from kgroup.server.acl_operations import CLUSTER_OPERATIONS, bit_set
from kgroup.server.apis.definition import broker_api

if TYPE_CHECKING:
    from kgroup.server.data_plane import DataPlane

#: Kafka's EndpointType ids (org.apache.kafka.common.requests.DescribeClusterRequest / KIP-919).
BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2


def _refusal(version: int, code: int, message: Optional[str]) -> Any:
    # Kafka answers an error with the schema's defaults elsewhere (endpoint type 1, no brokers).
    return DescribeClusterResponse(version=version, throttle_time_ms=0, error_code=int(code),
                                   error_message=message, endpoint_type=BROKER_ENDPOINT, cluster_id="",
                                   controller_id=-1, brokers=[], authorized_operations=None)


def _handle(data: "DataPlane", node_id: int, request: Any, version: int) -> Any:
    endpoint_type = request.endpoint_type if version >= 1 else BROKER_ENDPOINT
    if endpoint_type not in (BROKER_ENDPOINT, CONTROLLER_ENDPOINT):
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE if version >= 1 else ErrorCode.INVALID_REQUEST
        return _refusal(version, code, f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type == CONTROLLER_ENDPOINT:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE if version >= 1 else ErrorCode.INVALID_REQUEST
        return _refusal(version, code, "The request was sent to an endpoint of type BROKER, but we wanted an "
                                       "endpoint of type CONTROLLER")
    cluster = data.cluster
    live = set(cluster.live_brokers())
    include_fenced = version >= 2 and request.include_fenced_brokers
    broker_cls = DescribeClusterResponse.DescribeClusterBroker
    brokers = []
    for broker_id in sorted(cluster.brokers):
        fenced = broker_id not in live
        if fenced and not include_fenced:
            continue
        host, port = cluster.config.listener(broker_id)
        brokers.append(broker_cls(version=version, broker_id=broker_id, host=host, port=port,
                                  rack=cluster.config.rack(broker_id),
                                  is_fenced=fenced))
    controller_id = cluster.controller_id if cluster.controller_id is not None else -1
    if controller_id not in {b.broker_id for b in brokers}:
        controller_id = -1
    operations = CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else None
    return DescribeClusterResponse(
        version=version, throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=BROKER_ENDPOINT,
        cluster_id=data.config.cluster_id, controller_id=controller_id, brokers=brokers,
        authorized_operations=bit_set(operations) if operations is not None else None)


def _error_answer(request: Any, version: int, code: int) -> Any:
    return _refusal(version, code, None)


API = broker_api(ApiKey.DescribeCluster, (0, 2), DescribeClusterRequest, DescribeClusterResponse, _handle,
                 _error_answer)
