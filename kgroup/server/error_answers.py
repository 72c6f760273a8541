"""A response that answers any served request with one error code (Kafka's ``getErrorResponse``).

Used for versions the server does not serve (UNSUPPORTED_VERSION), for fault injection
(``fail_next``), and when a handler raised.  Group APIs reuse the core's error table
(:mod:`kgroup.core.error_responses`) through the group codec, so a broker refusing a
group request answers exactly what a coordinator refusing it would.
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse, OffsetForLeaderEpochResponse
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceResponse

from kgroup.core import error_responses
from kgroup.core.error_codes import ErrorCode
from kgroup.server import group_codec
from kgroup.server.frames import api_versions_response

__all__ = ["error_answer"]


def _produce(request: Any, version: int, code: int) -> Any:
    topic_cls = ProduceResponse.TopicProduceResponse
    partition_cls = topic_cls.PartitionProduceResponse
    return ProduceResponse(version=version, throttle_time_ms=0, responses=[
        topic_cls(version=version, name=t.name, partition_responses=[
            partition_cls(version=version, index=p.index, error_code=code, base_offset=-1)
            for p in t.partition_data])
        for t in request.topic_data])


def _fetch(request: Any, version: int, code: int) -> Any:
    topic_cls = FetchResponse.FetchableTopicResponse
    partition_cls = topic_cls.PartitionData
    return FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0, responses=[
        topic_cls(version=version, topic=t.topic, partitions=[
            partition_cls(version=version, partition_index=p.partition, error_code=code, high_watermark=-1,
                          records=None)
            for p in t.partitions])
        for t in request.topics])


def _list_offsets(request: Any, version: int, code: int) -> Any:
    topic_cls = ListOffsetsResponse.ListOffsetsTopicResponse
    partition_cls = topic_cls.ListOffsetsPartitionResponse
    return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, name=t.name, partitions=[
            partition_cls(version=version, partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


def _offset_for_leader_epoch(request: Any, version: int, code: int) -> Any:
    topic_cls = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
    partition_cls = topic_cls.EpochEndOffset
    return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, topic=t.topic, partitions=[
            partition_cls(version=version, partition=p.partition, error_code=code, leader_epoch=-1,
                          end_offset=-1)
            for p in t.partitions])
        for t in request.topics])


def _metadata(request: Any, version: int, code: int) -> Any:
    topic_cls = MetadataResponse.MetadataResponseTopic
    topics = request.topics or []
    return MetadataResponse(version=version, throttle_time_ms=0, brokers=[], topics=[
        topic_cls(version=version, error_code=code, name=t.name, partitions=[]) for t in topics],
        error_code=code)


def _create_topics(request: Any, version: int, code: int) -> Any:
    result_cls = CreateTopicsResponse.CreatableTopicResult
    return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[
        result_cls(version=version, name=t.name, error_code=code, error_message=None)
        for t in request.topics])


def _delete_topics(request: Any, version: int, code: int) -> Any:
    result_cls = DeleteTopicsResponse.DeletableTopicResult
    names = [t.name for t in request.topics] if version >= 6 else list(request.topic_names)
    return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=[
        result_cls(version=version, name=name, error_code=code) for name in names])


def _create_partitions(request: Any, version: int, code: int) -> Any:
    result_cls = CreatePartitionsResponse.CreatePartitionsTopicResult
    return CreatePartitionsResponse(version=version, throttle_time_ms=0, results=[
        result_cls(version=version, name=t.name, error_code=code) for t in request.topics])


def _init_producer_id(request: Any, version: int, code: int) -> Any:
    return InitProducerIdResponse(version=version, throttle_time_ms=0, error_code=code, producer_id=-1,
                                  producer_epoch=-1)


_BUILDERS: Dict[ApiKey, Callable[[Any, int, int], Any]] = {
    ApiKey.Produce: _produce,
    ApiKey.Fetch: _fetch,
    ApiKey.ListOffsets: _list_offsets,
    ApiKey.OffsetForLeaderEpoch: _offset_for_leader_epoch,
    ApiKey.Metadata: _metadata,
    ApiKey.CreateTopics: _create_topics,
    ApiKey.DeleteTopics: _delete_topics,
    ApiKey.CreatePartitions: _create_partitions,
    ApiKey.InitProducerId: _init_producer_id,
    ApiKey.ApiVersions: lambda request, version, code: api_versions_response(version, code),
}


def error_answer(api_key: ApiKey, request: Any, version: int, code: int) -> Any:
    """The response struct answering ``request`` (``api_key`` at ``version``) with ``code``."""
    if api_key in group_codec.GROUP_APIS:
        core_requests = group_codec.to_core(api_key, request, version)
        answers = [error_responses.for_request(r, ErrorCode(code)) for r in core_requests]
        return group_codec.to_struct(api_key, answers, version, request)
    return _BUILDERS[api_key](request, version, code)
