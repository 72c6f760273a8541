"""OffsetForLeaderEpoch (KIP-101 / KIP-320): a consumer whose partition leader died validates its
position on the new leader and carries on.  Found by the client matrix: kafka-python 3.0 (and
kgroup's consumer, which uses its fetcher) validates every position whose leader epoch moved and
never fetched that partition again while the server did not serve the API."""
from __future__ import annotations

import time

import kafka
from kafka.protocol.consumer import OffsetForLeaderEpochRequest
from kafka.structs import TopicPartition

from kgroup.server import KafkaServer
from kgroup.core.error_codes import ErrorCode


def _send(bootstrap, first, count):
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for future in [producer.send("t", b"v%d" % i) for i in range(first, first + count)]:
            future.get(timeout=30)
    finally:
        producer.close(timeout=10)


def test_a_consumer_validates_its_position_on_the_new_leader_and_goes_on():
    with KafkaServer(brokers=3) as server:
        server.create_topic("t", 1)
        _send(server.bootstrap_servers, 0, 50)
        consumer = kafka.KafkaConsumer(bootstrap_servers=server.bootstrap_servers, enable_auto_commit=False)
        tp = TopicPartition("t", 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = []
        try:
            deadline = time.monotonic() + 30
            while len(seen) < 50 and time.monotonic() < deadline:
                seen += [r.value for r in consumer.poll(timeout_ms=200).get(tp, [])]
            old_epoch = consumer._client.cluster.leader_epoch_for_partition(tp)
            server.kill_broker(server.partition_leader("t", 0))
            _send(server.bootstrap_servers, 50, 50)
            deadline = time.monotonic() + 30
            while len(seen) < 100 and time.monotonic() < deadline:
                seen += [r.value for r in consumer.poll(timeout_ms=200).get(tp, [])]
            new_epoch = consumer._client.cluster.leader_epoch_for_partition(tp)
        finally:
            consumer.close()
        validations = server.trace("OffsetForLeaderEpoch")
    assert new_epoch > old_epoch >= 0
    assert seen == [b"v%d" % i for i in range(100)]
    assert validations and all(e.error_code == 0 for e in validations)


def _ask(server, node, leader_epoch, current_leader_epoch=-1):
    """The data plane's answer for partition t-0 as broker ``node`` gives it (OffsetForLeaderEpoch v4)."""
    topic_cls = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    partition_cls = topic_cls.OffsetForLeaderPartition
    request = OffsetForLeaderEpochRequest(version=4, replica_id=-1, topics=[topic_cls(
        version=4, topic="t", partitions=[partition_cls(version=4, partition=0, leader_epoch=leader_epoch,
                                                        current_leader_epoch=current_leader_epoch)])])
    response = server._call(lambda: server.engine.data.offset_for_leader_epoch(node, request, 4))
    (answer,) = response.topics[0].partitions
    return answer.error_code, answer.leader_epoch, answer.end_offset


def test_the_answer_follows_kafkas_leader_epoch_cache():
    """Kafka's ``LeaderEpochFileCache.endOffsetFor`` and ``Partition.lastOffsetForLeaderEpoch``."""
    with KafkaServer(brokers=3) as server:
        server.create_topic("t", 1)
        _send(server.bootstrap_servers, 0, 10)
        first = server.partition_leader("t", 0)
        server.kill_broker(first)
        _send(server.bootstrap_servers, 10, 5)
        leader = server.partition_leader("t", 0)
        follower = next(b for b in (1, 2, 3) if b not in (first, leader))
        epoch = server._call(lambda: server.cluster.partition("t", 0).leader_epoch)
        assert _ask(server, leader, epoch) == (0, epoch, 15)  # the latest epoch ends at the LEO
        assert _ask(server, leader, 0) == (0, 0, 10)  # an older one where the next one starts
        assert _ask(server, leader, epoch + 1) == (0, -1, -1)  # one the log does not know
        assert _ask(server, leader, 0, current_leader_epoch=epoch - 1)[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert _ask(server, leader, 0, current_leader_epoch=epoch + 1)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert _ask(server, follower, 0)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
