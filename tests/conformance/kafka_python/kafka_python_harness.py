"""kgroup's drop-in ``ConsumerCoordinator`` on a fake kafka-python client whose
transport is kgroup's in-memory group coordinator (no broker, no sockets).

kafka-python's own ``test/consumer/test_coordinator.py`` drives its
coordinator with mocked network responses; these helpers do the same for
kgroup's through public behaviour: a real kafka-python ``SubscriptionState``
and ``ClusterMetadata``, kgroup's ``GroupCoordinator`` as the broker, and a
:class:`ScriptedTransport` that answers chosen requests with given error
codes (converted as the kafka-python transport converts them).
"""
from __future__ import annotations

import time
import types
from typing import Callable, Optional

from kafka import ConsumerRebalanceListener
from kafka.cluster import ClusterMetadata
from kafka.consumer.subscription_state import SubscriptionState

from kgroup.io.inprocess import InProcessTransport
from kgroup.io.transport import Completion

TOPIC = "t"
#: Group timing: fast, yet far from what a loaded 2-core machine could miss.
FAST = dict(session_timeout_ms=3_000, heartbeat_interval_ms=100, max_poll_interval_ms=10_000,
            retry_backoff_ms=20, request_timeout_ms=3_000, enable_auto_commit=False, assignors=("range",))


class ScriptedTransport(InProcessTransport):
    """An in-process transport that answers some requests itself.

    ``answers[request type](request)`` returns the response to hand back, or
    None to let the in-memory coordinator answer.  Every request sent is
    kept in ``sent``.
    """

    def __init__(self, hub, answers: Optional[dict] = None) -> None:
        super().__init__(hub)
        self.answers: dict[type, Callable] = dict(answers or {})
        self.sent: list = []

    def send(self, request, node_id=None) -> int:
        self.sent.append(request)
        answer = self.answers.get(type(request))
        response = answer(request) if answer is not None else None
        if response is None:
            return super().send(request, node_id)
        correlation_id = next(self._correlation)
        with self._cond:
            self._in_flight.add(correlation_id)
        self._deliver(Completion(correlation_id, response))
        return correlation_id


def fake_client(partitions: dict):
    """What the coordinator uses of kafka-python's client: its cluster metadata.

    ``partitions``: topic -> partition count.
    """
    cluster = ClusterMetadata()
    cluster.partitions_for_topic = (
        lambda topic: set(range(partitions[topic])) if topic in partitions else None)
    return types.SimpleNamespace(cluster=cluster, _manager=types.SimpleNamespace(_net=None))


class RecordingListener(ConsumerRebalanceListener):
    """Records every callback with its partitions, in order."""

    def __init__(self, fail_on: Optional[str] = None) -> None:
        self.calls: list[tuple[str, set]] = []
        self.fail_on = fail_on

    def _record(self, kind, partitions):
        self.calls.append((kind, set(partitions)))
        if kind == self.fail_on:
            raise RuntimeError(f"the app failed in {kind}")

    def on_partitions_revoked(self, revoked):
        self._record("revoked", revoked)

    def on_partitions_assigned(self, assigned):
        self._record("assigned", assigned)

    def on_partitions_lost(self, lost):
        self._record("lost", lost)


def subscribed_state(topics=(TOPIC,), listener=None) -> SubscriptionState:
    state = SubscriptionState()
    state.subscribe(topics=list(topics), listener=listener)
    return state


def poll_until(predicate, *coordinators, timeout_s: float = 10.0, what: str = "the condition") -> None:
    """Poll every coordinator until ``predicate()``; fail after ``timeout_s`` (a bound, not a timing)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for coordinator in coordinators:
            coordinator.poll(timeout_ms=20)
        if predicate():
            return
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def poll_until_stable(*coordinators, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all([c.poll(timeout_ms=20) for c in coordinators]):
            return
    raise AssertionError("the group did not settle")
