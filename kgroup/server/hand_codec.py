"""What the hand-written encoders of the hot answers share (Produce, Fetch, Metadata): Kafka's
primitive types as bytes (KIP-482's unsigned varints for compact lengths, classic and compact
strings and array lengths) and the exception that hands a value back to kafka-python's codec."""
from __future__ import annotations

import struct
from typing import Any, Iterable, List, Optional, Tuple

__all__ = ["NotCoveredByHand", "array_prefix", "distinct_error_codes", "null_length", "string_bytes",
           "uvarint_bytes"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class NotCoveredByHand(Exception):
    """Bytes or values a hand codec leaves to kafka-python's (which answers or refuses them as it
    always did)."""


def uvarint_bytes(value: int) -> bytes:
    """An unsigned varint (KIP-482's compact lengths and tag numbers)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def null_length(flexible: bool) -> bytes:
    """The length of a null array, records or bytes field: -1, or compact 0 when ``flexible``."""
    return b"\x00" if flexible else b"\xff\xff\xff\xff"


def string_bytes(value: Optional[str], flexible: bool, nullable: bool) -> bytes:
    """A string, compact when ``flexible``; null only where ``nullable`` (else NotCoveredByHand)."""
    if value is None:
        if not nullable:
            raise NotCoveredByHand("null in a non-nullable string")
        return b"\x00" if flexible else b"\xff\xff"
    encoded = value.encode("utf-8")
    if flexible:
        return uvarint_bytes(len(encoded) + 1) + encoded
    return _INT16.pack(len(encoded)) + encoded


def array_prefix(items: Any, flexible: bool) -> bytes:
    """A non-null array's length, compact when ``flexible`` (a null one: NotCoveredByHand)."""
    if items is None:
        raise NotCoveredByHand("null array")
    return uvarint_bytes(len(items) + 1) if flexible else _INT32.pack(len(items))


def distinct_error_codes(codes: Iterable[int]) -> Tuple[int, ...]:
    """Every non-zero code of ``codes``, in order, each once: a hand-built answer's share of
    ``faults.error_codes_of`` (which walks kafka-python structs the same way)."""
    found: List[int] = []
    for code in codes:
        if code and code not in found:
            found.append(int(code))
    return tuple(found)
