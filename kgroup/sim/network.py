"""A sans-I/O network between every member and every broker.

Each member talks through a :class:`SimTransport`, a
:class:`~kgroup.io.transport.Transport` that sits in front of the member's
:class:`~kgroup.io.inprocess.InProcessTransport` (which reaches
:class:`~kgroup.core.cluster.group_hosting.GroupHosting` through the hub, the
broker seam).  A request travels to its broker after the link's latency plus
jitter; its answer travels back the same way.  Per link (member, broker):

- a **partition** one way (``m0>b1``: requests never arrive; ``b1>m0``: the
  broker acts on the request but its answer never comes back) or both ways;
- a **lossy** link drops each message with a probability;
- a **reset** fails every request in flight on the link at once.

A lost message is noticed as a failed connection ``detect_ms`` later (TCP does
not lose messages silently; a client sees its connection die), so the member
retries as it would after a disconnect.  A zombie broker (isolated from the
controller, still believing it leads) is the cluster's own ``isolate_broker``.

The network is a timed component of the :class:`~kgroup.testing.scheduler.Scheduler`:
``handle_timer(now_ms)`` forwards due requests and collects answers; its randomness is
its own stream (``Random("network-<seed>")``).
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Callable, Dict, List, Optional, Protocol, Tuple

import attrs

from kgroup.io.inprocess import InProcessHub, InProcessTransport
from kgroup.io.transport import Completion, NodeId, Transport, TransportError

__all__ = ["SimNetwork", "NetworkConfig", "SimTransport", "TransportObserver"]

#: Requests sent without a node (bootstrap: FindCoordinator) use this broker key.
ANY_BROKER = 0


class TransportObserver(Protocol):
    """Sees each request a member sends and the answer (or TransportError) it gets back.

    ``handled_ms`` is when a broker took the request (the in-process cluster handles it then), -1 if it
    never reached one: answers can reach a member long after (a frozen member reads them when it
    thaws), so only this orders what the coordinator did."""

    def on_send(self, request: object, now_ms: int) -> None: ...
    def on_complete(self, request: object, result: object, now_ms: int, handled_ms: int) -> None: ...


@attrs.frozen
class NetworkConfig:
    latency_ms: int = 1
    jitter_ms: int = 3
    #: How long after a lost message the client sees its connection fail.
    detect_ms: int = 200


@attrs.define
class _Link:
    """What is wrong with one (member, broker) link; ``-1`` broker means every broker."""

    to_broker_cut: int = 0
    to_member_cut: int = 0
    drop_percent: int = 0


#: A link without a partition or loss.
_WHOLE = (False, False, 0)


class SimNetwork:
    def __init__(self, seed: int, config: NetworkConfig = NetworkConfig()) -> None:
        self.config = config
        self.rng = random.Random(f"network-{seed}")
        self.transports: Dict[str, "SimTransport"] = {}
        self._links: Dict[Tuple[str, int], _Link] = {}
        self.messages_dropped = 0
        # What the scheduler asks at every instant, kept between changes: the earliest message due
        # either way and the earliest request due at a broker (recomputed once a transport's queues
        # changed), and whether a broker's answer may be waiting in a transport's in-process inbox
        # (the hub routed something since the last forward, or one was left after it).
        self._stale = True
        self._next_deadline: Optional[int] = None
        self._next_outgoing: Optional[int] = None
        self._hub: Optional[InProcessHub] = None
        self._hub_changes_seen = -1
        self._inbox_waiting = False

    # -- links ----------------------------------------------------------------------------------

    def link(self, member: str, broker: int) -> _Link:
        return self._links.setdefault((member, broker), _Link())

    def _state(self, member: str, broker: int) -> Tuple[bool, bool, int]:
        """(requests cut, answers cut, drop percentage) of the member's link to ``broker``."""
        own = self._links.get((member, broker))
        every = self._links.get((member, -1))
        if own is None and every is None:
            return _WHOLE  # the common case: no fault on this link
        links = [x for x in (own, every) if x is not None]
        return (any(x.to_broker_cut for x in links), any(x.to_member_cut for x in links),
                max((x.drop_percent for x in links), default=0))

    def requests_cut(self, member: str, broker: int) -> bool:
        """Whether the member's requests to ``broker`` are cut off (a partition that way)."""
        return bool(self._links) and self._state(member, broker)[0]

    def cut(self, member: str, broker: int, to_broker: bool, to_member: bool, delta: int) -> None:
        """Add (``delta`` 1) or remove (-1) a partition; overlapping partitions count."""
        link = self.link(member, broker)
        if to_broker:
            link.to_broker_cut += delta
        if to_member:
            link.to_member_cut += delta

    def set_drop(self, member: str, broker: int, percent: int) -> None:
        self.link(member, broker).drop_percent = percent

    def reset(self, member: str, broker: int, now_ms: int) -> None:
        transport = self.transports.get(member)
        if transport is not None:
            transport.reset(broker, now_ms)

    def heal_all(self) -> None:
        self._links.clear()

    # -- transports -----------------------------------------------------------------------------

    def transport(self, member: str, inner: InProcessTransport, clock: Callable[[], int],
                  broker_of: Callable[[NodeId], int],
                  observer: Optional["TransportObserver"] = None) -> "SimTransport":
        transport = SimTransport(self, member, inner, clock, broker_of, observer)
        self.transports[member] = transport
        self._hub = inner.hub
        self._stale = True
        return transport

    def latency(self) -> int:
        jitter = self.config.jitter_ms
        return self.config.latency_ms + (self.rng.randint(0, jitter) if jitter else 0)

    def lost(self, percent: int) -> bool:
        if percent and self.rng.randrange(100) < percent:
            self.messages_dropped += 1
            return True
        return False

    # -- the scheduler's timed component -----------------------------------------------------------

    def _recompute(self) -> None:
        best: Optional[int] = None
        outgoing: Optional[int] = None
        for transport in self.transports.values():
            if transport.closed:
                continue
            if transport._outgoing:
                due = transport._outgoing[0][0]
                if outgoing is None or due < outgoing:
                    outgoing = due
                if best is None or due < best:
                    best = due
            if transport._incoming:
                due = transport._incoming[0][0]
                if best is None or due < best:
                    best = due
        self._next_deadline, self._next_outgoing = best, outgoing
        self._stale = False

    def get_timer(self) -> Optional[int]:
        if self._stale:
            self._recompute()
        return self._next_deadline

    def due(self, now_ms: int) -> bool:
        """Whether :meth:`handle_timer` would move anything now: a request due at its broker, or an answer in
        a transport's in-process inbox (the event scheduler fires the network only then)."""
        if self._inbox_waiting or (self._hub is not None and self._hub.changes != self._hub_changes_seen):
            return True
        if self._stale:
            self._recompute()
        return self._next_outgoing is not None and self._next_outgoing <= now_ms

    def handle_timer(self, now_ms: int) -> None:
        for transport in list(self.transports.values()):
            transport.forward(now_ms)
        # A forward may have had the hub answer a transport forwarded before it: that answer waits
        # in its inbox for the next instant, as before.
        self._inbox_waiting = any(t.inner.has_completions() for t in self.transports.values() if not t.closed)
        if self._hub is not None:
            self._hub_changes_seen = self._hub.changes


class SimTransport(Transport):
    """One member's connections, through the :class:`SimNetwork`, to the in-process cluster."""

    def __init__(self, network: SimNetwork, member: str, inner: InProcessTransport, clock: Callable[[], int],
                 broker_of: Callable[[NodeId], int], observer: Optional["TransportObserver"] = None) -> None:
        self.network = network
        self.observer = observer
        self._requests: Dict[int, object] = {}
        #: correlation id -> when a broker took the request (kept only for the observer).
        self._handled_ms: Dict[int, int] = {}
        self.member = member
        self.inner = inner
        self.clock = clock
        self.broker_of = broker_of
        self._ids = itertools.count(1)
        self._order = itertools.count()
        #: (due, order, correlation id, request, node) on their way to a broker.
        self._outgoing: List[Tuple[int, int, int, object, NodeId]] = []
        #: (due, order, completion) on their way back.
        self._incoming: List[Tuple[int, int, Completion]] = []
        #: inner correlation id -> (our correlation id, broker key) for requests a broker has.
        self._at_broker: Dict[int, Tuple[int, int]] = {}
        #: Per broker key, when the last request sent on that link arrives: a link is one TCP
        #: connection, so jitter delays a request but never lets it overtake an earlier one (Kafka
        #: also processes one connection's requests in order).
        self._last_arrival_ms: Dict[int, int] = {}
        self._last_answer_ms: Dict[int, int] = {}
        self.closed = False
        #: Told the time of every message put on the way back (the event scheduler wakes the member
        #: then); None: nobody listens.
        self.on_completion_scheduled: Optional[Callable[[int], None]] = None

    def _broker_key(self, node_id: NodeId) -> int:
        return ANY_BROKER if node_id is None else node_id

    def send(self, request: object, node_id: NodeId = None) -> int:
        now = self.clock()
        correlation_id = next(self._ids)
        requests_cut, _answers_cut, drop = self.network._state(self.member, self.broker_of(node_id))
        if requests_cut or self.network.lost(drop):
            self._fail(correlation_id, now + self.network.config.detect_ms, "lost on the way to the broker")
        else:
            link = self.broker_of(node_id)
            arrival_ms = max(now + self.network.latency(), self._last_arrival_ms.get(link, now))
            self._last_arrival_ms[link] = arrival_ms
            heapq.heappush(self._outgoing, (arrival_ms, next(self._order), correlation_id, request, node_id))
            self.network._stale = True
        if self.observer is not None:
            self._requests[correlation_id] = request
            self.observer.on_send(request, now)
        return correlation_id

    def _fail(self, correlation_id: int, due_ms: int, why: str) -> None:
        completion = Completion(correlation_id, TransportError(f"network: {why}"))
        self._schedule_completion(due_ms, completion)

    def _schedule_completion(self, due_ms: int, completion: Completion) -> None:
        heapq.heappush(self._incoming, (due_ms, next(self._order), completion))
        self.network._stale = True
        if self.on_completion_scheduled is not None:
            self.on_completion_scheduled(due_ms)

    def forward(self, now_ms: int) -> None:
        """Hand due requests to the broker, then take the broker's answers onto the wire back."""
        if self.closed:
            return
        outgoing = self._outgoing
        if not (outgoing and outgoing[0][0] <= now_ms) and not self.inner.has_completions():
            return  # nothing to hand over, nothing answered
        self.network._stale = True
        while self._outgoing and self._outgoing[0][0] <= now_ms:
            _due, _order, correlation_id, request, node_id = heapq.heappop(self._outgoing)
            inner_id = self.inner.send(request, node_id)
            self._at_broker[inner_id] = (correlation_id, self.broker_of(node_id))
            if self.observer is not None:
                self._handled_ms[correlation_id] = now_ms
        for completion in self.inner.poll(0):
            sent = self._at_broker.pop(completion.correlation_id, None)
            if sent is None:
                continue  # a reset already failed it
            correlation_id, broker = sent
            _requests_cut, answers_cut, drop = self.network._state(self.member, broker)
            if answers_cut or self.network.lost(drop):
                self._fail(correlation_id, now_ms + self.network.config.detect_ms, "answer lost")
            else:
                # Answers share the link's connection too: one never overtakes an earlier one.
                arrival_ms = max(now_ms + self.network.latency(), self._last_answer_ms.get(broker, now_ms))
                self._last_answer_ms[broker] = arrival_ms
                self._schedule_completion(arrival_ms, Completion(correlation_id, completion.result))

    def reset(self, broker: int, now_ms: int) -> None:
        """The connection to ``broker`` breaks: everything in flight on it fails now."""
        for inner_id, (correlation_id, key) in list(self._at_broker.items()):
            if key == broker:
                del self._at_broker[inner_id]
                self._fail(correlation_id, now_ms, "connection reset")
        keep = []
        for entry in self._outgoing:
            if self.broker_of(entry[4]) == broker:
                self._fail(entry[2], now_ms, "connection reset")
            else:
                keep.append(entry)
        heapq.heapify(keep)
        self._outgoing = keep
        self.network._stale = True

    def next_completion_ms(self) -> Optional[int]:
        """When the earliest message on its way back arrives (None: nothing on the way)."""
        return self._incoming[0][0] if self._incoming else None

    def completion_due(self, now_ms: int) -> bool:
        """Whether ``poll`` at ``now_ms`` would return something (the scheduler skips idle members)."""
        incoming = self._incoming
        return bool(incoming) and incoming[0][0] <= now_ms

    def poll(self, timeout_ms: int) -> list[Completion]:
        now = self.clock()
        out = []
        if self._incoming and self._incoming[0][0] <= now:
            self.network._stale = True
        while self._incoming and self._incoming[0][0] <= now:
            completion = heapq.heappop(self._incoming)[2]
            out.append(completion)
            if self.observer is not None:
                request = self._requests.pop(completion.correlation_id, None)
                if request is not None:
                    self.observer.on_complete(request, completion.result, now,
                                              self._handled_ms.pop(completion.correlation_id, -1))
        return out

    def close(self) -> None:
        self.closed = True
        self.network._stale = True
        self.inner.close()
        if self.network.transports.get(self.member) is self:
            del self.network.transports[self.member]
