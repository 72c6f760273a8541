"""A produced batch is read from the socket and stored without copies (issue 28).

Under librdkafka's megabyte batches the server copied every produced batch five times on its way to
the log (asyncio's read chunks, the reassembly buffer, the frame, the records slice, kafka-python's
DefaultRecordBatch), and a copy of a fresh megabyte costs page faults besides the copy: a sixth of
the server's samples went to DefaultRecordBatch alone.  Now the connection is a BufferedProtocol
that lets the kernel write a large frame straight into a buffer of its own, the Produce decoder
hands out views of it, and the batch header is read with one struct.  These tests pin that down and
the framing corner cases the new reader has (a frame larger than its first reservation, a client
that announces a huge frame and stalls, one that leaves mid-frame).
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup.server import KafkaServer
from kgroup.server.config import ServerConfig
from kgroup.server.network import LARGE_RESERVE_BYTES, STAGING_BYTES
from kgroup.server.record_log import BatchSlice, parse_batches

MEGABYTE = 1 << 20


def _batch(records: int, value_bytes: int = 1_000) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=4 * MEGABYTE)
    for i in range(records):
        builder.append(timestamp=1_000 + i, key=None, value=bytes([i % 256]) * value_bytes)
    builder.close()
    return bytes(builder.buffer())


def _produce(partitions: dict, topic: str = "big") -> ProduceRequest:
    topic_cls = ProduceRequest.TopicProduceData
    return ProduceRequest(version=7, transactional_id=None, acks=1, timeout_ms=5_000, topic_data=[
        topic_cls(version=7, name=topic, partition_data=[
            topic_cls.PartitionProduceData(version=7, index=index, records=records)
            for index, records in partitions.items()])])


def _stored(server: KafkaServer, topic: str, partition: int, offset: int):
    def read():
        assert server.cluster is not None
        p = server.cluster.topics[topic][partition]
        payload = p.logs[p.leader].entries[offset].payload
        assert isinstance(payload, BatchSlice)
        return payload.batch
    return server._call(read)


def _send_in_pieces(sock: socket.socket, data: bytes, piece_bytes: int) -> None:
    for at in range(0, len(data), piece_bytes):
        sock.sendall(data[at:at + piece_bytes])
        time.sleep(0.0005)


@pytest.fixture
def big_server():
    # Three 1 MB batches in one request: a frame past the first reservation.
    with KafkaServer(brokers=1, config=ServerConfig(max_message_bytes=2 * MEGABYTE)) as running:
        running.create_topic("big", partitions=3, replication_factor=1)
        yield running


def test_a_large_produced_batch_is_stored_as_a_view_of_the_bytes_the_socket_was_read_into(
        big_server, raw_client):
    batch = _batch(1_000)
    request = _produce({0: batch})
    client = raw_client(big_server.listener(1))
    answer = client.request(request)
    assert answer.responses[0].partition_responses[0].error_code == 0
    stored = _stored(big_server, "big", 0, 0)
    # Before: the tail viewed a bytes copy of the batch alone (one of five copies).  Now it views the
    # buffer the request frame was read into: the whole frame (header, topic, every partition).
    assert isinstance(stored.tail.obj, bytearray)
    assert len(stored.tail.obj) > len(batch)
    assert bytes(stored.tail) == batch[16:]


def test_a_frame_larger_than_the_first_reservation_sent_in_small_pieces_is_read_whole(
        big_server, raw_client, kafka_codec):
    request_frame, decode_response, _ = kafka_codec
    batches = {index: _batch(1_000, value_bytes=1_000 + index) for index in range(3)}
    body = request_frame(_produce(batches), 7)
    assert len(body) > LARGE_RESERVE_BYTES
    client = raw_client(big_server.listener(1))
    _send_in_pieces(client.sock, struct.pack(">i", len(body)) + body, 300_000)
    frame = client.recv_frame(timeout_s=10)
    assert frame is not None
    answer = decode_response(_produce(batches), frame)
    assert [p.error_code for p in answer.responses[0].partition_responses] == [0, 0, 0]
    for index, batch in batches.items():
        assert bytes(_stored(big_server, "big", index, 0).tail) == batch[16:]
    # A small request right behind it on the same connection is answered too.
    assert client.request(ApiVersionsRequest(version=0)).error_code == 0


def test_small_frames_split_across_reads_and_many_in_one_read_are_all_answered(big_server, raw_client,
                                                                               kafka_codec):
    request_frame, decode_response, _ = kafka_codec
    bodies = [request_frame(ApiVersionsRequest(version=0), i, "client-%d-" % i + "c" * 100)
              for i in range(1, 3001)]
    frames = b"".join(struct.pack(">i", len(body)) + body for body in bodies)
    assert len(frames) > 4 * STAGING_BYTES  # several staging buffers' worth, cut at arbitrary places
    client = raw_client(big_server.listener(1))
    # Sent from a thread in odd-sized pieces while this one reads: the server stops reading while a
    # request waits behind the one in progress, so the sender must not wait for the reader.
    sender = threading.Thread(target=_send_in_pieces, args=(client.sock, frames, 7_777), daemon=True)
    sender.start()
    answers = []
    for _ in bodies:
        frame = client.recv_frame(timeout_s=10)
        assert frame is not None
        answers.append(decode_response(ApiVersionsRequest(version=0), frame).header.correlation_id)
    sender.join(timeout=10)
    assert answers == list(range(1, 3001))


def test_a_client_announcing_a_huge_frame_holds_at_most_the_first_reservation(big_server):
    host, port = big_server.listener(1).rsplit(":", 1)
    stalled = socket.create_connection((host, int(port)))
    try:
        stalled.sendall(struct.pack(">i", 100 * MEGABYTE) + b"\x00\x00\x00\x07" + b"x" * (2 * STAGING_BYTES))
        deadline = time.monotonic() + 5
        while big_server.buffered_bytes() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        # The announced 100 MB are not reserved: one reservation, grown only as bytes arrive.
        assert 0 < big_server.buffered_bytes() <= LARGE_RESERVE_BYTES
    finally:
        stalled.close()
    deadline = time.monotonic() + 5
    while big_server.buffered_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert big_server.buffered_bytes() == 0  # the partial request went with its connection


def test_a_client_leaving_mid_frame_is_logged_and_others_are_served(big_server, raw_client, caplog):
    host, port = big_server.listener(1).rsplit(":", 1)
    leaving = socket.create_connection((host, int(port)))
    leaving.sendall(struct.pack(">i", 3 * MEGABYTE) + b"\x00" * (MEGABYTE + 5))
    time.sleep(0.1)
    leaving.close()
    deadline = time.monotonic() + 5
    while "mid-request" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "closed by the client mid-request" in caplog.text
    assert f"of {3 * MEGABYTE + 4}" in caplog.text
    assert raw_client(big_server.listener(1)).request(ApiVersionsRequest(version=0)).error_code == 0


def test_parse_batches_reads_headers_without_kafka_pythons_record_classes(monkeypatch):
    """The header read by hand gives what DefaultRecordBatch reads; DefaultRecordBatch is not built."""
    from kafka.record import default_records

    batch = _batch(50)
    expected = default_records.DefaultRecordBatch(batch)

    def refuse(*_args, **_kwargs):
        raise AssertionError("parse_batches built kafka-python's DefaultRecordBatch")
    monkeypatch.setattr(default_records.DefaultRecordBatch, "__init__", refuse)
    request = b"prefix" + batch + b"suffix"
    (parsed,) = parse_batches(memoryview(request)[6:6 + len(batch)], request, 6)
    assert (parsed.record_count, parsed.max_timestamp, parsed.producer_id, parsed.producer_epoch,
            parsed.base_sequence, parsed.is_transactional, parsed.compression_type) == (
        expected.records_count, expected.max_timestamp, expected.producer_id, expected.producer_epoch,
        expected.base_sequence, expected.is_transactional, expected.compression_type)
    assert parsed.data.obj is request and bytes(parsed.data) == batch  # a view, in place
