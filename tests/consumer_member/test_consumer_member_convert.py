"""kafka-python conversions of the KIP-848 member's requests (no network): ConsumerGroupHeartbeat with
topic ids, OffsetCommit v9 with the member epoch, OffsetFetch v9 with the member id and epoch.

The version bounds asked for are read from kafka-python's private ``_min_version`` /
``_max_version`` (what its connection negotiates against), the only place it keeps them."""
from __future__ import annotations

import uuid

import pytest

from kgroup.core import consumer_group_messages as cg
from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.io.kafka_python.consumer_group_convert import (
    TopicIdMap,
    UnknownTopicName,
    heartbeat_request,
    heartbeat_response,
)
from kgroup.io.kafka_python.convert import to_struct
from kgroup.wire.kafka_python import ConsumerGroupHeartbeatResponseStruct as KResponse
from kgroup.values import TopicPartition

ORDERS = uuid.UUID(int=0x1234)
PAYMENTS = uuid.UUID(int=0x5678)


class Metadata:
    def __init__(self, ids):
        self.ids = dict(ids)

    def topic_id(self, name):
        return self.ids.get(name)

    def topic_name(self, topic_id):
        return next((n for n, i in self.ids.items() if i == topic_id), None)


def topic_map(metadata: Metadata) -> TopicIdMap:
    return TopicIdMap(metadata.topic_id, metadata.topic_name)


def response(*topics, error=0):
    assignment_cls = KResponse.Assignment
    return KResponse(throttle_time_ms=0, error_code=error, error_message=None, member_id="m",
                     member_epoch=3, heartbeat_interval_ms=500,
                     assignment=assignment_cls(topic_partitions=[
                         assignment_cls.TopicPartitions(topic_id=t, partitions=p) for t, p in topics]))


def test_heartbeat_names_topics_by_id_and_keeps_its_version():
    ids = topic_map(Metadata({"orders": ORDERS}))
    owned = (TopicPartition("orders", 1), TopicPartition("orders", 0))
    request = cg.ConsumerGroupHeartbeatRequest("g", "m", 3, topic_partitions=owned, api_version=1)
    struct = heartbeat_request(request, ids)
    assert (struct._min_version, struct._max_version) == (1, 1)
    assert [(t.topic_id, list(t.partitions)) for t in struct.topic_partitions] == [(ORDERS, [0, 1])]
    assert struct.subscribed_topic_names is None and struct.rebalance_timeout_ms == -1  # incremental
    with pytest.raises(UnknownTopicName, match="payments"):
        heartbeat_request(cg.ConsumerGroupHeartbeatRequest(
            "g", "m", 3, topic_partitions=(TopicPartition("payments", 0),)), ids)


def test_heartbeat_answer_names_what_it_can_and_reports_the_rest():
    metadata = Metadata({"orders": ORDERS})
    ids = topic_map(metadata)
    value, unresolved = heartbeat_response(response((ORDERS, [2]), (PAYMENTS, [0])), ids)
    assert unresolved == {PAYMENTS}
    assert value.assignment == (TopicPartition("orders", 2),)
    assert (value.error_code, value.member_epoch, value.heartbeat_interval_ms) == (ErrorCode.NONE, 3, 500)
    # A name once resolved is kept (Kafka's assignedTopicNamesCache) after metadata forgets the topic.
    metadata.ids.clear()
    value, unresolved = heartbeat_response(response((ORDERS, [2])), ids)
    assert not unresolved and value.assignment == (TopicPartition("orders", 2),)


def test_offset_commit_v9_carries_the_member_epoch():
    commit = m.OffsetCommitRequest("g", (m.PartitionOffsetCommit(TopicPartition("orders", 0),
                                                                 m.OffsetAndMetadata(5)),),
                                   generation_id=7, member_id="m", api_version=9)
    struct = to_struct(commit)
    assert (struct._min_version, struct._max_version, struct.generation_id_or_member_epoch) == (9, 9, 7)
    classic = to_struct(m.OffsetCommitRequest("g", commit.offsets, generation_id=7, member_id="m"))
    assert (classic._min_version, classic._max_version) == (0, 8)


def test_offset_fetch_v9_asks_as_the_member():
    request = m.OffsetFetchRequest("g", (TopicPartition("orders", 0),), member_id="m", member_epoch=7)
    struct = to_struct(request)
    assert (struct._min_version, struct._max_version) == (9, 9)
    assert (struct.groups[0].member_id, struct.groups[0].member_epoch) == ("m", 7)
