"""``subscribe(pattern=...)`` on kgroup's own consumer.

With ``group_protocol="consumer"`` the regex is sent as ConsumerGroupHeartbeat's SubscribedTopicRegex and
the coordinator resolves it (Java's ``subscribe(SubscriptionPattern)``, KIP-848): the member holds no
topic list of its own.  With the classic protocol the consumer matches the pattern against the metadata
it is given, as before.  The kafka-python drop-in over real sockets: tests/server/test_kip848_regex.py.
"""
from __future__ import annotations

import time

import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member.consumer import ConsumerProtocolConfig
from kgroup.core.member.consumer.heartbeat_fields import SentFields, build_heartbeat
from kgroup.core.member.consumer.local_assignment import NO_ASSIGNMENT
from kgroup.errors import ConfigError, GroupMemberError
from kgroup.io.group_consumer import GroupConsumer
from kgroup.io.inprocess import InProcessHub
from kgroup.values import TopicPartition

from consumer_member_inprocess_harness import FAST_BROKER, FAST_MEMBER, poll_until

#: The coordinator resolves the regexes again this often (at the next heartbeat, every 100 ms).
REFRESH_MS = 300
CONFIG = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0,
                                consumer_group_heartbeat_interval_ms=100,
                                consumer_group_session_timeout_ms=800,
                                consumer_group_regex_refresh_interval_ms=REFRESH_MS)
#: A new topic is assigned within one refresh plus two heartbeats; the rest is thread scheduling.
NEW_TOPIC_BOUND_S = (REFRESH_MS + 2 * CONFIG.consumer_group_heartbeat_interval_ms) / 1000 + 2.0


def hub_with(topics: dict, config: GroupCoordinatorConfig = CONFIG) -> tuple[InProcessHub, GroupCoordinator]:
    coordinator = GroupCoordinator(config, topic_metadata=topics.get, topic_names=topics.keys)
    return InProcessHub(coordinator), coordinator


def tps(topic: str, count: int) -> set:
    return {TopicPartition(topic, p) for p in range(count)}


def fields(sent: SentFields, *, regex=None, subscription=frozenset(), full=False):
    request = build_heartbeat(ConsumerProtocolConfig(group_id="g"), sent, member_id="m", member_epoch=1,
                              subscription=subscription, regex=regex, assignment=NO_ASSIGNMENT, full=full)
    return request.subscribed_topic_names, request.subscribed_topic_regex


def test_heartbeat_sends_the_regex_and_clears_what_the_member_no_longer_uses():
    """Java's ConsumerHeartbeatRequestManager sends SubscribedTopicRegex instead of the names for a
    SubscriptionPattern, only when it changed; a member that switches clears the other field (an empty
    regex is "none" to Kafka), also in a full heartbeat after a failure (the coordinator may keep it)."""
    sent = SentFields()
    assert fields(sent, regex="^orders-.*", full=True) == (None, "^orders-.*")
    assert fields(sent, regex="^orders-.*") == (None, None)  # unchanged: not sent again
    assert fields(sent, subscription=frozenset({"a"})) == (("a",), "")  # names now: the regex cleared
    assert fields(sent, subscription=frozenset({"a"})) == (None, None)
    sent.reset()  # a failed heartbeat: the next one is full
    assert fields(sent, subscription=frozenset({"a"}), full=True) == (("a",), "")
    assert fields(sent, regex="b.*") == ((), "b.*")  # back to a regex: the names cleared


def test_consumer_protocol_regex_is_resolved_by_the_coordinator_and_follows_new_topics():
    topics = {"orders-1": 2, "payments": 1}
    hub, coordinator = hub_with(topics)
    consumer = GroupConsumer(hub.transport(client_id="c"), "g", group_protocol="consumer", **FAST_MEMBER)
    try:
        consumer.subscribe(pattern="^orders-.*")
        assert consumer.member.subscription == frozenset()  # nothing resolved on the client
        assert consumer.member.subscription_pattern == "^orders-.*"
        poll_until([consumer], lambda: consumer.assignment() == tps("orders-1", 2))
        topics["orders-2"] = 1
        both = tps("orders-1", 2) | tps("orders-2", 1)
        took_s = poll_until([consumer], lambda: consumer.assignment() == both, timeout_s=NEW_TOPIC_BOUND_S)
        assert took_s < NEW_TOPIC_BOUND_S
        # Back to topic names: the regex is dropped on the coordinator (an empty regex).
        consumer.subscribe(["payments"])
        poll_until([consumer], lambda: consumer.assignment() == tps("payments", 1))
        group = coordinator.consumer_group("g")
        assert group is not None and group.resolved_regexes == {}
        assert group.members[consumer.member.member_id].subscribed_topic_regex is None
    finally:
        consumer.close()
        hub.close()


def test_a_regex_the_coordinator_refuses_fails_the_member_with_invalid_regular_expression():
    hub, _ = hub_with({"orders": 1})
    consumer = GroupConsumer(hub.transport(client_id="c"), "g", group_protocol="consumer", **FAST_MEMBER)
    try:
        consumer.subscribe(pattern="(?=orders)")
        deadline = time.monotonic() + 10
        with pytest.raises(GroupMemberError) as failure:
            while time.monotonic() < deadline:
                consumer.poll(20)
        assert failure.value.error_code is ErrorCode.INVALID_REGULAR_EXPRESSION
    finally:
        consumer.close()
        hub.close()


def test_pattern_and_topics_together_and_an_empty_pattern_are_config_errors():
    hub, _ = hub_with({"orders": 1})
    consumer = GroupConsumer(hub.transport(client_id="c"), "g", group_protocol="consumer", **FAST_MEMBER)
    try:
        with pytest.raises(ConfigError):
            consumer.subscribe(["orders"], pattern="o.*")
        with pytest.raises(ConfigError):
            consumer.subscribe(pattern="")
    finally:
        consumer.close()
        hub.close()


def test_classic_protocol_matches_the_pattern_against_the_metadata_on_the_client():
    topics = {"orders-1": 2, "payments": 1, "__consumer_offsets": 50}
    hub, _ = hub_with(topics, FAST_BROKER)
    consumer = GroupConsumer(hub.transport(client_id="c"), "g", group_protocol="classic",
                             partitions_per_topic=topics, **FAST_MEMBER)
    try:
        consumer.subscribe(pattern="orders-.*|__.*")
        assert consumer.member.subscription == {"orders-1"}  # internal topics excluded, whole names
        consumer.update_metadata({**topics, "orders-2": 1})
        assert consumer.member.subscription == {"orders-1", "orders-2"}
        poll_until([consumer], lambda: consumer.assignment() == tps("orders-1", 2) | tps("orders-2", 1))
    finally:
        consumer.close()
        hub.close()
