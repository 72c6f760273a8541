"""KIP-848 regex subscriptions over real sockets: confluent-kafka with ``group.protocol=consumer``.

librdkafka sends a ``^``-prefixed subscription as ConsumerGroupHeartbeat's SubscribedTopicRegex
(``(^orders-.*)``) and leaves the matching to the coordinator.  A topic created after the consumer
subscribed reaches it in two hops, each bounded by a setting of this test:

* the coordinator resolves the group's regexes again at the first heartbeat at least
  ``consumer_group_regex_refresh_interval_ms`` after the last resolution (heartbeats every
  ``consumer_group_heartbeat_interval_ms``), and that heartbeat's answer assigns the new topic by id;
* librdkafka names the topic id from its metadata, refreshed every ``topic.metadata.refresh.interval.ms``,
  then fetches (a fetch waits at most ``fetch.wait.max.ms``).

So the first record of the new topic is consumed within REGEX_REFRESH + 2 heartbeats + METADATA_REFRESH +
FETCH_WAIT of its creation, plus SCHEDULING_SLACK for a loaded 2-core machine (one refresh of each,
never two).
"""
from __future__ import annotations

import time

import pytest

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode

confluent_kafka = pytest.importorskip("confluent_kafka")

REGEX_REFRESH_MS = 1_000
HEARTBEAT_MS = 200
METADATA_REFRESH_MS = 1_000
FETCH_WAIT_MS = 100
SCHEDULING_SLACK_MS = 1_500
NEW_TOPIC_BOUND_S = (REGEX_REFRESH_MS + 2 * HEARTBEAT_MS + METADATA_REFRESH_MS + FETCH_WAIT_MS
                     + SCHEDULING_SLACK_MS) / 1000
#: The first assignment needs no refresh: a join resolves the regex at once.
JOIN_BOUND_S = 10.0
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0,
                                consumer_group_heartbeat_interval_ms=HEARTBEAT_MS,
                                consumer_group_session_timeout_ms=6_000,
                                consumer_group_regex_refresh_interval_ms=REGEX_REFRESH_MS)


def _consumer(bootstrap: str, group: str):
    return confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": METADATA_REFRESH_MS,
        "fetch.wait.max.ms": FETCH_WAIT_MS,
    })


def _poll_until_assigned(consumer, topics: set, bound_s: float) -> None:
    deadline = time.monotonic() + bound_s
    while {tp.topic for tp in consumer.assignment()} != topics:
        assert time.monotonic() < deadline, (
            f"not assigned {topics} within {bound_s} s: {consumer.assignment()}")
        consumer.poll(0.05)


@pytest.mark.kafka_broker(coordinator=CONFIG, auto_create_topics=False)
def test_confluent_regex_consumer_reads_a_topic_created_after_it_subscribed(kafka_broker):
    kafka_broker.create_topic("orders-eu", 2)
    kafka_broker.create_topic("payments", 1)
    consumer = _consumer(kafka_broker.bootstrap_servers, "regex-group")
    producer = confluent_kafka.Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    try:
        consumer.subscribe(["^orders-.*"])
        _poll_until_assigned(consumer, {"orders-eu"}, JOIN_BOUND_S)
        (member,) = kafka_broker.describe_consumer_group("regex-group").members
        assert member.subscribed_topic_regex == "(^orders-.*)"  # librdkafka's spelling, sent as it is

        kafka_broker.create_topic("orders-us", 1)
        created = time.monotonic()
        producer.produce("orders-us", b"first", partition=0)
        assert producer.flush(JOIN_BOUND_S) == 0
        deadline = created + NEW_TOPIC_BOUND_S
        message = None
        while message is None:
            assert time.monotonic() < deadline, (f"orders-us not consumed within {NEW_TOPIC_BOUND_S} s of "
                                                 f"its creation: {consumer.assignment()}")
            polled = consumer.poll(0.05)
            if polled is not None and polled.error() is None:
                message = polled
        assert (message.topic(), message.value()) == ("orders-us", b"first")
        assert {tp.topic for tp in consumer.assignment()} == {"orders-eu", "orders-us"}
    finally:
        consumer.close()


@pytest.mark.kafka_broker(coordinator=CONFIG, auto_create_topics=False)
def test_a_match_everything_regex_is_assigned_internal_topics_too(kafka_broker):
    """As on Kafka, whose coordinator resolves a regex against every topic of its metadata image
    (recorded: the conformance scenario ``consumer.regex.internal-topic``; franz-go's
    Test848RegexBrokerResolves): ``__consumer_offsets`` (and ``__transaction_state``, which kgroup's
    broker creates at start) match ``^.*`` and are assigned."""
    kafka_broker.create_topic("events", 2)
    every_topic = set(kafka_broker.hosting.cluster.topics)
    assert {"events", "__consumer_offsets"} <= every_topic
    consumer = _consumer(kafka_broker.bootstrap_servers, "everything")
    try:
        consumer.subscribe(["^.*"])
        _poll_until_assigned(consumer, every_topic, JOIN_BOUND_S)
        described = kafka_broker.describe_consumer_group("everything")
        assert described.error_code is ErrorCode.NONE
        assert {tp.topic for m in described.members for tp in m.target_assignment} == every_topic
        group = kafka_broker.hosting.coordinator_for("everything").consumer_group("everything")
        assert {regex: resolved.topics for regex, resolved in group.resolved_regexes.items()} == {
            "(^.*)": every_topic}
    finally:
        consumer.close()


@pytest.mark.kafka_broker(coordinator=CONFIG, auto_create_topics=False)
def test_kgroup_dropin_sends_the_pattern_to_the_coordinator(kafka_broker):
    """kgroup's kafka-python drop-in with ``group_protocol="consumer"``: ``subscribe(pattern=...)`` is
    sent as SubscribedTopicRegex (no client-side matching); a topic created later is consumed within
    the same bound, kafka-python's ``metadata_max_age_ms`` standing for librdkafka's refresh."""
    import kafka

    import kgroup

    kafka_broker.create_topic("orders-eu", 2)
    consumer = kgroup.KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap_servers, group_id="dropin",
                                    group_protocol="consumer", auto_offset_reset="earliest",
                                    metadata_max_age_ms=METADATA_REFRESH_MS, fetch_max_wait_ms=FETCH_WAIT_MS)
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        consumer.subscribe(pattern="^orders-.*")
        deadline = time.monotonic() + JOIN_BOUND_S
        while {tp.topic for tp in consumer.assignment()} != {"orders-eu"}:
            assert time.monotonic() < deadline, (
                f"not assigned within {JOIN_BOUND_S} s: {consumer.assignment()}")
            consumer.poll(50)
        (member,) = kafka_broker.describe_consumer_group("dropin").members
        assert (member.subscribed_topic_regex, member.subscribed_topic_names) == ("^orders-.*", ())

        kafka_broker.create_topic("orders-us", 1)
        created = time.monotonic()
        producer.send("orders-us", b"first", partition=0).get(timeout=JOIN_BOUND_S)
        deadline = created + NEW_TOPIC_BOUND_S
        consumed = []
        while not consumed:
            assert time.monotonic() < deadline, (f"orders-us not consumed within {NEW_TOPIC_BOUND_S} s of "
                                                 f"its creation: {consumer.assignment()}")
            for tp, records in consumer.poll(50).items():
                consumed.extend((tp.topic, r.value) for r in records)
        assert consumed == [("orders-us", b"first")]
    finally:
        consumer.close()
        producer.close()
