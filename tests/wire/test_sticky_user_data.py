"""Java StickyAssignor user data: byte identity with kafka-python and hostile input."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

from kgroup.errors import InvalidProtocolMetadata
from kgroup.values import TopicPartition as TP
from kgroup.wire.sticky_user_data import decode_sticky_user_data, encode_sticky_user_data

PARTS = [TP("orders", 0), TP("orders", 3), TP("pay-é", 1), TP("orders", 7)]


def test_v1_bytes_match_kafka_python_headerless_encoding():
    theirs = StickyAssignorUserData([("orders", [0, 3, 7]), ("pay-é", [1])], 12).encode(header=False)
    assert encode_sticky_user_data(PARTS, 12) == theirs


def test_exact_layout():
    assert encode_sticky_user_data([TP("t", 5)], 2) == (
        struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">ii", 1, 5) + struct.pack(">i", 2)
    )


def test_round_trip_v1():
    parts, gen = decode_sticky_user_data(encode_sticky_user_data(PARTS, 12))
    assert sorted(parts) == sorted(PARTS) and gen == 12


def test_decodes_v0_without_generation():
    data = StickyAssignorUserData([("orders", [0, 3])], version=0).encode(header=False)
    assert decode_sticky_user_data(data) == ([TP("orders", 0), TP("orders", 3)], None)


def test_decodes_kafka_python_default_with_version_header():
    data = StickyAssignorUserData([("orders", [0, 3])], 9).encode()
    assert decode_sticky_user_data(data) == ([TP("orders", 0), TP("orders", 3)], 9)


def test_empty_assignment():
    assert decode_sticky_user_data(encode_sticky_user_data([], -1)) == ([], -1)


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"", "truncated topic count"),
        (b"\x00\x00", "truncated topic count"),
        (struct.pack(">i", -1), "bad topic count"),
        (struct.pack(">i", 2**30), "bad topic count"),
        (struct.pack(">ih", 1, -1) + b"\x00" * 8, "null topic name"),
        (struct.pack(">ih", 1, 50) + b"ab" + b"\x00" * 4, "truncated topic name"),
        (struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", 2**29) + b"\x00" * 4, "bad partition count"),
        (struct.pack(">ih", 1, 1) + b"\xff" + struct.pack(">i", 0), "not utf-8"),
        (encode_sticky_user_data([TP("t", 1)], 3) + b"\x00", "trailing"),
        (struct.pack(">ih", 1, 1) + b"t" + struct.pack(">iiii", 2, 0, -1, 3), "negative partition id"),
        (struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ii", 1, -5), "negative partition id"),
        ("text", "expected bytes"),
    ],
)
def test_malformed_raises_typed_error(data, reason):
    with pytest.raises(InvalidProtocolMetadata) as info:
        decode_sticky_user_data(data)
    assert reason in str(info.value)
    assert info.value.what == "sticky user data"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_else(data):
    try:
        parts, gen = decode_sticky_user_data(data)
    except InvalidProtocolMetadata:
        return
    assert all(isinstance(tp, TP) for tp in parts)
    assert gen is None or isinstance(gen, int)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5),
        max_size=4,
    ),
    st.integers(-(2**31), 2**31 - 1),
)
def test_round_trip_property(by_topic, gen):
    parts = [TP(t, p) for t, ps in by_topic.items() for p in ps]
    data = encode_sticky_user_data(parts, gen)
    assert decode_sticky_user_data(data) == (parts, gen)
    assert data == StickyAssignorUserData(list(by_topic.items()), gen).encode(header=False)
    # Truncating anywhere is always a typed error, never a crash.
    for cut in range(len(data)):
        try:
            decode_sticky_user_data(data[:cut])
        except InvalidProtocolMetadata:
            pass
