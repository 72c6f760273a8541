"""The kafka-python transport against a real broker (Tansu)."""
from __future__ import annotations

import time

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from kgroup.core import messages as m
from kgroup.core.error_codes import ErrorCode
from kgroup.io.kafka_python import KafkaPythonTransport
from kgroup.io.transport import TransportError
from kgroup.values import TopicPartition

from kgroup.testing.tansu import create_topic

pytestmark = pytest.mark.broker


def roundtrip(transport, request, node_id=None, timeout_s=10.0):
    cid = transport.send(request, node_id)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for completion in transport.poll(200):
            assert completion.correlation_id == cid
            return completion.result
    raise AssertionError(f"no answer to {type(request).__name__} within {timeout_s} s")


def subscription_bytes(topics):
    return bytes(ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=b"").encode())


@pytest.fixture
def transport(tansu_bootstrap):
    t = KafkaPythonTransport(bootstrap_servers=tansu_bootstrap, request_timeout_ms=10_000)
    yield t
    t.close()


def find_coordinator(transport, group):
    resp = roundtrip(transport, m.FindCoordinatorRequest(group))
    assert isinstance(resp, m.FindCoordinatorResponse)
    assert resp.error_code is ErrorCode.NONE
    assert resp.port > 0 and resp.host
    return resp.node_id


def join(transport, node, group, topic, member_id=""):
    req = m.JoinGroupRequest(
        group_id=group, member_id=member_id, session_timeout_ms=6000, rebalance_timeout_ms=6000,
        protocols=[m.JoinGroupProtocol("range", subscription_bytes([topic]))],
    )
    resp = roundtrip(transport, req, node)
    if resp.error_code is ErrorCode.MEMBER_ID_REQUIRED:
        assert resp.member_id
        resp = roundtrip(transport, m.JoinGroupRequest(**{**_fields(req), "member_id": resp.member_id}), node)
    return resp


def _fields(value):
    import attrs

    return attrs.asdict(value, recurse=False)


def test_group_lifecycle_and_offsets(transport, tansu_bootstrap, unique_name):
    topic, group = unique_name("tp"), unique_name("g")
    create_topic(tansu_bootstrap, topic, 2)
    node = find_coordinator(transport, group)

    joined = join(transport, node, group, topic)
    assert joined.error_code is ErrorCode.NONE, joined
    assert joined.generation_id >= 0 and joined.leader == joined.member_id
    assert joined.protocol_name == "range"
    assert [x.member_id for x in joined.members] == [joined.member_id]
    assert joined.members[0].metadata == subscription_bytes([topic])

    assignment = b"\x00\x01assignment-bytes"
    synced = roundtrip(transport, m.SyncGroupRequest(
        group, joined.generation_id, joined.member_id, protocol_name="range",
        assignments=[m.SyncGroupAssignment(joined.member_id, assignment)]), node)
    assert synced.error_code is ErrorCode.NONE
    assert synced.assignment == assignment

    beat = roundtrip(transport, m.HeartbeatRequest(group, joined.generation_id, joined.member_id), node)
    assert beat == m.HeartbeatResponse(ErrorCode.NONE)
    stale = roundtrip(transport, m.HeartbeatRequest(group, joined.generation_id + 7, joined.member_id), node)
    assert stale.error_code is ErrorCode.ILLEGAL_GENERATION

    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    committed = roundtrip(transport, m.OffsetCommitRequest(
        group, [m.PartitionOffsetCommit(tp0, m.OffsetAndMetadata(42, "meta"))],
        generation_id=joined.generation_id, member_id=joined.member_id), node)
    assert committed.partitions == (m.PartitionError(tp0, ErrorCode.NONE),)

    fetched = roundtrip(transport, m.OffsetFetchRequest(group, [tp0, tp1]), node)
    assert fetched.error_code is ErrorCode.NONE
    by_tp = {p.topic_partition: p for p in fetched.partitions}
    # Tansu 0.6 does not store commit metadata (docs/kafka_python.md), so only the offset is checked.
    assert by_tp[tp0].committed.offset == 42
    assert by_tp[tp1].committed is None

    left = roundtrip(transport, m.LeaveGroupRequest(group, [m.MemberIdentity(joined.member_id)]), node)
    assert left.error_code is ErrorCode.NONE
    after = roundtrip(transport, m.HeartbeatRequest(group, joined.generation_id, joined.member_id), node)
    assert after.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION)


def test_commit_with_stale_generation_is_refused(transport, tansu_bootstrap, unique_name):
    topic, group = unique_name("tp"), unique_name("g")
    create_topic(tansu_bootstrap, topic, 1)
    node = find_coordinator(transport, group)
    joined = join(transport, node, group, topic)
    resp = roundtrip(transport, m.OffsetCommitRequest(
        group, [m.PartitionOffsetCommit(TopicPartition(topic, 0), m.OffsetAndMetadata(1))],
        generation_id=joined.generation_id + 5, member_id=joined.member_id), node)
    assert resp.partitions[0].error_code is ErrorCode.ILLEGAL_GENERATION


def test_wakeup_returns_poll_early(transport):
    import threading

    threading.Timer(0.1, transport.wakeup).start()
    start = time.monotonic()
    assert transport.poll(5_000) == []
    assert time.monotonic() - start < 2.0


def test_unreachable_node_completes_with_transport_error(transport):
    cid = transport.send(m.HeartbeatRequest("g", 1, "x"), node_id=987654)
    deadline = time.monotonic() + 10
    results = []
    while not results and time.monotonic() < deadline:
        results = transport.poll(200)
    assert results[0].correlation_id == cid
    assert isinstance(results[0].result, TransportError)


def test_unsupported_request_is_a_type_error(transport):
    with pytest.raises(TypeError, match="DescribeGroupsRequest"):
        transport.send(m.DescribeGroupsRequest(["g"]))


def test_send_after_close_is_a_transport_error(tansu_bootstrap):
    t = KafkaPythonTransport(bootstrap_servers=tansu_bootstrap)
    t.close()
    with pytest.raises(TransportError):
        t.send(m.FindCoordinatorRequest("g"))


def test_shares_a_consumers_client_without_closing_it(tansu_bootstrap, unique_name):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=tansu_bootstrap)
    try:
        t = KafkaPythonTransport(consumer._client)
        assert find_coordinator(t, unique_name("g")) is not None
        t.close()
        assert consumer.topics() is not None  # the consumer's client still works
    finally:
        consumer.close()
