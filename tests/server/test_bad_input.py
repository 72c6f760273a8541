"""Bad input on a running KafkaServer, over raw sockets.

A malformed frame, an oversize (or negative) frame size, an unknown or unserved API key, a
truncated request, a frame shorter than a request header, a client that disconnects in the
middle of a request: the connection is closed (Kafka's ``SocketServer`` closes a channel
whose request does not parse), the server logs exactly one line naming the problem, every
other connection keeps working and nothing acknowledged is lost.  A request at a version
the server does not serve is answered with UNSUPPORTED_VERSION on a connection that stays
open, and ApiVersions at an unknown version gets the KIP-511 v0-shaped answer.
"""
from __future__ import annotations

import logging
import struct
import time
from typing import List

import pytest
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from kgroup.server.faults import error_codes_of
from kgroup.server.frames import MAX_FRAME_BYTES
from kgroup.server.apis import SUPPORTED_VERSIONS

UNSUPPORTED_VERSION = 35


def server_warnings(caplog) -> List[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "kgroup.server" and r.levelno >= logging.WARNING]


def wait_for_warnings(caplog, count: int, timeout_s: float = 5.0) -> List[str]:
    deadline = time.monotonic() + timeout_s
    while len(server_warnings(caplog)) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return server_warnings(caplog)


def produce_request(records: bytes) -> ProduceRequest:
    topic = ProduceRequest.TopicProduceData
    return ProduceRequest(version=9, acks=-1, timeout_ms=5_000, topic_data=[
        topic(version=9, name="kept", partition_data=[topic.PartitionProduceData(version=9, index=0,
                                                                                 records=records)])])


def log_end(client) -> int:
    listed = client.request(ListOffsetsRequest(version=7, replica_id=-1, topics=[
        ListOffsetsRequest.ListOffsetsTopic(version=7, name="kept", partitions=[
            ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(version=7, partition_index=0,
                                                                     timestamp=-1)])]))
    return listed.topics[0].partitions[0].offset


@pytest.fixture
def cluster(server1, raw_client, make_records):
    """A one-broker server holding 3 acknowledged records in "kept", and a bystander connection
    opened before the bad input arrives."""
    server1.create_topic("kept", 1)
    bystander = raw_client(server1.listener(1))
    answer = bystander.request(produce_request(make_records(3)))
    assert answer.responses[0].partition_responses[0].error_code == 0
    return server1, bystander


def assert_unharmed(server, bystander, raw_client, make_records) -> None:
    """The bystander's connection and a new one both work, and the 3 records are still there."""
    metadata = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
    assert bystander.request(metadata).brokers
    assert log_end(bystander) == 3
    newcomer = raw_client(server.listener(1))
    answer = newcomer.request(produce_request(make_records(1)))
    assert answer.responses[0].partition_responses[0].base_offset == 3
    assert log_end(newcomer) == 4


def header(api_key: int, version: int, correlation_id: int = 7, client_id: bytes = b"bad") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def metadata_frame() -> bytes:
    request = MetadataRequest(version=5, topics=None, allow_auto_topic_creation=False)
    request.with_header(correlation_id=9, client_id="bad")
    return bytes(request.encode(header=True))


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


BAD_FRAMES = {
    # name: (bytes on the wire, words the one warning line must contain)
    "malformed": (framed(header(3, 5, client_id=b"") + b"\xff\xff"), ("Metadata v5", "does not decode")),
    "truncated": (framed(metadata_frame()[:-3]), ("Metadata v5", "correlation id 9", "does not decode")),
    "shorter than a header": (framed(b"\x00\x03\x00\x05\x00"), ("5 bytes", "shorter")),
    "unknown api key": (framed(header(999, 0) + b"\x00\x00"), ("unknown API key 999",)),
    "unserved api key": (framed(header(32, 0) + b"\x00\x00"), ("DescribeConfigs", "not served")),
    "oversize frame": (struct.pack(">i", MAX_FRAME_BYTES + 1), ("frame size", str(MAX_FRAME_BYTES + 1))),
    "negative frame size": (struct.pack(">i", -2), ("frame size -2",)),
    # Heartbeat v0 whose group id has length -1: Kafka's reader refuses a null there.
    "null in a non-nullable field": (framed(header(12, 0) + b"\xff\xff" + b"\x00\x00\x00\x01" + b"\x00\x01m"),
                                     ("Heartbeat v0", "non-nullable field group_id is null")),
}


@pytest.mark.parametrize("case", sorted(BAD_FRAMES))
def test_bad_frame_closes_only_its_connection_with_one_log_line(cluster, raw_client, make_records, caplog,
                                                                case):
    server, bystander = cluster
    payload, words = BAD_FRAMES[case]
    caplog.set_level(logging.WARNING, logger="kgroup.server")
    caplog.clear()
    victim = raw_client(server.listener(1))
    victim.send_bytes(payload)
    assert victim.is_closed_by_server(5.0), f"{case}: the connection stayed open"
    (line,) = wait_for_warnings(caplog, 1)
    assert all(word in line for word in words), line
    assert_unharmed(server, bystander, raw_client, make_records)
    assert len(server_warnings(caplog)) == 1, server_warnings(caplog)


def test_bad_frames_are_in_the_trace(cluster, raw_client):
    server, _ = cluster
    victim = raw_client(server.listener(1))
    victim.send_bytes(BAD_FRAMES["unknown api key"][0])
    assert victim.is_closed_by_server(5.0)
    (entry,) = [e for e in server.trace() if e.outcome.startswith("closed")]
    assert (entry.api, entry.correlation_id) == ("999", 7)
    assert "unknown API key 999" in entry.outcome and entry.answered_ms == entry.received_ms


@pytest.mark.parametrize("sent", ["half a size prefix", "half a request"])
def test_client_disconnecting_mid_request(cluster, raw_client, make_records, caplog, sent):
    """The partial request is dropped (nothing of it reaches the log), one line says so."""
    server, bystander = cluster
    caplog.set_level(logging.WARNING, logger="kgroup.server")
    caplog.clear()
    request = produce_request(make_records(5))
    request.with_header(correlation_id=1, client_id="quitter")
    body = bytes(request.encode(header=True))
    frame = struct.pack(">i", len(body)) + body
    quitter = raw_client(server.listener(1))
    quitter.send_bytes(frame[:2] if sent == "half a size prefix" else frame[:len(frame) // 2])
    time.sleep(0.05)
    quitter.close()
    (line,) = wait_for_warnings(caplog, 1)
    assert "closed by the client mid-request" in line
    if sent == "half a request":
        assert f"of {len(frame)} bytes" in line
    assert_unharmed(server, bystander, raw_client, make_records)   # the 5 records were not appended
    assert len(server_warnings(caplog)) == 1
    assert server.trace(client_id="quitter") == []


def test_client_disconnecting_while_its_request_waits(server1, raw_client, make_records, caplog):
    """A client that leaves while its long-poll fetch is parked: the answer goes nowhere, no
    error, the partition keeps serving."""
    from kafka.protocol.consumer import FetchRequest
    server1.create_topic("kept", 1)
    caplog.set_level(logging.WARNING, logger="kgroup.server")
    waiter = raw_client(server1.listener(1))
    topic = FetchRequest.FetchTopic
    waiter.send(FetchRequest(version=12, replica_id=-1, max_wait_ms=300, min_bytes=1, max_bytes=1 << 20,
                             forgotten_topics_data=[], topics=[topic(version=12, topic="kept", partitions=[
                                 topic.FetchPartition(version=12, partition=0, fetch_offset=0,
                                                      partition_max_bytes=1 << 20)])]))
    time.sleep(0.05)
    waiter.close()
    time.sleep(0.4)   # the fetch's max wait passes with its connection gone
    other = raw_client(server1.listener(1))
    answer = other.request(produce_request(make_records(2)))
    assert answer.responses[0].partition_responses[0].base_offset == 0
    assert server_warnings(caplog) == []


# -- versions ------------------------------------------------------------------------------------


def test_unserved_versions_get_unsupported_version_on_an_open_connection(server1, raw_client,
                                                                         unserved_requests, caplog):
    """Every version kafka-python can encode but the server does not serve is answered (at that
    version) with UNSUPPORTED_VERSION, and the same connection serves the next request."""
    server1.create_topic("t", 2)
    caplog.set_level(logging.WARNING, logger="kgroup.server")
    client = raw_client(server1.listener(1))
    assert len(unserved_requests) >= 20
    for api, version, request in unserved_requests:
        low, high = SUPPORTED_VERSIONS[api]
        assert not low <= version <= high
        if api.name == "ApiVersions":
            continue   # KIP-511: below
        answer = client.request(request, client_id="old-or-new")
        assert UNSUPPORTED_VERSION in error_codes_of(answer), (api.name, version, answer)
        again = client.request(ApiVersionsRequest(version=3, client_software_name="x",
                                                  client_software_version="1"))
        assert again.error_code == 0
    traced = [e for e in server1.trace(client_id="old-or-new")]
    assert traced and all(e.outcome == "unsupported version" and e.error_codes == (UNSUPPORTED_VERSION,)
                          for e in traced)
    assert server_warnings(caplog) == []


def test_unserved_version_kafka_python_cannot_encode_closes_with_one_line(cluster, raw_client, make_records,
                                                                          caplog):
    server, bystander = cluster
    caplog.set_level(logging.WARNING, logger="kgroup.server")
    caplog.clear()
    victim = raw_client(server.listener(1))
    victim.send_frame(header(3, 99) + b"\x00" * 8)   # Metadata v99
    assert victim.is_closed_by_server(5.0)
    (line,) = wait_for_warnings(caplog, 1)
    assert "Metadata v99 is not supported" in line and "cannot encode" in line
    assert_unharmed(server, bystander, raw_client, make_records)


@pytest.mark.parametrize("version", [4, 5, 127])
def test_api_versions_at_an_unknown_version_gets_the_kip_511_answer(server1, raw_client, version):
    """KIP-511: ApiVersions at a version the broker does not know is answered with a v0 body
    (v0 header), error UNSUPPORTED_VERSION and the full api list, so the client retries with
    the highest version both sides know, on the same connection."""
    client = raw_client(server1.listener(1))
    # Request header v2 (what an ApiVersions v3+ client sends): client id, then empty tagged fields.
    body = b"\x08kclient\x021\x00"
    client.send_frame(header(18, version, correlation_id=41, client_id=b"newer") + b"\x00" + body)
    frame = client.recv_frame(5.0)
    assert frame is not None
    answer = ApiVersionsResponse.decode(frame[4:], version=0, header=True)
    assert answer.header.correlation_id == 41
    assert answer.error_code == UNSUPPORTED_VERSION
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert ranges == {int(key): span for key, span in SUPPORTED_VERSIONS.items()}
    assert ranges[18] == (0, 3)
    retried = client.request(ApiVersionsRequest(version=ranges[18][1], client_software_name="k",
                                                client_software_version="1"))
    assert retried.error_code == 0 and len(retried.api_keys) == len(SUPPORTED_VERSIONS)
    (entry,) = [e for e in server1.trace() if e.correlation_id == 41]
    assert (entry.api, entry.api_version, entry.outcome) == ("ApiVersions", version, "unsupported version")


def test_stock_clients_negotiate_through_the_kip_511_fallback(server1):
    """kafka-python opens with ApiVersions v4 (newer than the server's v3) and falls back."""
    import kafka
    admin = kafka.KafkaAdminClient(bootstrap_servers=server1.bootstrap_servers, client_id="negotiator")
    try:
        assert [b["broker_id"] for b in admin.describe_cluster()["brokers"]] == [1]
    finally:
        admin.close()
    versions = [(e.api_version, e.error_codes)
                for e in server1.trace(api="ApiVersions", client_id="negotiator")]
    assert versions[0] == (4, (UNSUPPORTED_VERSION,)) and versions[1] == (3, ())
