"""Fuzzing the frame decoder: random frames and mutations of valid frames of every served API
and version.  The engine may answer (an error or a real answer), close the connection, or
hold a request that legitimately waits (a long-poll fetch); it must never raise, never log an
error (a handler that raised is a bug, not a clean error), answer well-formed frames carrying
the request's correlation id, record every request in the trace, and keep serving: after
each bad frame a produce and a fetch still round-trip and no acknowledged record is lost.

The engine-level run is sans-I/O and fast (many examples); the socket-level run pushes fewer
frames through a real KafkaServer.  Both are derandomized so a failure reproduces.
"""
from __future__ import annotations

import logging
import socket
import struct
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest

from kgroup.server import KafkaServer
from kgroup.server.apis import SUPPORTED_VERSIONS

ENGINE_SETTINGS = settings(derandomize=True, deadline=None, database=None,
                           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SPECIAL_INTS = (-1, 0, 1, -2, 0x7FFFFFFF, -0x80000000, 0x10000, 255)


class _ErrorRecorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def server_errors():
    """ERROR records of the "kgroup.server" logger (a handler that raised logs one)."""
    recorder = _ErrorRecorder()
    logger = logging.getLogger("kgroup.server")
    logger.addHandler(recorder)
    yield recorder
    logger.removeHandler(recorder)


# -- strategies --------------------------------------------------------------------------------


def mutate(frame: bytes, ops: List[Tuple[int, float, bytes, int]]) -> bytes:
    """Apply byte flips, truncations, extensions, insertions and int32 overwrites."""
    data = bytearray(frame)
    for kind, where, payload, number in ops:
        at = int(where * len(data)) if data else 0
        if kind == 0 and data:
            data[min(at, len(data) - 1)] ^= payload[0] if payload and payload[0] else 0xFF
        elif kind == 1:
            del data[at:]
        elif kind == 2:
            data.extend(payload)
        elif kind == 3:
            data[at:at] = payload
        elif kind == 4 and len(data) >= 4:
            at = min(at, len(data) - 4)
            struct.pack_into(">i", data, at, number)
        elif kind == 5 and len(data) >= 2:
            at = min(at, len(data) - 2)
            struct.pack_into(">h", data, at, max(-0x8000, min(0x7FFF, number)))
    return bytes(data)


_OPS = st.lists(st.tuples(st.integers(0, 5), st.floats(0, 1, allow_nan=False),
                          st.binary(min_size=1, max_size=8),
                          st.one_of(st.sampled_from(SPECIAL_INTS),
                                    st.integers(-(2 ** 31), 2 ** 31 - 1))),
                min_size=1, max_size=4)


def random_frames() -> st.SearchStrategy[bytes]:
    """Pure noise, and noise behind a plausible header (a served or unknown API, any version)."""
    header = st.builds(lambda key, version, cid: struct.pack(">hhi", key, version, cid),
                       st.one_of(st.sampled_from([int(k) for k in SUPPORTED_VERSIONS]), st.integers(-5, 200)),
                       st.integers(-3, 130), st.integers(-(2 ** 31), 2 ** 31 - 1))
    noisy = st.builds(lambda h, body: h + body, header, st.binary(max_size=96))
    return st.one_of(st.binary(max_size=64), noisy)


# -- checks -------------------------------------------------------------------------------------


def check_replies(harness, connection: int, frame: bytes, trace_before: int, response_classes: Dict[str, Any],
                  decode_at) -> None:
    engine = harness.engine
    assert len(engine.trace) == trace_before + 1, "every request is recorded in the trace, exactly once"
    entry = engine.trace[-1]
    assert entry.connection_id == connection
    assert not (entry.fault or "").startswith("handler raised"), f"a handler raised on {frame!r}: {entry}"
    mine = [r for replies in harness.replies.values() for r in replies if r.connection_id == connection]
    for reply in mine:
        if reply.data is None:
            continue
        (size,) = struct.unpack_from(">i", reply.data)
        assert size == len(reply.data) - 4
        (correlation_id,) = struct.unpack_from(">i", reply.data, 4)
        assert correlation_id == entry.correlation_id
        if entry.outcome == "answered" and entry.api in response_classes:
            decode_at(response_classes[entry.api], reply.data, entry.api_version)
        elif entry.outcome == "unsupported version" and entry.api == "ApiVersions":
            decode_at(response_classes["ApiVersions"], reply.data, 0)
    if entry.outcome.startswith("closed"):
        assert [r.close for r in mine] == [True]


def still_serving(harness, make_records, produced: int) -> None:
    """A produce and a fetch still round-trip on the engine, and no acknowledged record is gone."""
    leader = harness.leader("kept")
    topic = ProduceRequest.TopicProduceData
    answer = harness.call(ProduceRequest(version=9, acks=1, timeout_ms=1_000, topic_data=[
        topic(version=9, name="kept", partition_data=[
            topic.PartitionProduceData(version=9, index=0, records=make_records(1))])]), node_id=leader)
    assert answer.responses[0].partition_responses[0].error_code == 0
    assert answer.responses[0].partition_responses[0].base_offset == produced
    fetch_topic = FetchRequest.FetchTopic
    request = FetchRequest(version=12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                           forgotten_topics_data=[], topics=[
                               fetch_topic(version=12, topic="kept", partitions=[
                                   fetch_topic.FetchPartition(version=12, partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])])
    fetched = harness.call(request, node_id=leader)
    partition = fetched.responses[0].partitions[0]
    assert partition.error_code == 0 and partition.high_watermark == produced + 1


@pytest.fixture(scope="module")
def response_classes(valid_requests, kafka_codec) -> Dict[str, Any]:
    _, _, response_class = kafka_codec
    return {api.name: response_class(request) for api, _, request in valid_requests}


def _decode_at(cls: Any, data: bytes, version: int) -> Any:
    return cls.decode(data[4:], version=version, header=True)


def _fresh(make_engine, make_records):
    harness = make_engine(brokers=3, offsets_partitions=3)
    harness.cluster.create_topic("t", 3, 3)
    harness.cluster.create_topic("kept", 1, 1)
    harness.advance(200)   # coordinators loaded
    return harness


def _run_engine_example(make_engine, make_records, response_classes, server_errors, frame: bytes,
                        node: int) -> None:
    harness = _fresh(make_engine, make_records)
    errors_before = len(server_errors.records)
    connection = harness.connect(node)
    before = len(harness.engine.trace)
    harness.handle(connection, frame)
    harness.advance(0)
    check_replies(harness, connection, frame, before, response_classes, _decode_at)
    harness.advance(1_000)   # let whatever waits (a long poll, a rebalance) fire
    harness.engine.connection_closed(connection)
    assert len(server_errors.records) == errors_before, [r.getMessage() for r in server_errors.records]
    still_serving(harness, make_records, 0)


@settings(ENGINE_SETTINGS, max_examples=1_200)
@given(data=st.data())
def test_engine_survives_mutated_valid_frames(make_engine, make_records, valid_frames, response_classes,
                                              server_errors, data):
    _, _, frame = data.draw(st.sampled_from(valid_frames), label="valid frame")
    mutated = mutate(frame, data.draw(_OPS, label="mutations"))
    _run_engine_example(make_engine, make_records, response_classes, server_errors, mutated,
                        data.draw(st.integers(1, 3), label="broker"))


@settings(ENGINE_SETTINGS, max_examples=400)
@given(frame=random_frames(), node=st.integers(1, 3))
def test_engine_survives_random_frames(make_engine, make_records, response_classes, server_errors, frame,
                                       node):
    _run_engine_example(make_engine, make_records, response_classes, server_errors, frame, node)


def test_every_valid_frame_is_answered_without_a_handler_error(make_engine, make_records, valid_frames,
                                                               response_classes, server_errors):
    """The unmutated corpus: every served API at every served version decodes and answers."""
    for api, version, frame in valid_frames:
        harness = _fresh(make_engine, make_records)
        connection = harness.connect(1)
        before = len(harness.engine.trace)
        harness.handle(connection, frame)
        harness.advance(0)
        check_replies(harness, connection, frame, before, response_classes, _decode_at)
        entry = harness.engine.trace[-1]
        assert entry.outcome in ("answered", "pending"), (api, version, entry)
        assert (api.name, version) == (entry.api, entry.api_version)
    assert server_errors.records == []


# -- socket level ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzzed_server():
    from kgroup.core.coordinator import GroupCoordinatorConfig
    no_delay = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=2, coordinator=no_delay) as server:
        server.create_topic("kept", 1)
        yield server


#: Records of "kept" the socket-level run has seen acknowledged.
_ACKED = {"kept": 0}


def _exchange(address: str, payload: bytes) -> str:
    """Send raw bytes; "answered", "closed" or "silent" (a request that waits, or a partial frame)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        sock.sendall(payload)
        sock.settimeout(0.2)
        try:
            head = sock.recv(4)
        except socket.timeout:
            return "silent"
        except ConnectionResetError:
            return "closed"
        return "answered" if head else "closed"


@settings(derandomize=True, deadline=None, database=None, max_examples=100,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_socket_server_survives_bad_frames(fuzzed_server, valid_frames, make_records, raw_client, data):
    server = fuzzed_server
    if data.draw(st.booleans(), label="mutated"):
        _, _, frame = data.draw(st.sampled_from(valid_frames), label="valid frame")
        body = mutate(frame, data.draw(_OPS, label="mutations"))
    else:
        body = data.draw(random_frames(), label="random frame")
    if data.draw(st.integers(0, 4), label="framing") == 0:
        payload = data.draw(st.binary(min_size=4, max_size=4), label="size prefix") + body   # any size prefix
    else:
        payload = struct.pack(">i", len(body)) + body
    node = data.draw(st.sampled_from([1, 2]), label="broker")
    _exchange(server.listener(node), payload)
    # The server is still up and every other connection works: the log kept every acknowledged
    # record, and one more produce is acknowledged right after them.
    client = raw_client(server.listener(server.partition_leader("kept", 0)))
    versions = client.request(ApiVersionsRequest(version=3, client_software_name="check",
                                                 client_software_version="1"))
    assert versions.error_code == 0
    listed = client.request(ListOffsetsRequest(version=7, replica_id=-1, topics=[
        ListOffsetsRequest.ListOffsetsTopic(version=7, name="kept", partitions=[
            ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(version=7, partition_index=0,
                                                                     timestamp=-1)])]))
    end = listed.topics[0].partitions[0].offset
    assert end >= _ACKED["kept"]
    topic = ProduceRequest.TopicProduceData
    produced = client.request(ProduceRequest(version=9, acks=-1, timeout_ms=5_000, topic_data=[
        topic(version=9, name="kept", partition_data=[
            topic.PartitionProduceData(version=9, index=0, records=make_records(1))])]))
    answer = produced.responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset) == (0, end)
    _ACKED["kept"] = end + 1
