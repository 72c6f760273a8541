"""ConsumerGroupDescribe (API key 69, KIP-848), answered by the consumer group coordinator."""
from __future__ import annotations

from typing import Any, Iterable, List

from kafka.protocol.api_key import ApiKey

from kgroup.core import consumer_group_messages as cg
from kgroup.server.apis.definition import TopicIds, group_api
from kgroup.server.apis.group_answers import by_topic, group_operations
from kgroup.values import TopicPartition
from kgroup.wire.kafka_python import ConsumerGroupDescribeRequestStruct, ConsumerGroupDescribeResponseStruct


def _to_core(req: Any, version: int, topics: TopicIds) -> List[object]:
    return [cg.ConsumerGroupDescribeRequest(tuple(req.group_ids), bool(req.include_authorized_operations))]


def _to_struct(parts: List[Any], version: int, request: Any, topics: TopicIds) -> Any:
    (resp,) = parts
    group_cls = ConsumerGroupDescribeResponseStruct.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    topic_cls = assignment_cls.TopicPartitions

    def assignment(partitions: Iterable[TopicPartition]) -> Any:
        return assignment_cls(version=version, topic_partitions=[
            topic_cls(version=version, topic_id=topics.topic_id(name), topic_name=name, partitions=ps)
            for name, ps in by_topic(partitions).items()])

    return ConsumerGroupDescribeResponseStruct(version=version, throttle_time_ms=0, groups=[
        group_cls(version=version, error_code=int(g.error_code), error_message=g.error_message,
                  group_id=g.group_id, group_state=g.group_state, group_epoch=g.group_epoch,
                  assignment_epoch=g.assignment_epoch, assignor_name=g.assignor_name,
                  authorized_operations=group_operations(request, g.error_code, g.authorized_operations),
                  members=[
                      member_cls(version=version, member_id=x.member_id, instance_id=x.instance_id,
                                 rack_id=x.rack_id, member_epoch=x.member_epoch, client_id=x.client_id,
                                 client_host=x.client_host,
                                 subscribed_topic_names=list(x.subscribed_topic_names),
                                 # Kafka's ConsumerGroupMember keeps "" for no regex and
                                 # describes it so (its answers carry "", never null).
                                 subscribed_topic_regex=x.subscribed_topic_regex or "",
                                 assignment=assignment(x.assignment),
                                 target_assignment=assignment(x.target_assignment),
                                 **({"member_type": x.member_type} if version >= 1 else {}))
                      for x in g.members])
        for g in resp.groups])


# v1: KIP-1099 MemberType.
API = group_api(ApiKey.ConsumerGroupDescribe, (0, 1), ConsumerGroupDescribeRequestStruct,
                ConsumerGroupDescribeResponseStruct, _to_core, _to_struct)
