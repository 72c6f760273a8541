"""Clients cannot write into internal topics, and a stray record never poisons a coordinator
(issue 23, item 2).

Before, a raw Produce to ``__consumer_offsets`` was appended; when the coordinator's broker
died the new leader's replay raised ``AttributeError: 'BatchSlice' object has no attribute
'group_id'`` and every group request failed.  Kafka's ReplicaManager.appendToLocalLog refuses
an append to a ``Topic.isInternal`` topic from a client with InvalidTopicException (17), and
its CoordinatorLoaderImpl logs and skips a record it cannot read.
"""
from __future__ import annotations

import logging
import time

import pytest
from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import ProduceRequest

from kgroup.core.cluster.offsets_topic import GROUP_METADATA_TOPIC
from kgroup.core.coordinator.records import replay
from kgroup.core.coordinator_common.records import OffsetCommitRecord
from kgroup.core.messages import OffsetAndMetadata
from kgroup.server.faults import error_codes_of
from kgroup.server.record_log import BatchSlice, parse_batches
from kgroup.values import TopicPartition

INVALID_TOPIC_EXCEPTION = 17
COORDINATOR_LOAD_IN_PROGRESS = 14
NOT_COORDINATOR = 16


def _produce(topic: str, batch: bytes, version: int = 7) -> ProduceRequest:
    topic_cls = ProduceRequest.TopicProduceData
    return ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=[
        topic_cls(version=version, name=topic, partition_data=[
            topic_cls.PartitionProduceData(version=version, index=0, records=batch)])])


@pytest.mark.parametrize("topic", [GROUP_METADATA_TOPIC, "__transaction_state"])
def test_a_client_produce_to_an_internal_topic_is_refused_and_appends_nothing(
        server1, raw_client, make_records, topic):
    def offsets_log_end() -> int:
        assert server1.cluster is not None
        return server1.cluster.partition(GROUP_METADATA_TOPIC, 0).leader_log().leo
    before = server1._call(offsets_log_end)
    client = raw_client(server1.listener(1))
    answer = client.request(_produce(topic, make_records(1)))
    part = answer.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (INVALID_TOPIC_EXCEPTION, -1)
    assert server1._call(offsets_log_end) == before


def test_replay_logs_and_skips_a_record_that_is_not_a_coordinator_record(make_records, caplog):
    foreign = BatchSlice(parse_batches(make_records(1))[0].stored_at(0, 0))
    committed = OffsetCommitRecord("g", TopicPartition("t", 0), OffsetAndMetadata(42, "", -1))
    with caplog.at_level(logging.WARNING, logger="kgroup.coordinator"):
        view = replay([foreign, committed])
    assert view.offsets == {"g": {TopicPartition("t", 0): committed.committed}}
    assert "BatchSlice is not a coordinator record" in caplog.text


def _coordinator_answer(server, raw_client, request, group: str, budget_s: float = 10.0):
    """Ask the group's coordinator, retrying while it moves or loads (bounded by ``budget_s``)."""
    deadline = time.monotonic() + budget_s
    while True:
        node = server.coordinator_node(group)
        if node is not None:
            answer = raw_client(server.listener(node)).request(request)
            codes = set(error_codes_of(answer))
            if not codes & {COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR}:
                return node, answer
        assert time.monotonic() < deadline, "the coordinator never answered"
        time.sleep(0.05)


def test_a_foreign_record_in_the_offsets_partition_does_not_break_the_next_coordinator(
        server, raw_client, make_records):
    group = "survivor"
    server.create_topic("t", partitions=1)
    commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
    commit = OffsetCommitRequest(version=2, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                 retention_time_ms=-1, topics=[commit_topic(version=2, name="t", partitions=[
                                     commit_topic.OffsetCommitRequestPartition(
                                         version=2, partition_index=0, committed_offset=42,
                                         committed_metadata="")])])
    first, answer = _coordinator_answer(server, raw_client, commit, group)
    assert answer.topics[0].partitions[0].error_code == 0

    def inject() -> None:
        # What a client's Produce appended before internal topics were refused.
        hosting = server.hosting
        foreign = BatchSlice(parse_batches(make_records(1))[0].stored_at(0, 0))
        hosting.cluster.produce(GROUP_METADATA_TOPIC, hosting.partition_for(group), foreign, acks_all=False)
    server._call(inject)

    def replicated() -> bool:
        p = server.hosting.cluster.partition(GROUP_METADATA_TOPIC, server.hosting.partition_for(group))
        return all(p.logs[b].leo == p.leader_log().leo for b in p.assigned)
    deadline = time.monotonic() + 10
    while not server._call(replicated):  # followers copy it within a replication round or two
        assert time.monotonic() < deadline
        time.sleep(0.02)
    server.kill_broker(first)

    fetch = OffsetFetchRequest(version=1, group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(version=1, name="t", partition_indexes=[0])])
    second, answer = _coordinator_answer(server, raw_client, fetch, group)
    assert second != first
    assert answer.topics[0].partitions[0].committed_offset == 42
    # Every other broker still answers group requests.
    for node in sorted(set(server.config.broker_ids) - {first}):
        found = raw_client(server.listener(node)).request(
            FindCoordinatorRequest(version=1, key=group, key_type=0))
        assert (found.error_code, found.node_id) == (0, second)
