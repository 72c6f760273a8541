"""The API versions the server speaks, and the kafka-python message class of each API.

Each range starts at the oldest version Kafka 4 still serves (the schema's
``validVersions``, which kafka-python ships) and stops at the newest version
whose semantics kgroup implements, so a range always holds both non-flexible
and flexible versions and old and new clients negotiate what they share.
Ranges stop short of the topic-id-only versions (Fetch v13+, Produce v13,
OffsetCommit/OffsetFetch v10).  The KIP-848 APIs (ConsumerGroupHeartbeat,
ConsumerGroupDescribe) are flexible in every version; kafka-python does not
ship their classes, :mod:`kgroup.server.consumer_group_api` builds them from
Kafka's schemas.
"""
from __future__ import annotations

from typing import Dict, Tuple, Type

from kafka.protocol.admin import (
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest,
    DescribeGroupsRequest, ListGroupsRequest,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListOffsetsRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from kgroup.wire.kafka_python import ConsumerGroupDescribeRequestStruct, ConsumerGroupHeartbeatRequestStruct

__all__ = ["ApiKey", "REQUEST_CLASSES", "SUPPORTED_VERSIONS", "supports"]

#: API key -> (min version, max version) this server answers.
SUPPORTED_VERSIONS: Dict[ApiKey, Tuple[int, int]] = {
    ApiKey.Produce: (3, 11),
    ApiKey.Fetch: (4, 12),
    ApiKey.ListOffsets: (1, 7),
    ApiKey.OffsetForLeaderEpoch: (2, 4),
    ApiKey.Metadata: (0, 12),
    ApiKey.OffsetCommit: (2, 9),
    ApiKey.OffsetFetch: (1, 9),
    ApiKey.FindCoordinator: (0, 4),
    ApiKey.JoinGroup: (0, 9),
    ApiKey.Heartbeat: (0, 4),
    ApiKey.LeaveGroup: (0, 5),
    ApiKey.SyncGroup: (0, 5),
    ApiKey.DescribeGroups: (0, 5),
    ApiKey.ListGroups: (0, 5),
    ApiKey.ApiVersions: (0, 3),
    ApiKey.CreateTopics: (2, 7),
    ApiKey.DeleteTopics: (1, 6),
    ApiKey.InitProducerId: (0, 4),
    ApiKey.CreatePartitions: (0, 3),
    ApiKey.DeleteGroups: (0, 2),
    # Kafka 4 serves OffsetDelete v0 only (non-flexible).
    ApiKey.OffsetDelete: (0, 0),
    ApiKey.ConsumerGroupHeartbeat: (0, 1),
    ApiKey.ConsumerGroupDescribe: (0, 1),
}

#: API key -> kafka-python request class (generated from Kafka's JSON schema).
REQUEST_CLASSES: Dict[ApiKey, Type[ApiMessage]] = {
    ApiKey.Produce: ProduceRequest,
    ApiKey.Fetch: FetchRequest,
    ApiKey.ListOffsets: ListOffsetsRequest,
    ApiKey.OffsetForLeaderEpoch: OffsetForLeaderEpochRequest,
    ApiKey.Metadata: MetadataRequest,
    ApiKey.OffsetCommit: OffsetCommitRequest,
    ApiKey.OffsetFetch: OffsetFetchRequest,
    ApiKey.FindCoordinator: FindCoordinatorRequest,
    ApiKey.JoinGroup: JoinGroupRequest,
    ApiKey.Heartbeat: HeartbeatRequest,
    ApiKey.LeaveGroup: LeaveGroupRequest,
    ApiKey.SyncGroup: SyncGroupRequest,
    ApiKey.DescribeGroups: DescribeGroupsRequest,
    ApiKey.ListGroups: ListGroupsRequest,
    ApiKey.ApiVersions: ApiVersionsRequest,
    ApiKey.CreateTopics: CreateTopicsRequest,
    ApiKey.DeleteTopics: DeleteTopicsRequest,
    ApiKey.InitProducerId: InitProducerIdRequest,
    ApiKey.CreatePartitions: CreatePartitionsRequest,
    ApiKey.DeleteGroups: DeleteGroupsRequest,
    ApiKey.OffsetDelete: OffsetDeleteRequest,
    ApiKey.ConsumerGroupHeartbeat: ConsumerGroupHeartbeatRequestStruct,
    ApiKey.ConsumerGroupDescribe: ConsumerGroupDescribeRequestStruct,
}


def supports(api_key: int, api_version: int) -> bool:
    """Whether the server answers ``api_key`` at ``api_version``."""
    try:
        low, high = SUPPORTED_VERSIONS[ApiKey(api_key)]
    except (ValueError, KeyError):
        return False
    return low <= api_version <= high
