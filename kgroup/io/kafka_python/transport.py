"""A :class:`~kgroup.io.transport.Transport` over kafka-python 3.0's network client.

kafka-python 3.0 runs its sockets on an IO thread (``KafkaNetClient`` →
``KafkaConnectionManager`` → ``NetworkSelector``).  This transport hands each
converted request to that thread (``manager.call_soon``, thread-safe), and
the response callbacks, which run on the IO thread, only append to a queue
that :meth:`poll` drains.  So the member driver never touches kafka-python
internals from its own thread, and several transports (a consumer's and a
heartbeat's) can share one client.
"""
from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Optional, Union

from kafka.net.compat import KafkaNetClient

from kgroup.core import consumer_group_messages as cg
from kgroup.core import messages as m
from kgroup.io.kafka_python.consumer_group_convert import (
    TopicIdMap,
    UnknownTopicName,
    heartbeat_request,
    heartbeat_response,
)
from kgroup.io.kafka_python.convert import from_struct, to_struct
from kgroup.io.transport import Completion, NodeId, Transport, TransportError

#: Java's JOIN_GROUP_TIMEOUT_LAPSE: the broker may hold a JoinGroup for the
#: whole rebalance timeout, so the request must outlive it.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000
#: Metadata refreshes a ConsumerGroupHeartbeat answer may wait for to name its assignment's topic ids.
TOPIC_ID_REFRESHES = 3


class KafkaPythonTransport(Transport):
    """Carries kgroup protocol values over a kafka-python ``KafkaNetClient``.

    ``client`` shares an existing client (a ``KafkaConsumer``'s); without it
    the transport builds one from ``configs`` (kafka-python's client
    settings, e.g. ``bootstrap_servers``), starts its IO thread, bootstraps
    within ``bootstrap_timeout_ms`` and closes it in :meth:`close`.
    """

    def __init__(
        self,
        client: Optional[KafkaNetClient] = None,
        *,
        request_timeout_ms: int = 30_000,
        bootstrap_timeout_ms: int = 30_000,
        **configs,
    ) -> None:
        self._owns_client = client is None
        if client is None:
            client = KafkaNetClient(request_timeout_ms=request_timeout_ms, **configs)
        self._client = client
        self._manager = client._manager
        self._net = self._manager._net
        self._request_timeout_ms = request_timeout_ms
        if self._owns_client:
            self._net.start()
            if self._manager.broker_version_data is None:
                self._manager.bootstrap(bootstrap_timeout_ms)
        self._correlation_ids = itertools.count(1)
        self._cond = threading.Condition()
        self._done: deque[Completion] = deque()
        self._woken = False
        self._closed = False
        #: Coordinator node id (as the broker names it) -> kafka-python's
        #: synthesized node id, which gives coordinator traffic its own
        #: connection so a long JoinGroup never queues behind fetches.
        self._coordinator_nodes: dict[int, Union[int, str]] = {}
        cluster = self._manager.cluster
        #: KIP-848 heartbeats name topics by id on the wire, kgroup's member by name.
        self._topic_ids = TopicIdMap(cluster.topic_id, cluster.topic_name_for_id)

    @property
    def client(self) -> KafkaNetClient:
        return self._client

    # -- Transport ------------------------------------------------------------

    def send(self, request: object, node_id: NodeId = None) -> int:
        if self._closed:
            raise TransportError("transport is closed")
        correlation_id = next(self._correlation_ids)
        try:
            struct = self._struct_for(request)
        except UnknownTopicName as exc:
            self._manager.cluster.request_update()
            self._complete(Completion(correlation_id, TransportError(str(exc))))
            return correlation_id
        target = self._coordinator_nodes.get(node_id, node_id) if node_id is not None else None
        try:
            future = self._manager.call_soon(self._send_on_io_thread, struct, target,
                                             self._timeout_for(request))
        except RuntimeError as exc:  # kafka-python's IO loop is closed or crashed
            raise TransportError(f"kafka-python network client unavailable: {exc}") from exc
        future.add_callback(self._on_response, correlation_id, request)
        future.add_errback(self._on_failure, correlation_id)
        return correlation_id

    def poll(self, timeout_ms: int) -> list[Completion]:
        with self._cond:
            if not self._done and not self._woken and timeout_ms > 0:
                self._cond.wait(timeout_ms / 1000)
            self._woken = False
            done = list(self._done)
            self._done.clear()
        return done

    def wakeup(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def close(self) -> None:
        self._closed = True
        self.wakeup()
        if self._owns_client:
            self._client.close()

    def _struct_for(self, request: object):
        if isinstance(request, cg.ConsumerGroupHeartbeatRequest):
            return heartbeat_request(request, self._topic_ids)
        return to_struct(request)

    # -- IO-thread side -------------------------------------------------------

    def _send_on_io_thread(self, struct, target, timeout_ms):
        if target is None:
            # Any live broker answers FindCoordinator; before the first
            # metadata response that is a bootstrap broker.
            target = self._client.least_loaded_node(bootstrap_fallback=True)
        return self._manager.send(struct, node_id=target, request_timeout_ms=timeout_ms)

    def _timeout_for(self, request: object) -> int:
        if isinstance(request, m.JoinGroupRequest):
            return max(self._request_timeout_ms, request.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        return self._request_timeout_ms

    def _on_response(self, correlation_id: int, request: object, struct, refreshes: int = 0) -> None:
        if isinstance(request, cg.ConsumerGroupHeartbeatRequest):
            self._on_heartbeat_response(correlation_id, request, struct, refreshes)
            return
        try:
            value = from_struct(request, struct)
            if (isinstance(request, m.FindCoordinatorRequest) and isinstance(value, m.FindCoordinatorResponse)
                    and not value.error_code.is_error):
                self._remember_coordinator(request, value)
        except Exception as exc:  # a malformed answer must not kill the IO thread
            value = TransportError(f"cannot decode {type(struct).__name__}: {exc!r}")
        self._complete(Completion(correlation_id, value))

    def _on_heartbeat_response(self, correlation_id: int, request: object, struct, refreshes: int) -> None:
        """Name the assignment's topics; an unknown id waits for a metadata refresh (Kafka's member
        requests one too, ``findResolvableAssignmentAndTriggerMetadataUpdate``)."""
        try:
            value, unresolved = heartbeat_response(struct, self._topic_ids)
        except Exception as exc:  # a malformed answer must not kill the IO thread
            error = TransportError(f"cannot decode {type(struct).__name__}: {exc!r}")
            self._complete(Completion(correlation_id, error))
            return
        if not unresolved:
            self._complete(Completion(correlation_id, value))
        elif refreshes >= TOPIC_ID_REFRESHES:
            error = TransportError("ConsumerGroupHeartbeat assigned topic ids no metadata names: "
                                   f"{sorted(map(str, unresolved))}")
            self._complete(Completion(correlation_id, error))
        else:
            refreshed = self._manager.cluster.request_update()
            refreshed.add_both(lambda _: self._on_response(correlation_id, request, struct, refreshes + 1))

    def _on_failure(self, correlation_id: int, exc: BaseException) -> None:
        self._complete(Completion(correlation_id, TransportError(f"{type(exc).__name__}: {exc}")))

    def _remember_coordinator(self, request: m.FindCoordinatorRequest,
                              resp: m.FindCoordinatorResponse) -> None:
        cluster = self._manager.cluster
        synthesized = cluster.add_coordinator(resp, request.key_type, request.key)
        self._coordinator_nodes[resp.node_id] = synthesized

    def _complete(self, completion: Completion) -> None:
        with self._cond:
            self._done.append(completion)
            self._cond.notify_all()
