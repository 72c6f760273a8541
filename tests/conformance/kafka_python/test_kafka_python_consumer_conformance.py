"""kafka-python 3.0's ``test/consumer/test_consumer.py`` (its group-related tests),
ported to ``kgroup``'s drop-in ``KafkaConsumer``; each test names its source.

The consumer is built with a pinned ``api_version`` against an unreachable
bootstrap address, as the source tests do, so nothing connects.
"""
from __future__ import annotations

import threading

import kafka.errors as Errors
import pytest
from kafka import ConsumerGroupMetadata, TopicPartition

from kgroup.io.kafka_python.consumer import KafkaConsumer

NOWHERE = dict(bootstrap_servers="127.0.0.1:1", api_version=(2, 5, 0), request_timeout_ms=1_000)


def test_session_timeout_different_from_max_poll_timeout_raises():
    """kafka-python test_session_timeout_different_from_max_poll_timeout_raises (an unknown
    setting is a configuration error) - and kgroup starts no thread first."""
    before = set(threading.enumerate())
    with pytest.raises(Errors.KafkaConfigurationError):
        KafkaConsumer(group_id="foo", session_timeout_ms=50_000, max_poll_timeout_ms=40_000, **NOWHERE)
    assert set(threading.enumerate()) == before


def test_heartbeat_not_below_session_timeout_raises():
    """Java ConsumerConfig / AbstractCoordinator: heartbeat.interval.ms must be lower than
    session.timeout.ms; stock kafka-python accepts it, kgroup refuses it at construction."""
    before = set(threading.enumerate())
    with pytest.raises(Errors.KafkaConfigurationError, match="heartbeat_interval_ms"):
        KafkaConsumer(group_id="foo", session_timeout_ms=6_000, heartbeat_interval_ms=6_000, **NOWHERE)
    assert set(threading.enumerate()) == before


def test_subscription_copy():
    """kafka-python test_subscription_copy."""
    consumer = KafkaConsumer("foo", group_id="g", **NOWHERE)
    try:
        sub = consumer.subscription()
        assert sub is not consumer.subscription() and sub == {"foo"}
        sub.add("fizz")
        assert consumer.subscription() == {"foo"}
    finally:
        consumer.close()


def test_assign():
    """kafka-python test_assign: subscribe and assign exclude each other."""
    consumer = KafkaConsumer("foo", group_id="g", **NOWHERE)
    try:
        assert consumer.assignment() == set()
        with pytest.raises(Errors.IllegalStateError):
            consumer.assign([TopicPartition("foo", 0)])
    finally:
        consumer.close()
    consumer = KafkaConsumer(group_id="g", **NOWHERE)
    try:
        consumer.assign([TopicPartition("foo", 0)])
        assert consumer.assignment() == {TopicPartition("foo", 0)}
        with pytest.raises(Errors.IllegalStateError):
            consumer.subscribe(topics=["foo"])
        consumer.assign([])
        assert consumer.assignment() == set()
    finally:
        consumer.close()


def test_context_manager_closes_on_exit():
    """kafka-python test_context_manager_closes_on_exit: and the heartbeat thread stops."""
    with KafkaConsumer(group_id="g", **NOWHERE) as consumer:
        assert consumer._closed is False
        assert any(t.name == "kgroup-heartbeat-g" for t in threading.enumerate())
    assert consumer._closed is True
    assert not any(t.name == "kgroup-heartbeat-g" and t.is_alive() for t in threading.enumerate())


def test_context_manager_suppresses_autocommit_on_exception():
    """kafka-python test_context_manager_suppresses_autocommit_on_exception."""
    consumer = KafkaConsumer(group_id="g", **NOWHERE)
    with pytest.raises(RuntimeError):
        with consumer:
            raise RuntimeError("boom")
    assert consumer._closed is True


def test_group_metadata_without_group_id_returns_empty_snapshot():
    """kafka-python test_group_metadata_without_group_id_returns_empty_snapshot."""
    consumer = KafkaConsumer(**NOWHERE)
    try:
        gm = consumer.group_metadata()
        assert isinstance(gm, ConsumerGroupMetadata)
        assert (gm.group_id, gm.generation_id, gm.member_id) == (None, -1, "")
    finally:
        consumer.close()


def test_group_metadata_with_group_id_delegates_to_coordinator():
    """kafka-python test_group_metadata_with_group_id_delegates_to_coordinator."""
    consumer = KafkaConsumer(group_id="grp", **NOWHERE)
    try:
        gm = consumer.group_metadata()
        assert (gm.group_id, gm.generation_id, gm.member_id) == ("grp", -1, "")
    finally:
        consumer.close()


def test_failure_after_the_parent_started_its_thread_stops_it(monkeypatch):
    """Whatever fails once kafka-python's IO thread runs (here: building kgroup's coordinator),
    the consumer closes its client before the error propagates: no thread is left behind."""
    from kgroup.io.kafka_python import consumer as module

    def broken(*args, **kwargs):
        raise RuntimeError("coordinator construction failed")

    monkeypatch.setattr(module, "ConsumerCoordinator", broken)
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="coordinator construction failed"):
        KafkaConsumer(group_id="g", **NOWHERE)
    assert {t for t in threading.enumerate() if t.is_alive()} == before
