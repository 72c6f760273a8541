"""One large legal request never holds the other brokers' clients (issue 23, item 6).

Before, a 2.9 MB Metadata request naming 300,000 topics was decoded, answered and encoded in
one event-loop callback: a ping to another broker waited 5-10 s.  Now a large frame is decoded
and a large answer encoded on the codec thread, and a Metadata request naming thousands of
topics is answered 500 topics at a time with the loop serving everyone else in between.
The stall itself is a benchmark figure (benchmarks/wire_hardening.py big-metadata); these
tests pin the structure: slices, deferred encoding, pings answered while it runs.
"""
from __future__ import annotations

import gc
import socket
import struct
import threading
import time
from typing import List

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from kgroup.server.apis.metadata import METADATA_SLICE_TOPICS
from kgroup.server.engine import DEFERRED_ENCODING_ENTRIES
from kgroup.server.network import LARGE_FRAME_BYTES

UNKNOWN_TOPIC_OR_PARTITION = 3


def _metadata(names: int) -> MetadataRequest:
    topic_cls = MetadataRequest.MetadataRequestTopic
    return MetadataRequest(version=4, allow_auto_topic_creation=False,
                           topics=[topic_cls(version=4, name=f"t{i:06d}") for i in range(names)])


def test_a_metadata_request_naming_thousands_of_topics_is_answered_in_slices(make_engine, kafka_codec):
    request_frame, decode_response, _ = kafka_codec
    names = DEFERRED_ENCODING_ENTRIES + 1_000
    harness = make_engine(brokers=3)
    big, small = harness.connect(1), harness.connect(2)
    request = _metadata(names)
    assert harness.handle(big, request_frame(request, 1, "big")) == []   # nothing answered yet
    assert harness.engine.has_work()
    slices = 0
    replies: List = []
    while harness.engine.has_work():
        slices += 1
        # Between slices the server answers anyone else at once.
        ping = harness.send(small, ApiVersionsRequest(version=0), correlation_id=slices)
        assert [r.connection_id for r in ping] == [small] and ping[0].data is not None
        replies.extend(harness.engine.work(harness.now_ms))
    assert slices == -(-names // METADATA_SLICE_TOPICS)
    (reply,) = replies
    # A large answer is encoded by the caller (off the loop), not by the engine.
    assert reply.data is None and reply.encode is not None
    answer = decode_response(request, reply.frame())
    assert len(answer.topics) == names
    assert {t.error_code for t in answer.topics} == {UNKNOWN_TOPIC_OR_PARTITION}
    (entry,) = [e for e in harness.engine.trace if e.api == "Metadata"]
    assert (entry.outcome, entry.error_codes) == ("answered", (UNKNOWN_TOPIC_OR_PARTITION,))


def test_a_small_metadata_request_is_answered_at_once(make_engine, kafka_codec):
    request_frame, decode_response, _ = kafka_codec
    harness = make_engine(brokers=1)
    connection = harness.connect()
    request = _metadata(METADATA_SLICE_TOPICS)
    (reply,) = harness.handle(connection, request_frame(request, 1, "small"))
    assert reply.data is not None and not harness.engine.has_work()
    assert len(decode_response(request, reply.data).topics) == METADATA_SLICE_TOPICS


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(min(size - len(buf), 1 << 20))
        assert chunk, "connection closed"
        buf += chunk
    return bytes(buf)


def test_another_brokers_client_is_answered_while_a_50000_topic_metadata_request_runs(server, kafka_codec):
    request_frame, decode_response, _ = kafka_codec
    request = _metadata(50_000)
    body = request_frame(request, 7, "big")
    host, port = server.listener(1).rsplit(":", 1)
    ping_host, ping_port = server.listener(2).rsplit(":", 1)
    answered_at: List[float] = []
    stop = threading.Event()

    def pings() -> None:
        with socket.create_connection((ping_host, int(ping_port)), timeout=60) as sock:
            correlation_id = 0
            while not stop.is_set():
                correlation_id += 1
                ping = request_frame(ApiVersionsRequest(version=0), correlation_id, "pinger")
                sock.sendall(struct.pack(">i", len(ping)) + ping)
                (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
                _recv_exactly(sock, size)
                answered_at.append(time.monotonic())
                time.sleep(0.005)

    pinger = threading.Thread(target=pings, daemon=True)
    pinger.start()
    try:
        with socket.create_connection((host, int(port)), timeout=120) as big:
            big.sendall(struct.pack(">i", len(body)) + body)
            sent_at = time.monotonic()
            (size,) = struct.unpack(">i", _recv_exactly(big, 4))
            answer_at = time.monotonic()
            answer = decode_response(request, struct.pack(">i", size) + _recv_exactly(big, size))
    finally:
        stop.set()
        pinger.join(timeout=60)
    assert len(answer.topics) == 50_000
    # Decoding alone takes longer than many 5 ms pings; before, the loop answered none of them
    # between the request's arrival and its answer.
    during = [t for t in answered_at if sent_at < t < answer_at]
    assert len(during) >= 3, (len(during), answer_at - sent_at)
    assert gc.isenabled()  # the collector held off during the request is back


def test_a_large_produce_request_is_decoded_on_the_loop_not_the_codec_thread(server):
    """A Produce frame's size is its record bytes, decoded as one slice: sending it through the
    codec thread cost two thread hops and GIL hand-offs per request (issue 28: the profile of
    confluent-kafka's 1 MB produce requests spent ~40 % of the loop there)."""
    from kafka.protocol.producer import ProduceRequest, ProduceResponse
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from tests.server.conftest import RawClient

    server.create_topic("big-produce", 1)
    network = server._network
    decoded_off_loop: List[bytes] = []
    off_loop = network._off_loop

    def watched(connection, work, argument, then):
        decoded_off_loop.append(argument)
        return off_loop(connection, work, argument, then)
    network._off_loop = watched
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset in range(200):
        builder.append(offset, timestamp=None, key=None, value=bytes(1024), headers=[])
    records = bytes(builder.build())
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=7, transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
        data(version=7, name="big-produce", partition_data=[
            data.PartitionProduceData(version=7, index=0, records=records)])])
    leader = server.partition_leader("big-produce", 0)
    client = RawClient(server.listener(leader))
    try:
        answer = client.request(request)
    finally:
        client.sock.close()
    assert isinstance(answer, ProduceResponse)
    assert answer.responses[0].partition_responses[0].error_code == 0
    assert len(records) > LARGE_FRAME_BYTES  # large enough to have gone to the codec thread before
    assert decoded_off_loop == []
