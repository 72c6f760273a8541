"""In-process transport: several members share one in-memory coordinator, no broker.

A :class:`InProcessHub` owns the coordinator behind one lock, routes each
delivery back to the transport that sent the request, and runs the
coordinator's timers (from its own thread on a real clock; on a MockClock it is
a timed component, ``get_timer()`` / ``handle_timer(now_ms)``, that the test
scheduler drives).  The coordinator-facing side is the broker seam
:class:`kgroup.core.broker.BrokerBackend` (send with a request context /
get_timer / handle_timer): a standalone coordinator, or the in-memory
cluster's coordinators (:class:`kgroup.core.cluster.group_hosting.GroupHosting`).
Every request travels with its :class:`~kgroup.core.broker.RequestContext`:
the transport's client id and host, and the request's own header data where
it states them (JoinGroup).

A single-threaded driver (the simulator: a MockClock, no timer thread, every call from one thread)
may call :meth:`InProcessHub.drive_single_threaded`: the hub and its transports then skip their
locks and condition variables, which only serve real threads (issue 28: a request's way through
them was a measurable share of a simulated request).
"""
from __future__ import annotations

import itertools
import logging
import threading
from typing import Callable, Optional, TypeVar

from kgroup.core import messages as m
from kgroup.core.broker import (DEFAULT_CLIENT_HOST, DEFAULT_CLIENT_ID, BrokerBackend, BrokerUnreachable,
                                RequestContext)
from kgroup.core.coordinator.standalone import StandaloneCoordinator
from kgroup.core.error_codes import ErrorCode
from kgroup.errors import ConfigError
from kgroup.io.clock import Clock, monotonic_ms, wait_until_ms
from kgroup.io.transport import Completion, NodeId, Transport, TransportError

_T = TypeVar("_T")

log = logging.getLogger(__name__)


#: The broker seam's old name here; it lives in kgroup.core.broker now.
Backend = BrokerBackend

__all__ = ["Backend", "InProcessHub", "InProcessTransport", "StandaloneCoordinator"]


class InProcessHub:
    """One lock around the backend; deliveries go to the transport that asked."""

    def __init__(self, backend, clock: Optional[Clock] = None, run_timers: Optional[bool] = None) -> None:
        if not hasattr(backend, "send"):
            backend = StandaloneCoordinator(backend)
        self.backend = backend
        self.clock = clock or monotonic_ms
        self._lock = threading.Lock()
        self._timer_wake = threading.Condition(self._lock)
        self._stopped = False
        self._transport_ids = itertools.count(1)
        self._transports: dict[int, "InProcessTransport"] = {}
        self._thread: Optional[threading.Thread] = None
        #: Bumped by every call that may change the backend or route a delivery (send, handle_timer,
        #: apply, query): a single-threaded driver caches what it read from the backend until this moves.
        self.changes = 0
        #: Keep the backend's deadline until ``changes`` moves: only for a single-threaded driver that
        #: reaches the backend through this hub alone (send, handle_timer, apply, query: nothing else
        #: can move a deadline, so asking the cluster and every coordinator at each instant is wasted).
        self.cache_timer = False
        self._timer_seen = -1
        self._timer: Optional[int] = None
        #: Set by :meth:`drive_single_threaded`: no lock, no condition variable, no notify.
        self.single_threaded = False
        if run_timers if run_timers is not None else clock is None:
            self._thread = threading.Thread(target=self._run_timers, name="kgroup-inprocess-timers",
                                            daemon=True)
            self._thread.start()

    def drive_single_threaded(self) -> None:
        """Promise that one thread makes every call from now on (a MockClock driver such as the
        simulator): sends, timers and deliveries skip the locks that serve real threads.  Refused on a
        hub whose own thread fires the timers."""
        if self._thread is not None:
            raise ConfigError("a hub that runs its timers on its own thread is not single-threaded")
        self.single_threaded = True

    def transport(self, client_id: str = DEFAULT_CLIENT_ID,
                  client_host: str = DEFAULT_CLIENT_HOST) -> "InProcessTransport":
        return InProcessTransport(self, client_id=client_id, client_host=client_host)

    def _register(self, transport: "InProcessTransport") -> int:
        with self._lock:
            tid = next(self._transport_ids)
            self._transports[tid] = transport
            return tid

    def _unregister(self, tid: int) -> None:
        with self._lock:
            self._transports.pop(tid, None)

    def send(self, tid: int, correlation_id: int, request: object, node_id: NodeId,
             context: Optional[RequestContext] = None) -> None:
        if context is None:
            context = RequestContext.of(request)
        if self.single_threaded:
            self._send(tid, correlation_id, request, node_id, context)
            return
        with self._lock:
            self._send(tid, correlation_id, request, node_id, context)
            self._timer_wake.notify()  # the coordinator's next deadline may have moved

    def _send(self, tid: int, correlation_id: int, request: object, node_id: NodeId,
              context: RequestContext) -> None:
        self.changes += 1
        try:
            deliveries = self.backend.send(node_id, (tid, correlation_id), request, self.clock(),
                                           context=context)
        except Exception:
            # One bad request must not take down the hub that serves every other group: like
            # a Kafka broker, answer it UNKNOWN_SERVER_ERROR and carry on.
            log.exception("in-process backend failed on %s", type(request).__name__)
            response = m.error_response(request, ErrorCode.UNKNOWN_SERVER_ERROR)
            if response is None:
                response = TransportError(f"backend failed on {type(request).__name__}")
            deliveries = [((tid, correlation_id), response)]
        self._route(deliveries)

    def get_timer(self) -> Optional[int]:
        """The backend's next deadline (a MockClock driver's question; the real clock's thread asks
        the backend itself)."""
        if not self.cache_timer:
            return self.backend.get_timer()
        if self.changes != self._timer_seen:
            self._timer = self.backend.get_timer()
            self._timer_seen = self.changes
        return self._timer

    def due(self, now_ms: int) -> bool:
        """Whether :meth:`handle_timer` would do anything at ``now_ms`` (the event scheduler's hint)."""
        deadline = self.get_timer()
        return deadline is not None and deadline <= now_ms

    def handle_timer(self, now_ms: int) -> None:
        """Do what the backend has due at ``now_ms`` and route what it answers."""
        if self.single_threaded:
            self.changes += 1
            self._route(self.backend.handle_timer(now_ms))
            return
        with self._lock:
            self.changes += 1
            self._route(self.backend.handle_timer(now_ms))

    def apply(self, action: Callable[[int], list]) -> None:
        """Run ``action(now_ms)`` on the backend under the hub's lock and route what it answers.

        Fault injection goes through here: a failover answers parked requests.
        """
        with self._lock:
            self.changes += 1
            self._route(action(self.clock()))
            self._timer_wake.notify()

    def query(self, read: Callable[[int], _T]) -> _T:
        """``read(now_ms)`` under the hub's lock, for inspecting the backend from a test thread."""
        with self._lock:
            self.changes += 1  # a read by contract, but nothing stops it from changing the backend
            return read(self.clock())

    def _route(self, deliveries: list) -> None:
        for delivery in deliveries:
            # Backends answer Delivery values or (request_key, response) pairs.
            if hasattr(delivery, "request_key"):
                (tid, correlation_id), response = delivery.request_key, delivery.response
            else:
                (tid, correlation_id), response = delivery
            transport = self._transports.get(tid)
            if transport is None:
                continue
            if isinstance(response, BrokerUnreachable):
                response = TransportError(f"broker {response.node_id} is unreachable")
            transport._deliver(Completion(correlation_id, response))

    def _run_timers(self) -> None:
        with self._lock:
            while not self._stopped:
                try:
                    self._route(self.backend.handle_timer(self.clock()))
                except Exception:
                    # This thread fires the timers of every group the hub hosts: log and keep going.
                    log.exception("in-process backend failed while firing timers")
                wait_ms = wait_until_ms(self.backend.get_timer(), self.clock(), 1000)
                self._timer_wake.wait(wait_ms / 1000)

    def close(self, timeout_s: float = 2.0) -> None:
        with self._lock:
            self._stopped = True
            self._timer_wake.notify()
        if self._thread is not None:
            self._thread.join(timeout_s)


class InProcessTransport(Transport):
    """A Transport to an :class:`InProcessHub` (or to a coordinator, with a private hub).

    ``client_id`` and ``client_host`` are the request header data of every
    request it sends (a JoinGroupRequest states its own).
    """

    def __init__(self, hub_or_coordinator, clock: Optional[Clock] = None, *,
                 client_id: str = DEFAULT_CLIENT_ID, client_host: str = DEFAULT_CLIENT_HOST) -> None:
        # Checked here so a bad value fails when the transport is built, not on its first send.
        RequestContext(client_id, client_host)
        self.client_id = client_id
        self.client_host = client_host
        self._owns_hub = not isinstance(hub_or_coordinator, InProcessHub)
        if self._owns_hub:
            hub_or_coordinator = InProcessHub(hub_or_coordinator, clock)
        self.hub = hub_or_coordinator
        self._inbox: list[Completion] = []
        self._cond = threading.Condition()
        self._woken = False
        self._correlation = itertools.count(1)
        self._in_flight: set[int] = set()
        self._isolated = False
        #: The context of every request but a JoinGroup (which states its own): one frozen value.
        self._context = RequestContext(client_id, client_host)
        self._tid = self.hub._register(self)

    def send(self, request: object, node_id: NodeId = None) -> int:
        correlation_id = next(self._correlation)
        if self.hub.single_threaded:
            # No other thread: no condition variable (InProcessHub.drive_single_threaded).
            self._in_flight.add(correlation_id)
            if self._isolated:
                self._deliver(Completion(correlation_id,
                                         TransportError("network partition: client is isolated")))
            else:
                context = (self._context if not isinstance(request, m.JoinGroupRequest)
                           else RequestContext.of(request, self.client_id, self.client_host))
                self.hub.send(self._tid, correlation_id, request, node_id, context)
            return correlation_id
        with self._cond:
            self._in_flight.add(correlation_id)
            isolated = self._isolated
        if isolated:
            self._deliver(Completion(correlation_id, TransportError("network partition: client is isolated")))
        else:
            context = RequestContext.of(request, self.client_id, self.client_host)
            self.hub.send(self._tid, correlation_id, request, node_id, context)
        return correlation_id

    def _deliver(self, completion: Completion) -> None:
        if self.hub.single_threaded:
            if completion.correlation_id in self._in_flight:  # else failed by an isolation: lost
                self._in_flight.discard(completion.correlation_id)
                self._inbox.append(completion)
            return
        with self._cond:
            if completion.correlation_id not in self._in_flight:
                return  # already failed by an isolation: the answer is lost with the connection
            self._in_flight.discard(completion.correlation_id)
            self._inbox.append(completion)
            self._cond.notify_all()

    def isolate(self) -> None:
        """Cut this client off the cluster: in-flight requests fail, new ones fail at once."""
        with self._cond:
            self._isolated = True
            failed = sorted(self._in_flight)
            self._in_flight.clear()
            self._inbox.extend(Completion(cid, TransportError("network partition: client is isolated"))
                               for cid in failed)
            self._cond.notify_all()

    def heal(self) -> None:
        with self._cond:
            self._isolated = False

    def has_completions(self) -> bool:
        """Whether ``poll`` would return something now (a hint without the lock; single-threaded
        drivers such as the simulator skip an idle transport with it)."""
        return bool(self._inbox)

    def poll(self, timeout_ms: int) -> list[Completion]:
        if self.hub.single_threaded:
            # Nothing can arrive while this thread waits: never wait.
            self._woken = False
            out, self._inbox = self._inbox, []
            return out
        with self._cond:
            if not self._inbox and not self._woken and timeout_ms > 0:
                self._cond.wait(timeout_ms / 1000)
            self._woken = False
            out, self._inbox = self._inbox, []
            return out

    def wakeup(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def close(self) -> None:
        self.hub._unregister(self._tid)
        if self._owns_hub:
            self.hub.close()
