"""ConsumerProtocol bytes for the member, from :mod:`kgroup.wire.consumer_protocol`.

Imported on first use so the member (and its config validation) loads even
where only part of the library is present.
"""
from __future__ import annotations

from kgroup.values import Assignment, Subscription


def _wire():
    from kgroup.wire import consumer_protocol

    return consumer_protocol


def encode_subscription(subscription: Subscription) -> bytes:
    return _wire().encode_subscription(subscription)


def decode_subscription(data: bytes) -> Subscription:
    return _wire().decode_subscription(data)


def encode_assignment(assignment: Assignment) -> bytes:
    return _wire().encode_assignment(assignment)


def decode_assignment(data: bytes) -> Assignment:
    return _wire().decode_assignment(data)
