"""ConsumerProtocol bytes: golden vectors, round trips, untrusted input."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kgroup.errors import ConfigError, InvalidProtocolMetadata
from kgroup.values import Assignment, Subscription, TopicPartition
from kgroup.wire.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscription_version,
)

SUB = Subscription(
    topics=["a", "bc"],
    owned_partitions=[TopicPartition("a", 1), TopicPartition("a", 3)],
    generation_id=7,
    rack_id="r1",
    user_data=b"\x01\x02",
)

# Hand-derived from ConsumerProtocolSubscription.json: int16 version,
# int32 topic count + (int16 len, utf8) each, int32-length user data,
# v1 owned partitions [(string, [int32])], v2 int32 generation, v3 nullable string rack.
V0_BODY = (
    "00000002" "0001" "61" "0002" "6263"  # topics ["a", "bc"]
    "00000002" "0102"                      # user data
)
OWNED = "00000001" "0001" "61" "00000002" "00000001" "00000003"
GOLDEN_SUB = {
    0: "0000" + V0_BODY,
    1: "0001" + V0_BODY + OWNED,
    2: "0002" + V0_BODY + OWNED + "00000007",
    3: "0003" + V0_BODY + OWNED + "00000007" + "0002" + "7231",
}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_bytes(version):
    assert encode_subscription(SUB, version).hex() == GOLDEN_SUB[version]


def test_subscription_defaults_for_older_versions():
    decoded = decode_subscription(bytes.fromhex(GOLDEN_SUB[0]), group_instance_id="i-1")
    assert decoded == Subscription(topics=["a", "bc"], user_data=b"\x01\x02", group_instance_id="i-1")
    v1 = decode_subscription(bytes.fromhex(GOLDEN_SUB[1]))
    assert v1.owned_partitions == SUB.owned_partitions and v1.generation_id == -1 and v1.rack_id is None
    assert decode_subscription(bytes.fromhex(GOLDEN_SUB[3])) == SUB


def test_null_user_data_and_null_rack():
    sub = Subscription(topics=["t"])
    assert encode_subscription(sub, 3).hex() == (
        "0003" "00000001" "0001" "74" "ffffffff" "00000000" "ffffffff" "ffff"
    )
    assert decode_subscription(encode_subscription(sub, 3)) == sub


def test_assignment_golden_bytes():
    assignment = Assignment([TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 1)], b"\x09")
    expected = (
        "00000002" "0001" "61" "00000002" "00000000" "00000002" "0001" "62" "00000001" "00000001"
        "00000001" "09"
    )
    for version in range(4):
        data = encode_assignment(assignment, version)
        assert data.hex() == f"{version:04x}" + expected
        assert decode_assignment(data) == assignment
    assert encode_assignment(Assignment(), 0).hex() == "0000" "00000000" "ffffffff"


def test_empty_bytes_is_empty_assignment():
    assert decode_assignment(b"") == Assignment()


@pytest.mark.parametrize("version", [-1, 4, 99, "3"])
def test_encode_rejects_bad_versions(version):
    with pytest.raises(ConfigError):
        encode_subscription(SUB, version)
    with pytest.raises(ConfigError):
        encode_assignment(Assignment(), version)


def test_newer_versions_read_known_prefix():
    data = bytes.fromhex("0007" + GOLDEN_SUB[3][4:] + "deadbeef")
    assert subscription_version(data) == 7
    assert decode_subscription(data) == SUB
    assignment = decode_assignment(bytes.fromhex("0005" "00000000" "ffffffff" "00"))
    assert assignment == Assignment()


@pytest.mark.parametrize(
    "hexdata, fragment",
    [
        ("00", "truncated version"),
        ("ffff", "negative version"),
        ("0000" "80000000", "negative topics length"),
        ("0000" "7fffffff", "topics length 2147483647 exceeds"),
        ("0000" "00000001" "0002" "ff", "truncated topic"),
        ("0000" "00000001" "0002" "fffe" "ffffffff", "not valid UTF-8"),
        ("0000" "00000001" "ffff" "ffffffff", "invalid topic length -1"),
        ("0000" "00000000" "fffffffe", "invalid user data length"),
        ("0000" "00000000" "ffffffff" "00", "trailing bytes"),
        ("0001" "00000000" "ffffffff" "00000001" "0001" "61" "00000001" "ffffffff", "negative partition"),
        ("0001" "00000000" "ffffffff" "00000001" "0001" "61" "40000000", "exceeds"),
    ],
)
def test_malformed_subscription_names_the_problem(hexdata, fragment):
    with pytest.raises(InvalidProtocolMetadata) as info:
        decode_subscription(bytes.fromhex(hexdata))
    assert fragment in str(info.value)
    assert info.value.what == "subscription"


def test_decoders_reject_non_bytes():
    with pytest.raises(InvalidProtocolMetadata):
        decode_subscription("0000")
    with pytest.raises(InvalidProtocolMetadata):
        decode_assignment(None)


# ------------------------------------------------------------------ properties

topics_st = st.text(min_size=0, max_size=8)
tps_st = st.lists(st.builds(TopicPartition, topics_st, st.integers(0, 2**31 - 1)), max_size=8)
subscriptions_st = st.builds(
    Subscription,
    topics=st.lists(topics_st, max_size=6),
    owned_partitions=tps_st,
    generation_id=st.integers(-(2**31), 2**31 - 1),
    rack_id=st.none() | st.text(max_size=6),
    user_data=st.none() | st.binary(max_size=16),
)
assignments_st = st.builds(Assignment, partitions=tps_st, user_data=st.none() | st.binary(max_size=16))


def _grouped(partitions):
    """Order after a round trip: grouped by topic in order of first appearance."""
    order = list(dict.fromkeys(tp.topic for tp in partitions))
    return tuple(tp for topic in order for tp in partitions if tp.topic == topic)


@settings(max_examples=150, deadline=None)
@given(subscriptions_st)
def test_subscription_round_trip_v3(sub):
    decoded = decode_subscription(encode_subscription(sub, 3), sub.group_instance_id)
    assert decoded == Subscription(
        topics=sub.topics,
        owned_partitions=_grouped(sub.owned_partitions),
        generation_id=sub.generation_id,
        rack_id=sub.rack_id,
        user_data=sub.user_data,
    )


@settings(max_examples=100, deadline=None)
@given(subscriptions_st, st.integers(0, 3))
def test_subscription_bytes_match_kafka_python(sub, version):
    data = encode_subscription(sub, version)
    theirs = ConsumerProtocolSubscription.decode(data)
    assert list(theirs.topics) == list(sub.topics)
    assert theirs.user_data == sub.user_data
    if version >= 1:
        ours = [(tp.topic, tp.partition) for tp in _grouped(sub.owned_partitions)]
        assert [(e.topic, p) for e in theirs.owned_partitions for p in e.partitions] == ours
    assert theirs.encode() == data


@settings(max_examples=100, deadline=None)
@given(assignments_st, st.integers(0, 3))
def test_assignment_round_trip_and_kafka_python(assignment, version):
    data = encode_assignment(assignment, version)
    assert decode_assignment(data) == Assignment(_grouped(assignment.partitions), assignment.user_data)
    theirs = ConsumerProtocolAssignment.decode(data)
    assert [(tp.topic, tp.partition) for tp in theirs.partitions()] == [
        (tp.topic, tp.partition) for tp in _grouped(assignment.partitions)
    ]
    assert theirs.encode() == data


def _decode_all(data):
    for decoder in (decode_subscription, decode_assignment):
        try:
            decoder(data)
        except InvalidProtocolMetadata:
            pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_only_raise_invalid_protocol_metadata(data):
    _decode_all(data)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        subscriptions_st.flatmap(lambda s: st.integers(0, 3).map(lambda v: encode_subscription(s, v))),
        assignments_st.flatmap(lambda a: st.integers(0, 3).map(lambda v: encode_assignment(a, v))),
    ),
    st.data(),
)
def test_mutated_and_truncated_blobs_only_raise_invalid_protocol_metadata(blob, data):
    cut = data.draw(st.integers(0, len(blob)))
    _decode_all(blob[:cut])
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    _decode_all(bytes(mutated))
