"""``kgroup.KafkaConsumer``: kafka-python's consumer with kgroup's group member.

Same constructor and methods as :class:`kafka.KafkaConsumer`; only the
coordinator differs.  kafka-python 3.0 builds its ``ConsumerCoordinator``
inline in ``__init__`` (no factory config), so this subclass lets the parent
build everything else (network client and IO thread, fetcher, subscription
state), then replaces the stock coordinator - which has not sent anything
yet at that point - with :class:`~kgroup.io.kafka_python.coordinator.ConsumerCoordinator`.
"""
from __future__ import annotations

import kafka
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.util import WeakMethod

from kgroup.errors import KGroupError
from kgroup.io.kafka_python.coordinator import ConsumerCoordinator
from kgroup.io.kafka_python.errors import to_kafka_error
from kgroup.io.kafka_python.strategies import resolve_assignors

__all__ = ["KafkaConsumer"]


class KafkaConsumer(kafka.KafkaConsumer):
    """Drop-in :class:`kafka.KafkaConsumer` whose group membership is kgroup's.

    ``partition_assignment_strategy`` accepts kafka-python assignor classes
    (mapped by name to kgroup's assignors), kgroup assignors and names.
    """

    DEFAULT_CONFIG = dict(kafka.KafkaConsumer.DEFAULT_CONFIG)

    def __init__(self, *topics, **configs):
        strategy = configs.get("partition_assignment_strategy", self.DEFAULT_CONFIG["partition_assignment_strategy"])
        # Fail on a bad strategy before any socket opens (KafkaConfigurationError, as stock).
        try:
            resolve_assignors(strategy)
        except KGroupError as exc:
            raise to_kafka_error(exc).with_traceback(exc.__traceback__) from exc.__cause__
        # The stock coordinator built by the parent only understands
        # kafka-python assignor classes; give it one it accepts, it is
        # discarded below before it does any group work.
        stock_configs = dict(configs, partition_assignment_strategy=(RangePartitionAssignor,))
        super().__init__(*topics, **stock_configs)
        self.config["partition_assignment_strategy"] = strategy
        self._discard_stock_coordinator()
        self._coordinator = ConsumerCoordinator(
            self._client, self._subscription, metrics=self._metrics, assignors=strategy, **self.config
        )

    def _discard_stock_coordinator(self) -> None:
        stock = self._coordinator
        self._cluster.remove_listener(WeakMethod(stock._handle_metadata_update))
        stock._close_heartbeat()
