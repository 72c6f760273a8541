"""Client-generated member ids (KIP-1082, ConsumerGroupHeartbeat v1).

Kafka's consumer makes its member id once, with ``Uuid.randomUuid().toString()``:
a random version-4 UUID, written as URL-safe base64 without padding (22
characters), never one of the reserved ids (all zeros, the metadata topic's
``...01``) and never starting with ``-`` (a command line would read it as
an option).  The random bytes come from the caller (``random_bytes(16)``),
so the core stays deterministic under test and draws no entropy itself.
"""
from __future__ import annotations

import base64
from typing import Callable

from kgroup.errors import ConfigError

RandomBytes = Callable[[int], bytes]

#: Kafka ``Uuid.ZERO_UUID`` and ``Uuid.METADATA_TOPIC_ID``.
_RESERVED = (bytes(16), bytes(15) + b"\x01")
#: Draws before giving up on a source that keeps producing reserved or '-'-led ids.
_MAX_DRAWS = 64


def _as_version_4(raw: bytes) -> bytes:
    """Set the version (4) and IETF variant bits as Java's ``UUID.randomUUID`` does."""
    octets = bytearray(raw)
    octets[6] = (octets[6] & 0x0F) | 0x40
    octets[8] = (octets[8] & 0x3F) | 0x80
    return bytes(octets)


def uuid_string(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()`` of 16 bytes: URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def generate_member_id(random_bytes: RandomBytes) -> str:
    """A fresh member id from ``random_bytes`` (called with 16; must return 16 bytes)."""
    for _ in range(_MAX_DRAWS):
        raw = random_bytes(16)
        if not isinstance(raw, (bytes, bytearray)) or len(raw) != 16:
            raise ConfigError(f"random_bytes(16) must return 16 bytes, got {raw!r}")
        raw = _as_version_4(bytes(raw))
        text = uuid_string(raw)
        if raw not in _RESERVED and not text.startswith("-"):
            return text
    raise ConfigError(f"random_bytes gave no usable member id in {_MAX_DRAWS} draws")
