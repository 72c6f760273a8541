"""What the hand-written codecs of the hot paths share (Produce and Fetch requests, Produce, Fetch and
Metadata answers): Kafka's primitive types read from and written as bytes (KIP-482's unsigned
varints for compact lengths, tagged-field sections, classic and compact strings and array lengths)
and the exception that hands a value back to kafka-python's codec."""
from __future__ import annotations

import struct
from typing import Any, Iterable, List, Optional, Tuple, Union

__all__ = ["NotCoveredByHand", "RequestFrame", "array_prefix", "distinct_error_codes", "null_length",
           "read_array_length", "read_length", "read_string", "read_uvarint", "skip_tagged_fields",
           "string_bytes", "uvarint_bytes"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


#: A request frame: bytes, or for a large Produce request the bytearray it was read into (read in
#: place: only indexed, sliced and unpacked).
RequestFrame = Union[bytes, bytearray]

#: The largest unsigned varint read by hand: Kafka's ``ByteUtils.readUnsignedVarint`` returns a Java
#: int, and kafka-python folds larger values differently, so those are left to its codec.
_MAX_UVARINT = 2**31 - 1


class NotCoveredByHand(Exception):
    """Bytes or values a hand codec leaves to kafka-python's (which answers or refuses them as it
    always did)."""


# -- reading -------------------------------------------------------------------------------------
# Each reader takes the frame and a position and returns (value, position after it); bytes that
# run out raise IndexError or struct.error, which the decoders treat like NotCoveredByHand.

def read_uvarint(frame: RequestFrame, at: int) -> Tuple[int, int]:
    """An unsigned varint (KIP-482's compact lengths and tags) and the position after it."""
    byte = frame[at]
    if byte < 0x80:
        return byte, at + 1
    value = byte & 0x7F
    shift = 7
    at += 1
    while True:
        byte = frame[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value > _MAX_UVARINT:
                raise NotCoveredByHand("varint larger than a Java int")
            return value, at
        shift += 7
        if shift > 28:
            raise NotCoveredByHand("varint longer than 5 bytes")


def skip_tagged_fields(frame: RequestFrame, at: int) -> int:
    """Past a tagged-field section none of whose tags the reader knows: each is skipped, as Kafka's
    generated readers do with unknown tags."""
    count, at = read_uvarint(frame, at)
    for _ in range(count):
        _tag, at = read_uvarint(frame, at)
        size, at = read_uvarint(frame, at)
        at += size
        if at > len(frame):
            raise NotCoveredByHand("tagged field past the end of the request")
    return at


def read_length(frame: RequestFrame, at: int, flexible: bool,
                classic: struct.Struct = _INT32) -> Tuple[int, int]:
    """A length as written before an array, string, bytes or records: compact (an unsigned varint
    of length + 1, KIP-482) when ``flexible``, else ``classic`` (int32, or int16 for strings);
    -1 is null."""
    if flexible:
        length, at = read_uvarint(frame, at)
        return length - 1, at
    (length,) = classic.unpack_from(frame, at)
    return length, at + classic.size


def read_string(frame: RequestFrame, at: int, flexible: bool) -> Tuple[Optional[str], int]:
    """A nullable string, compact when ``flexible``; a negative length other than null, bytes past
    the end or invalid UTF-8 (ValueError) are not covered."""
    length, at = read_length(frame, at, flexible, _INT16)
    if length < 0:
        if length == -1:
            return None, at
        raise NotCoveredByHand("negative string length")
    end = at + length
    if end > len(frame):
        raise NotCoveredByHand("string past the end of the request")
    return str(frame[at:end], "utf-8"), end


def read_array_length(frame: RequestFrame, at: int, flexible: bool) -> Tuple[int, int]:
    """The length of a non-nullable array, compact when ``flexible``: a null one (or a negative
    length) is not covered."""
    length, at = read_length(frame, at, flexible)
    if length < 0:
        raise NotCoveredByHand("null array")
    return length, at


# -- writing -------------------------------------------------------------------------------------


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
