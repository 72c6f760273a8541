"""Request builders over kafka-python's protocol classes (kgroup's KIP-848 classes for APIs 68/69).

Each takes the API version and the fields a scenario varies; fields a version lacks are left out of
the encoding by kafka-python itself.
"""
from __future__ import annotations

import uuid
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kafka.protocol.admin import (
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest,
    DescribeGroupsRequest, ListGroupsRequest,
)
from kafka.protocol.consumer import (
    FetchRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListOffsetsRequest,
    OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest, ListTransactionsRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, TxnOffsetCommitRequest,
)
from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup.wire.kafka_python import ConsumerGroupDescribeRequestStruct, ConsumerGroupHeartbeatRequestStruct
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import encode_assignment, encode_subscription

ZERO_UUID = uuid.UUID(int=0)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocol subscription v0 bytes (Kafka's classic coordinator reads them)."""
    return encode_subscription(Subscription(topics=topics), 0)


def assignment(topic: str, *partitions: int) -> bytes:
    return encode_assignment(Assignment(partitions=tuple(TopicPartition(topic, p) for p in partitions)), 0)


def join_group(version: int, group_id: str, member_id: str = "", *, instance_id: Optional[str] = None,
               session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 3_000,
               protocol_type: str = "consumer",
               protocols: Sequence[Tuple[str, bytes]] = (("range", b""),)) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=version, group_id=group_id, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=instance_id,
        protocol_type=protocol_type, reason=None,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(version=version, name=name, metadata=metadata)
                   for name, metadata in protocols])


def sync_group(version: int, group_id: str, generation_id: int, member_id: str, *,
               instance_id: Optional[str] = None, protocol_type: Optional[str] = "consumer",
               protocol_name: Optional[str] = "range",
               assignments: Mapping[str, bytes] = {}) -> SyncGroupRequest:
    return SyncGroupRequest(
        version=version, group_id=group_id, generation_id=generation_id, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(version=version, member_id=m, assignment=a)
                     for m, a in assignments.items()])


def heartbeat(version: int, group_id: str, generation_id: int, member_id: str,
              instance_id: Optional[str] = None) -> HeartbeatRequest:
    return HeartbeatRequest(version=version, group_id=group_id, generation_id=generation_id,
                            member_id=member_id, group_instance_id=instance_id)


def leave_group(version: int, group_id: str,
                members: Sequence[Tuple[str, Optional[str]]]) -> LeaveGroupRequest:
    """v0-v2 leave the first member; v3+ the batch of (member id, instance id)."""
    return LeaveGroupRequest(
        version=version, group_id=group_id, member_id=members[0][0] if version < 3 else "",
        members=[LeaveGroupRequest.MemberIdentity(version=version, member_id=m, group_instance_id=i,
                                                  reason=None)
                 for m, i in members] if version >= 3 else [])


def offset_commit(version: int, group_id: str, offsets: Mapping[str, Mapping[int, int]], *,
                  generation_id: int = -1, member_id: str = "", instance_id: Optional[str] = None,
                  metadata: Optional[str] = "") -> OffsetCommitRequest:
    topic_class = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(
        version=version, group_id=group_id, generation_id_or_member_epoch=generation_id, member_id=member_id,
        group_instance_id=instance_id, retention_time_ms=-1,
        topics=[topic_class(version=version, name=topic, partitions=[
            topic_class.OffsetCommitRequestPartition(version=version, partition_index=p, committed_offset=o,
                                                     committed_leader_epoch=-1, commit_timestamp=-1,
                                                     committed_metadata=metadata)
            for p, o in sorted(partitions.items())]) for topic, partitions in offsets.items()])


def offset_fetch(version: int, group_id: str, topics: Optional[Mapping[str, Iterable[int]]], *,
                 member_id: Optional[str] = None, member_epoch: int = -1,
                 require_stable: bool = False) -> OffsetFetchRequest:
    if version < 8:
        return OffsetFetchRequest(
            version=version, group_id=group_id, require_stable=require_stable,
            topics=None if topics is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(version=version, name=t,
                                                           partition_indexes=list(ps))
                for t, ps in topics.items()])
    group_class = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(version=version, require_stable=require_stable, groups=[group_class(
        version=version, group_id=group_id, member_id=member_id, member_epoch=member_epoch,
        topics=None if topics is None else [
            group_class.OffsetFetchRequestTopics(version=version, name=t, partition_indexes=list(ps))
            for t, ps in topics.items()])])


def offset_fetch_groups(version: int, groups: Mapping[str, Optional[Mapping[str, Iterable[int]]]]
                        ) -> OffsetFetchRequest:
    group_class = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(version=version, require_stable=False, groups=[group_class(
        version=version, group_id=g, member_id=None, member_epoch=-1,
        topics=None if topics is None else [
            group_class.OffsetFetchRequestTopics(version=version, name=t, partition_indexes=list(ps))
            for t, ps in topics.items()]) for g, topics in groups.items()])


def describe_groups(version: int, *groups: str) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(version=version, groups=list(groups), include_authorized_operations=False)


def list_groups(version: int, states: Sequence[str] = (), types: Sequence[str] = ()) -> ListGroupsRequest:
    return ListGroupsRequest(version=version, states_filter=list(states), types_filter=list(types))


def delete_groups(version: int, *groups: str) -> DeleteGroupsRequest:
    return DeleteGroupsRequest(version=version, groups_names=list(groups))


def find_coordinator(version: int, key: str, key_type: int = 0) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(version=version, key=key, key_type=key_type, coordinator_keys=[key])


def consumer_heartbeat(version: int, group_id: str, member_id: str, member_epoch: int, *,
                       instance_id: Optional[str] = None, rebalance_timeout_ms: int = -1,
                       topics: Optional[List[str]] = None, assignor: Optional[str] = None,
                       owned: Optional[Mapping[uuid.UUID, Iterable[int]]] = None,
                       regex: Optional[str] = None) -> ConsumerGroupHeartbeatRequestStruct:
    owned_class = ConsumerGroupHeartbeatRequestStruct.TopicPartitions
    return ConsumerGroupHeartbeatRequestStruct(
        version=version, group_id=group_id, member_id=member_id, member_epoch=member_epoch,
        instance_id=instance_id, rack_id=None, rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
        topic_partitions=None if owned is None else [
            owned_class(version=version, topic_id=t, partitions=sorted(ps)) for t, ps in owned.items()])


def consumer_describe(version: int, *groups: str) -> ConsumerGroupDescribeRequestStruct:
    return ConsumerGroupDescribeRequestStruct(version=version, group_ids=list(groups),
                                              include_authorized_operations=False)


def metadata(version: int, topics: Optional[Sequence[str]], auto_create: bool = False) -> MetadataRequest:
    return MetadataRequest(
        version=version, allow_auto_topic_creation=auto_create, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
        topics=None if topics is None else [
            MetadataRequest.MetadataRequestTopic(version=version, name=t, topic_id=ZERO_UUID)
            for t in topics])


def create_topics(version: int, topics: Sequence[Tuple[str, int, int]], *, validate_only: bool = False,
                  configs: Mapping[str, Optional[str]] = {},
                  assignments: Optional[Dict[int, List[int]]] = None) -> CreateTopicsRequest:
    """``topics``: (name, partitions, replication factor)."""
    creatable = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(version=version, timeout_ms=10_000, validate_only=validate_only, topics=[
        creatable(version=version, name=name, num_partitions=partitions, replication_factor=replicas,
                  assignments=[creatable.CreatableReplicaAssignment(version=version, partition_index=p,
                                                                    broker_ids=b)
                               for p, b in (assignments or {}).items()],
                  configs=[creatable.CreatableTopicConfig(version=version, name=k, value=v)
                           for k, v in configs.items()])
        for name, partitions, replicas in topics])


def delete_topics(version: int, *topics: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(
        version=version, timeout_ms=10_000, topic_names=list(topics),
        topics=[DeleteTopicsRequest.DeleteTopicState(version=version, name=t, topic_id=ZERO_UUID)
                for t in topics] if version >= 6 else [])


def create_partitions(version: int, topic: str, count: int, validate_only: bool = False
                      ) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(version=version, timeout_ms=10_000, validate_only=validate_only, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(version=version, name=topic, count=count,
                                                      assignments=None)])


def record_batch(count: int = 3, first_timestamp_ms: int = 1_000, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False) -> bytes:
    """A v2 record batch (kafka-python's builder) of ``count`` records with fixed timestamps."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    if producer_id >= 0:
        builder.set_producer_state(producer_id, producer_epoch, base_sequence, transactional)
    for index in range(count):
        builder.append(timestamp=first_timestamp_ms + index, key=b"k%d" % index, value=b"v%d" % index,
                       headers=[])
    builder.close()
    return bytes(builder.buffer())


def one_record_batch(value_bytes: int) -> bytes:
    """A v2 batch of one record whose value is ``value_bytes`` bytes (kafka-python's builder)."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=value_bytes + 1024)
    builder.append(timestamp=1_000, key=None, value=b"x" * value_bytes, headers=[])
    builder.close()
    return bytes(builder.buffer())


def legacy_batch(count: int = 1, first_timestamp_ms: int = 1_000, magic: int = 1) -> bytes:
    """A message set of magic 0 or 1 (kafka-python's builder): what pre-0.11 producers sent."""
    builder = MemoryRecordsBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for index in range(count):
        builder.append(timestamp=first_timestamp_ms + index, key=b"k%d" % index, value=b"v%d" % index,
                       headers=[])
    builder.close()
    return bytes(builder.buffer())


def produce(version: int, topic: str, batches: Mapping[int, bytes], acks: int = -1,
            transactional_id: Optional[str] = None) -> ProduceRequest:
    topic_class = ProduceRequest.TopicProduceData
    topic_data = [topic_class(version=version, name=topic, partition_data=[
        topic_class.PartitionProduceData(version=version, index=p, records=b)
        for p, b in sorted(batches.items())])]
    return ProduceRequest(version=version, transactional_id=transactional_id, acks=acks, timeout_ms=10_000,
                          topic_data=topic_data)


def list_offsets(version: int, topic: str, queries: Mapping[int, int], isolation_level: int = 0
                 ) -> ListOffsetsRequest:
    """``queries``: partition -> timestamp (-1 latest, -2 earliest, -3 max timestamp)."""
    topic_class = ListOffsetsRequest.ListOffsetsTopic
    return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=isolation_level, topics=[
        topic_class(version=version, name=topic, partitions=[
            topic_class.ListOffsetsPartition(version=version, partition_index=p, timestamp=ts,
                                             current_leader_epoch=-1)
            for p, ts in sorted(queries.items())])])


def fetch(version: int, topic: str, offsets: Mapping[int, int], max_wait_ms: int = 0,
          isolation_level: int = 0) -> FetchRequest:
    """``isolation_level``: 0 read_uncommitted, 1 read_committed."""
    topic_class = FetchRequest.FetchTopic
    return FetchRequest(
        version=version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
        isolation_level=isolation_level, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[topic_class(version=version, topic=topic, topic_id=ZERO_UUID, partitions=[
            topic_class.FetchPartition(version=version, partition=p, fetch_offset=o,
                                       partition_max_bytes=1 << 20, current_leader_epoch=-1,
                                       log_start_offset=-1, last_fetched_epoch=-1)
            for p, o in sorted(offsets.items())])])


def init_producer_id(version: int, transactional_id: Optional[str] = None,
                     transaction_timeout_ms: int = 60_000, producer_id: int = -1,
                     producer_epoch: int = -1) -> InitProducerIdRequest:
    return InitProducerIdRequest(version=version, transactional_id=transactional_id,
                                 transaction_timeout_ms=transaction_timeout_ms,
                                 producer_id=producer_id, producer_epoch=producer_epoch)


def add_partitions_to_txn(version: int, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Mapping[str, Iterable[int]]) -> AddPartitionsToTxnRequest:
    """v0-v3: one transaction at the top level; v4+: a batch of one (``verify_only`` false)."""
    if version < 4:
        topic_class = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        return AddPartitionsToTxnRequest(
            version=version, v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=producer_epoch,
            v3_and_below_topics=[topic_class(version=version, name=t, partitions=sorted(ps))
                                 for t, ps in partitions.items()])
    return add_partitions_batch(version, [(transactional_id, producer_id, producer_epoch, False, partitions)])


def add_partitions_batch(version: int, transactions: Sequence[Tuple[str, int, int, bool,
                                                                    Mapping[str, Iterable[int]]]]
                         ) -> AddPartitionsToTxnRequest:
    """v4+: ``transactions`` as (transactional id, producer id, epoch, verify only, partitions)."""
    transaction_class = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    topic_class = transaction_class.AddPartitionsToTxnTopic
    return AddPartitionsToTxnRequest(version=version, transactions=[
        transaction_class(version=version, transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                          verify_only=verify_only,
                          topics=[topic_class(version=version, name=t, partitions=sorted(ps))
                                  for t, ps in partitions.items()])
        for txn_id, pid, epoch, verify_only, partitions in transactions])


def add_offsets_to_txn(version: int, transactional_id: str, producer_id: int, producer_epoch: int,
                       group_id: str) -> AddOffsetsToTxnRequest:
    return AddOffsetsToTxnRequest(version=version, transactional_id=transactional_id, producer_id=producer_id,
                                  producer_epoch=producer_epoch, group_id=group_id)


def txn_offset_commit(version: int, transactional_id: str, group_id: str, producer_id: int,
                      producer_epoch: int, offsets: Mapping[str, Mapping[int, int]], *,
                      generation_id: int = -1, member_id: str = "",
                      instance_id: Optional[str] = None) -> TxnOffsetCommitRequest:
    topic_class = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    return TxnOffsetCommitRequest(
        version=version, transactional_id=transactional_id, group_id=group_id, producer_id=producer_id,
        producer_epoch=producer_epoch, generation_id=generation_id, member_id=member_id,
        group_instance_id=instance_id,
        topics=[topic_class(version=version, name=topic, partitions=[
            topic_class.TxnOffsetCommitRequestPartition(version=version, partition_index=p,
                                                        committed_offset=o, committed_leader_epoch=-1,
                                                        committed_metadata="")
            for p, o in sorted(partitions.items())]) for topic, partitions in offsets.items()])


def end_txn(version: int, transactional_id: str, producer_id: int, producer_epoch: int,
            committed: bool) -> EndTxnRequest:
    return EndTxnRequest(version=version, transactional_id=transactional_id, producer_id=producer_id,
                         producer_epoch=producer_epoch, committed=committed)


def describe_transactions(*transactional_ids: str) -> DescribeTransactionsRequest:
    return DescribeTransactionsRequest(version=0, transactional_ids=list(transactional_ids))


def list_transactions(version: int, states: Sequence[str] = (), producer_ids: Sequence[int] = (),
                      duration_ms: int = -1) -> ListTransactionsRequest:
    return ListTransactionsRequest(version=version, state_filters=list(states),
                                   producer_id_filters=list(producer_ids), duration_filter=duration_ms,
                                   transactional_id_pattern=None)
