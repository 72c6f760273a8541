"""The server's CRC-32C agrees with kafka-python's byte-at-a-time reference."""
from __future__ import annotations

import random

import pytest
from kafka.record._crc32c import crc as reference

from kgroup.server import crc32c as module
from kgroup.server.crc32c import _crc32c_py, crc32c


def test_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C catalogue's check value


@pytest.mark.parametrize("size", [*range(0, 80), 127, 128, 129, 1000, 1024, 4095, 4097, 16_384, 70_001,
                                  300_000])
def test_matches_kafka_python(size):
    data = random.Random(size).randbytes(size)
    assert _crc32c_py(data) == reference(data)
    assert _crc32c_py(memoryview(bytearray(data))) == reference(data)


def test_a_large_batch_uses_the_dense_split_points():
    data = random.Random(7).randbytes(3 << 20)  # 25 Mbit: past the last sparse split point
    assert _crc32c_py(data) == reference(data)


def test_split_points_are_powers_of_x_mod_p():
    for k, mask, exponents in module._LADDER:
        if k > 1 << 17:
            assert mask == 0  # made when used, not kept
            continue
        assert mask == (1 << k) - 1
        value = 1
        for _ in range(k):
            value <<= 1
            if value >> 32:
                value ^= module._POLY
        assert sum(1 << e for e in exponents) == value, k


def test_detects_a_flipped_bit():
    data = bytearray(random.Random(1).randbytes(1024))
    before = crc32c(data)
    data[500] ^= 0x10
    assert crc32c(data) != before
