"""Which ``__consumer_offsets`` partition (and so which broker) coordinates a group.

Kafka places a group on partition ``abs(groupId.hashCode()) % partitions``
with Java's ``String.hashCode`` and ``Utils.abs`` (which maps
``Integer.MIN_VALUE`` to 0).  Reproducing it exactly lets a test predict the
coordinator the same way it would on a real cluster.
"""
from __future__ import annotations

import functools

from kgroup.values import INTERNAL_TOPICS

GROUP_METADATA_TOPIC = "__consumer_offsets"
assert GROUP_METADATA_TOPIC in INTERNAL_TOPICS

_INT_MIN = -(2**31)


@functools.lru_cache(maxsize=4096)  # pure; every request of a group asks for its partition again
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for unit in _utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def _utf16_units(text: str):
    data = text.encode("utf-16-be", "surrogatepass")
    return (int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but ``Integer.MIN_VALUE`` gives 0."""
    return 0 if value == _INT_MIN else abs(value)


def partition_for_group(group_id: str, partitions: int) -> int:
    if partitions < 1:
        raise ValueError(f"{GROUP_METADATA_TOPIC} needs at least one partition, got {partitions}")
    return java_abs(java_string_hash(group_id)) % partitions
