"""kgroup's own TopicPartition turns into kafka-python's at the drop-in boundary (project issue 10).

kgroup's core uses :class:`kgroup.values.TopicPartition`, equal to and hashing
like ``kafka.structs.TopicPartition`` but a different class.  kafka-python
checks ``isinstance(tp, kafka.structs.TopicPartition)`` (``KafkaConsumer.seek``,
``assign``, ``pause``, ``ConsumerCoordinator.commit_offsets_*``), so every
partition the drop-in hands to kafka-python objects or to the application must
be kafka-python's: the subscription state, listener callbacks, a user
assignor's ``on_assignment``, ``fetch_committed_offsets``/``committed()``.
"""
from __future__ import annotations

import kafka
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition
from kafka_python_harness import RecordingListener, poll_until_stable, subscribed_state

from kgroup.io.kafka_python.offsets import to_commits, to_kafka_offsets
from kgroup.io.kafka_python.partitions import to_kafka_partition, to_kafka_partitions
from kgroup.values import TopicPartition

T0, T1 = KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)


def _all_kafka_python(partitions) -> bool:
    return all(type(tp) is KafkaTopicPartition for tp in partitions)


def test_assignment_reaches_subscription_state_and_listener_as_kafka_python_partitions(make_coordinator):
    listener = RecordingListener()
    c = make_coordinator(subscription=subscribed_state(listener=listener))
    poll_until_stable(c)
    assigned = c._subscription.assigned_partitions()
    assert assigned == {T0, T1} and _all_kafka_python(assigned)
    [(kind, partitions)] = [call for call in listener.calls if call[0] == "assigned"]
    assert partitions == {T0, T1} and _all_kafka_python(partitions)


def test_auto_commit_of_consumed_positions_after_a_rebalance(make_coordinator):
    """kafka-python test_maybe_auto_commit_offsets_sync path: SubscriptionState keys pass its isinstance."""
    c = make_coordinator(enable_auto_commit=True)
    poll_until_stable(c)
    c._subscription.seek(T0, 11)
    c.commit_offsets_sync(c._subscription.all_consumed_offsets())
    assert c.fetch_committed_offsets([T0])[T0].offset == 11


def test_fetch_committed_offsets_keys_are_kafka_python_partitions(make_coordinator):
    """A broker's OffsetFetch answer decodes (kgroup.io.kafka_python.convert) into kgroup's TopicPartition."""
    from kgroup.core import messages as m
    from kgroup.core.error_codes import ErrorCode

    answer = m.OffsetFetchResponse(ErrorCode.NONE, (
        m.PartitionOffset(TopicPartition("t", 0), m.OffsetAndMetadata(5)),
        m.PartitionOffset(TopicPartition("t", 1), None)))
    c = make_coordinator(answers={m.OffsetFetchRequest: lambda request: answer})
    poll_until_stable(c)
    fetched = c.fetch_committed_offsets([T0, T1])
    assert list(fetched) == [T0] and _all_kafka_python(fetched)
    assert fetched[T0].offset == 5


def test_user_assignor_on_assignment_gets_kafka_python_partitions(make_coordinator):
    seen = []

    class SpyRange(RangePartitionAssignor):
        name = "spy-range"

        @classmethod
        def on_assignment(cls, assignment, *args, **kwargs):
            seen.append(list(assignment.partitions()))

    c = make_coordinator(assignors=(SpyRange,))
    poll_until_stable(c)
    assert seen and all(_all_kafka_python(partitions) for partitions in seen)


def test_kgroup_partitions_are_accepted_as_commit_keys():
    """Before kgroup had its own TopicPartition, kgroup's was kafka-python's: commits with it keep working."""
    [commit] = to_commits({TopicPartition("t", 0): KOffsetAndMetadata(3, "", -1)})
    assert commit.topic_partition == T0 and type(commit.topic_partition) is TopicPartition


def test_to_kafka_offsets_keys_are_kafka_python_partitions():
    from kgroup.core import messages as m

    offsets = to_kafka_offsets([m.PartitionOffset(TopicPartition("t", 0), m.OffsetAndMetadata(7))])
    assert offsets == {T0: KOffsetAndMetadata(7, "", -1)} and _all_kafka_python(offsets)


def test_conversion_helpers_keep_kafka_python_partitions_and_convert_kgroups():
    assert to_kafka_partition(T0) is T0
    converted = to_kafka_partition(TopicPartition("t", 1))
    assert converted == T1 and type(converted) is KafkaTopicPartition
    assert to_kafka_partitions([TopicPartition("t", 0), T1]) == [T0, T1]


def test_drop_in_kafka_consumer_accepts_kgroup_partitions(monkeypatch):
    """The drop-in's partition methods convert kgroup's TopicPartition before kafka-python checks it."""
    from kgroup.io.kafka_python.consumer import KafkaConsumer

    received = []
    monkeypatch.setattr(kafka.KafkaConsumer, "seek",
                        lambda self, partition, offset: received.append(partition))
    monkeypatch.setattr(kafka.KafkaConsumer, "assign", lambda self, partitions: received.extend(partitions))
    monkeypatch.setattr(kafka.KafkaConsumer, "pause", lambda self, *partitions: received.extend(partitions))
    consumer = KafkaConsumer.__new__(KafkaConsumer)
    consumer.seek(TopicPartition("t", 0), 4)
    consumer.assign([TopicPartition("t", 1)])
    consumer.pause(TopicPartition("t", 0))
    assert received == [T0, T1, T0] and _all_kafka_python(received)
