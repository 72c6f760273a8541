"""``kgroup.KafkaConsumer``: kafka-python's consumer with kgroup's group member.

Same constructor and methods as :class:`kafka.KafkaConsumer`; only the
coordinator differs.  kafka-python 3.0 builds its ``ConsumerCoordinator``
inline in ``__init__`` (no factory config), so this subclass lets the parent
build everything else (network client and IO thread, fetcher, subscription
state), then replaces the stock coordinator - which has not sent anything
yet at that point - with :class:`~kgroup.io.kafka_python.coordinator.ConsumerCoordinator`.

The group settings are checked first, before the parent starts any thread
or opens any socket, so a rejected configuration leaves nothing running.

``group_protocol="consumer"`` (Java's ``group.protocol``) makes the member speak
KIP-848's ConsumerGroupHeartbeat, with ``group_remote_assignor`` (Java's
``group.remote.assignor``) naming the server-side assignor; setting
``session_timeout_ms``, ``heartbeat_interval_ms`` or
``partition_assignment_strategy`` with it is a ``KafkaConfigurationError``, as
Kafka's ``ConsumerConfig`` rejects them (KAFKA-17338).
"""
from __future__ import annotations

import kafka
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.util import WeakMethod

from kgroup.core.member.consumer import CONSUMER, check_group_protocol_settings
from kgroup.errors import KGroupError
from kgroup.io.kafka_python import errors as kerr
from kgroup.io.kafka_python.coordinator import (
    ConsumerCoordinator,
    consumer_protocol_config,
    member_config,
)
from kgroup.io.kafka_python.errors import to_kafka_error
from kgroup.io.kafka_python.partitions import to_kafka_partition, to_kafka_partitions, with_kafka_keys
from kgroup.io.kafka_python.strategies import resolve_assignors

__all__ = ["KafkaConsumer"]

#: kafka-python's names for the settings kgroup's member takes.
_GROUP_SETTINGS = ("group_id", "session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                   "retry_backoff_ms", "group_instance_id", "client_id", "enable_auto_commit",
                   "auto_commit_interval_ms")


class KafkaConsumer(kafka.KafkaConsumer):
    """Drop-in :class:`kafka.KafkaConsumer` whose group membership is kgroup's.

    ``partition_assignment_strategy`` accepts kafka-python assignor classes
    and instances (kafka-python's own are mapped by name to kgroup's
    assignors, an application's own run as they are), kgroup assignors and
    names.
    """

    DEFAULT_CONFIG = dict(kafka.KafkaConsumer.DEFAULT_CONFIG, group_protocol="classic",
                          group_remote_assignor=None)

    def __init__(self, *topics, **configs):
        strategy = configs.get("partition_assignment_strategy",
                               self.DEFAULT_CONFIG["partition_assignment_strategy"])
        # Fail on bad settings before any thread or socket exists (KafkaConfigurationError, as stock).
        try:
            self._check_group_settings(strategy, configs)
        except KGroupError as exc:
            raise to_kafka_error(exc).with_traceback(exc.__traceback__) from exc.__cause__
        # The stock coordinator built by the parent only understands
        # kafka-python assignor classes; give it one it accepts, it is
        # discarded below before it does any group work.
        stock_configs = dict(configs, partition_assignment_strategy=(RangePartitionAssignor,))
        super().__init__(*topics, **stock_configs)
        try:
            self.config["partition_assignment_strategy"] = strategy
            self._discard_stock_coordinator()
            self._coordinator = ConsumerCoordinator(
                self._client, self._subscription, metrics=self._metrics, assignors=strategy, **self.config
            )
        except BaseException:
            self._close_after_failed_construction()
            raise

    def _check_group_settings(self, strategy, configs: dict) -> None:
        remote_assignor = configs.get("group_remote_assignor")
        protocol = check_group_protocol_settings(configs.get("group_protocol", "classic"), configs,
                                                 remote_assignor)
        assignors = None if protocol == CONSUMER else resolve_assignors(strategy)
        settings = {name: configs.get(name, self.DEFAULT_CONFIG[name]) for name in _GROUP_SETTINGS}
        if settings["group_id"] is None:
            return
        if assignors is None:
            consumer_protocol_config(dict(settings, group_remote_assignor=remote_assignor))
        else:
            member_config(dict(settings, assignors=assignors))

    def _discard_stock_coordinator(self) -> None:
        stock = self._coordinator
        self._cluster.remove_listener(WeakMethod(stock._handle_metadata_update))
        stock._close_heartbeat()

    def _close_after_failed_construction(self) -> None:
        # Stop the parent's IO thread; nothing of the group was started.
        self._closed = True
        if self._metrics:
            self._metrics.close()
        self._client.close()

    # -- calls after close raise, as poll() does in stock --------------------

    def _check_not_closed(self) -> None:
        if self._closed:
            raise kerr.MemberClosedError("KafkaConsumer is closed")

    def commit(self, offsets=None, timeout_ms=None):
        self._check_not_closed()
        return super().commit(_kafka_keys(offsets), timeout_ms=timeout_ms)

    def commit_async(self, offsets=None, callback=None):
        self._check_not_closed()
        return super().commit_async(_kafka_keys(offsets), callback=callback)

    def committed(self, partition, metadata=False, timeout_ms=None):
        self._check_not_closed()
        return super().committed(to_kafka_partition(partition), metadata=metadata, timeout_ms=timeout_ms)

    # -- kgroup's TopicPartition accepted where kafka-python checks for its own ----
    # kgroup.TopicPartition (what GroupConsumer and the assignors hand out) equals and hashes like
    # kafka.structs.TopicPartition but is another class; stock methods assert isinstance, so convert.

    def assign(self, partitions):
        return super().assign(to_kafka_partitions(partitions))

    def position(self, partition, timeout_ms=None):
        return super().position(to_kafka_partition(partition), timeout_ms=timeout_ms)

    def highwater(self, partition):
        return super().highwater(to_kafka_partition(partition))

    def pause(self, *partitions):
        return super().pause(*to_kafka_partitions(partitions))

    def resume(self, *partitions):
        return super().resume(*to_kafka_partitions(partitions))

    def seek(self, partition, offset):
        return super().seek(to_kafka_partition(partition), offset)

    def seek_to_beginning(self, *partitions):
        return super().seek_to_beginning(*to_kafka_partitions(partitions))

    def seek_to_end(self, *partitions):
        return super().seek_to_end(*to_kafka_partitions(partitions))

    def offsets_for_times(self, timestamps, timeout_ms=None):
        return super().offsets_for_times(_kafka_keys(timestamps), timeout_ms=timeout_ms)

    def beginning_offsets(self, partitions, timeout_ms=None):
        return super().beginning_offsets(to_kafka_partitions(partitions), timeout_ms=timeout_ms)

    def end_offsets(self, partitions, timeout_ms=None):
        return super().end_offsets(to_kafka_partitions(partitions), timeout_ms=timeout_ms)


def _kafka_keys(offsets):
    """A partition-keyed dict with kafka-python's TopicPartition keys (None and other values as they are)."""
    if isinstance(offsets, dict):
        return with_kafka_keys(offsets)
    return offsets
