"""Applying kgroup's partition changes to kafka-python's ``SubscriptionState``.

Runs on the polling thread only (inside ``KafkaConsumer.poll`` / ``close``),
so the application's rebalance listener never runs on the heartbeat or IO
thread.  State first, listener second for assignments; listener first, state
second for revocations (the app may still commit while it owns them) - the
order kafka-python and Java use.  A listener exception is kept and returned,
so the caller can raise it after protocol state is consistent.

Partitions arrive as kgroup's ``TopicPartition`` and leave as kafka-python's:
``SubscriptionState`` and the application's listener check that class.
"""
from __future__ import annotations

import inspect
import logging
from typing import Iterable, Optional

from kgroup.io.kafka_python.partitions import to_kafka_partitions

log = logging.getLogger(__name__)


class SubscriptionBridge:
    def __init__(self, subscription, net) -> None:
        self._subscription = subscription
        # Async listeners (kafka-python's AsyncConsumerRebalanceListener) are
        # awaited on kafka-python's IO loop, where they may await the
        # consumer's async APIs; the polling thread blocks until they finish.
        self._net = net

    def owned(self) -> set:
        return set(self._subscription.assigned_partitions())

    def revoke(self, partitions: Iterable, lost: bool = False) -> Optional[BaseException]:
        """The member gives up ``partitions``: tell the app, then drop them."""
        partitions = set(to_kafka_partitions(partitions)) & self.owned()
        if not partitions:
            return None
        self._subscription.mark_pending_revocation(partitions)
        error = self._invoke("on_partitions_lost" if lost else "on_partitions_revoked", partitions)
        self._subscription.assign_from_subscribed(sorted(self.owned() - partitions))
        return error

    def assign(self, partitions: Iterable, notify_empty: bool = False,
               report_all: bool = False, adopt_topics: bool = False) -> Optional[BaseException]:
        """The member now owns exactly ``partitions``: apply, then tell the app
        about the ones it did not own before (``report_all``: about all of
        them, as eager rebalances do).  ``notify_empty``: call the listener
        even when that is no partition (a completed rebalance, Java's
        ``onPartitionsAssigned`` contract)."""
        # A partition of a topic the app unsubscribed meanwhile is dropped:
        # kafka-python refuses it, and the member rejoins for the new topics.
        subscribed = self._subscription.subscription or set()
        partitions = set(to_kafka_partitions(partitions))
        if adopt_topics and not {tp.topic for tp in partitions} <= subscribed:
            # KIP-848 regex: the coordinator chose the topics; kafka-python's subscription (which
            # its fetcher and assign_from_subscribed check) takes them on.
            self._subscription.change_subscription(sorted(subscribed | {tp.topic for tp in partitions}))
            subscribed = self._subscription.subscription
        partitions = {tp for tp in partitions if tp.topic in subscribed}
        added = partitions if report_all else partitions - self.owned()
        self._subscription.assign_from_subscribed(sorted(partitions))
        if not added and not notify_empty:
            return None
        return self._invoke("on_partitions_assigned", added)

    def revoke_nothing(self) -> Optional[BaseException]:
        """An eager rebalance with nothing owned: ``on_partitions_revoked(set())``, as stock calls it."""
        return self._invoke("on_partitions_revoked", set())

    def _invoke(self, method: str, partitions: set) -> Optional[BaseException]:
        listener = self._subscription.rebalance_listener
        if listener is None:
            return None
        callback = getattr(listener, method)
        try:
            if inspect.iscoroutinefunction(callback):
                self._net.run(callback, set(partitions))
            else:
                callback(set(partitions))
        except Exception as exc:
            log.exception("rebalance listener %s.%s failed", type(listener).__name__, method)
            return exc
        return None
