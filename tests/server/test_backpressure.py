"""A client that never reads cannot make the server hold more than one answer (issue 23, item 3).

Before, 300 unread 1 MB Fetch answers on one connection raised the server's memory by 290 MB.
Kafka's SocketServer mutes a channel while a request is in flight and until its response has
been sent in full (Selector.mute / unmute on completed sends); kgroup's network layer does the
same: the next request is handled only once the previous answer left the process.
"""
from __future__ import annotations

import socket
import time

from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

MEGABYTE = 1 << 20


def _megabyte_of_records() -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=2 * MEGABYTE)
    for i in range(1_000):
        builder.append(timestamp=1_000 + i, key=None, value=bytes([i % 256]) * 1_000)
    builder.close()
    return bytes(builder.buffer())


def _fetch(correlation_id: int, request_frame) -> bytes:
    topic_cls = FetchRequest.FetchTopic
    request = FetchRequest(version=4, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=MEGABYTE,
                           isolation_level=0, topics=[topic_cls(version=4, topic="big", partitions=[
                               topic_cls.FetchPartition(version=4, partition=0, fetch_offset=0,
                                                        partition_max_bytes=MEGABYTE)])])
    body = request_frame(request, correlation_id, "never-reads")
    return len(body).to_bytes(4, "big") + body


def test_300_unread_megabyte_fetches_hold_at_most_one_answer(server1, raw_client, kafka_codec):
    request_frame, _, _ = kafka_codec
    server1.create_topic("big", partitions=1, replication_factor=1)
    producer = raw_client(server1.listener(1))
    topic_cls = ProduceRequest.TopicProduceData
    partition = topic_cls.PartitionProduceData(version=7, index=0, records=_megabyte_of_records())
    produced = producer.request(ProduceRequest(version=7, transactional_id=None, acks=1, timeout_ms=5_000,
                                               topic_data=[topic_cls(version=7, name="big",
                                                                     partition_data=[partition])]))
    assert produced.responses[0].partition_responses[0].error_code == 0

    host, port = server1.listener(1).rsplit(":", 1)
    silent = socket.create_connection((host, int(port)))
    try:
        frames = b"".join(_fetch(i, request_frame) for i in range(300))
        silent.setblocking(False)
        sent = 0
        deadline = time.monotonic() + 10
        while sent < len(frames) and time.monotonic() < deadline:  # the server may stop reading: fine
            try:
                sent += silent.send(frames[sent:sent + 65_536])
            except BlockingIOError:
                time.sleep(0.01)

        # Wait until the server stops answering (the client's and the server's kernel buffers are
        # full and one answer waits in the transport), bounded by 10 s.
        answered, steady_since = -1, time.monotonic()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and time.monotonic() - steady_since < 0.5:
            now_answered = len(server1.trace(api="Fetch", client_id="never-reads"))
            if now_answered != answered:
                answered, steady_since = now_answered, time.monotonic()
            time.sleep(0.05)
        # Loopback kernel buffers take a few answers; the server itself keeps one, not 300.
        assert 1 <= answered <= 20, answered
        assert server1.buffered_bytes() <= 1.5 * MEGABYTE

        # Everyone else is served as usual meanwhile.
        other = raw_client(server1.listener(1))
        started = time.monotonic()
        assert other.request(ApiVersionsRequest(version=0)).error_code == 0
        assert time.monotonic() - started < 5
    finally:
        silent.close()


def test_a_complete_request_is_answered_while_the_next_one_is_still_arriving(
        server1, raw_client, kafka_codec):
    """Issue 28: a read that completed one request and began the next returned before handing
    the complete one to the engine, so it waited for the next request's last byte (a pipelining
    producer's every request waited for the one behind it).  Kafka's Selector hands a receive
    over as soon as it is complete."""
    request_frame, decode_response, _ = kafka_codec
    first = ApiVersionsRequest(version=0)
    body = request_frame(first, 1, "pipelining")
    second = request_frame(ApiVersionsRequest(version=0), 2, "pipelining")
    client = raw_client(server1.listener(1))
    framed_second = len(second).to_bytes(4, "big") + second
    client.send_bytes(len(body).to_bytes(4, "big") + body + framed_second[:6])  # the next one: 6 bytes so far
    answer = client.recv_frame(timeout_s=5.0)  # before: socket.timeout (no answer until the rest came)
    assert answer is not None
    assert decode_response(first, answer).header.correlation_id == 1
    client.send_bytes(framed_second[6:])
    assert client.recv_frame(timeout_s=5.0) is not None
