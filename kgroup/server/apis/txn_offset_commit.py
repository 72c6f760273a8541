"""TxnOffsetCommit (API key 28, KIP-98; v3+ KIP-447), answered by the group coordinators.

As Kafka's KafkaApis.handleTxnOffsetCommitRequest: a partition of a topic that does not exist is
answered UNKNOWN_TOPIC_OR_PARTITION by the broker and only the others reach the coordinator; v0-v1
answers COORDINATOR_NOT_AVAILABLE where the coordinator said COORDINATOR_LOAD_IN_PROGRESS (clients
before KAFKA-7296 do not retry the latter).  v0-v2 carry no generation, member id or instance id:
the coordinator sees -1 / "" / None.

Served v0-v4.  v5 (KIP-890 part 2, transaction version 2) also adds the group's offsets partition to
the transaction implicitly, which needs the broker to verify the transaction with its coordinator
first; a client negotiating v4 sends AddOffsetsToTxn itself.
"""
from __future__ import annotations

from typing import Any, List

from kafka.protocol.api_key import ApiKey
from kafka.protocol.producer import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import metadata_text, partition_errors
from kgroup.values import TopicPartition


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    offsets = [
        m.PartitionOffsetCommit(
            TopicPartition(t.name, p.partition_index),
            m.OffsetAndMetadata(p.committed_offset, metadata_text(p.committed_metadata),
                                p.committed_leader_epoch if version >= 2 else -1))
        for t in req.topics for p in t.partitions if topics.has_partition(t.name, p.partition_index)
    ]
    if not offsets:
        # KafkaApis: nothing left to commit, the coordinator is not asked.
        return []
    if version >= 3:
        identity = dict(generation_id=req.generation_id, member_id=req.member_id,
                        group_instance_id=req.group_instance_id)
    else:
        identity = {}
    return [m.TxnOffsetCommitRequest(req.transactional_id, req.group_id, req.producer_id, req.producer_epoch,
                                     offsets, **identity)]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    answered = {p.topic_partition: _for_version(p.error_code, version)
                for resp in parts for p in resp.partitions}
    topic_cls = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    partition_cls = topic_cls.TxnOffsetCommitResponsePartition
    return TxnOffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
        topic_cls(version=version, name=name, partitions=[
            partition_cls(version=version, partition_index=index, error_code=code) for index, code in ps])
        for name, ps in partition_errors(request, answered, topics).items()])


def _for_version(code: ErrorCode, version: int) -> int:
    if version < 2 and code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return int(code)


API = group_api(ApiKey.TxnOffsetCommit, (0, 4), TxnOffsetCommitRequest, TxnOffsetCommitResponse, _to_core,
                _to_struct)
