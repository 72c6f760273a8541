"""A topic's ``max.message.bytes`` (set by CreateTopics) bounds the batches Produce appends to it.

Kafka's ``LogValidator`` refuses a batch over ``LogConfig.maxMessageSize`` (the topic's
``max.message.bytes``, defaulting to the broker's ``message.max.bytes``) with MESSAGE_TOO_LARGE.
kgroup kept no topic configs and checked every topic against the broker's value, so franz-go's
``TestClient_ProduceLargeMessages`` (a 50 KB topic limit) and
``TestIssueFetchLargerThanBrokerMaxReadBytes`` (a 10 MB one) failed on it; the recorded scenarios
``broker.produce.topic-max-message-bytes.*`` hold Kafka 4.4's answers.
"""
from __future__ import annotations

import pytest
from kafka.protocol.admin import CreateTopicsRequest, DeleteTopicsRequest

from kgroup.broker_conformance.builders import one_record_batch
from kgroup.core.error_codes import ErrorCode as E
from tests.server.test_conformance_fixes import produce, produced

_CREATABLE = CreateTopicsRequest.CreatableTopic


@pytest.fixture
def engine(make_engine):
    harness = make_engine(brokers=1)
    harness.advance(harness.config.group_load_time_ms)
    return harness


def create(engine, name: str, validate_only: bool = False, **configs: str) -> E:
    configs_sent = [_CREATABLE.CreatableTopicConfig(version=7, name=k.replace("_", "."), value=v)
                    for k, v in configs.items()]
    topic = _CREATABLE(version=7, name=name, num_partitions=1, replication_factor=1, assignments=[],
                       configs=configs_sent)
    answer = engine.call(CreateTopicsRequest(version=7, timeout_ms=1_000, validate_only=validate_only,
                                             topics=[topic]))
    return answer.topics[0].error_code


def delete(engine, name: str) -> None:
    engine.call(DeleteTopicsRequest(version=5, timeout_ms=1_000, topic_names=[name]))


def code_of_one(engine, topic: str, value_bytes: int) -> E:
    return produced(engine, produce(one_record_batch(value_bytes), topic=topic))[0]


def test_a_topic_limit_below_the_brokers_refuses_a_batch_over_it(engine):
    assert create(engine, "small", max_message_bytes="1000") == E.NONE
    assert code_of_one(engine, "small", 2_000) == E.MESSAGE_TOO_LARGE
    assert code_of_one(engine, "small", 500) == E.NONE


def test_a_topic_limit_above_the_brokers_lets_a_larger_batch_in(engine):
    assert engine.config.max_message_bytes < 1_500_000
    assert create(engine, "large", max_message_bytes="3000000") == E.NONE
    assert create(engine, "plain") == E.NONE
    assert code_of_one(engine, "large", 1_500_000) == E.NONE
    assert code_of_one(engine, "plain", 1_500_000) == E.MESSAGE_TOO_LARGE  # the broker's limit


def test_validate_only_keeps_no_config(engine):
    assert create(engine, "t", validate_only=True, max_message_bytes="1000") == E.NONE
    assert create(engine, "t") == E.NONE
    assert code_of_one(engine, "t", 2_000) == E.NONE


def test_a_topic_made_again_after_deletion_does_not_inherit_the_old_config(engine):
    assert create(engine, "t", max_message_bytes="1000") == E.NONE
    delete(engine, "t")
    assert create(engine, "t") == E.NONE
    assert code_of_one(engine, "t", 2_000) == E.NONE


def test_a_topic_deleted_and_made_again_through_the_cluster_does_not_inherit_it_either(engine):
    assert create(engine, "t", max_message_bytes="1000") == E.NONE
    engine.cluster.delete_topic("t")
    engine.cluster.create_topic("t", 1, 1)
    assert engine.engine.data.topics.topic_configs("t") == {}
    assert code_of_one(engine, "t", 2_000) == E.NONE
