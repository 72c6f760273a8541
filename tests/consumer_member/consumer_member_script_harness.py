"""A KIP-848 member answered by hand: no coordinator, no threads (shared by tests/consumer_member).

``ScriptedMember`` wraps one :class:`ConsumerProtocolMember` on a mock clock;
the test plays the coordinator, answering each request the member sends
with the response it chooses, and plays the application, whose callbacks
are recorded in order.
"""
from __future__ import annotations

import random
from typing import Iterable, Optional

from kgroup.core import messages as m
from kgroup.core.consumer_group_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kgroup.core.error_codes import ErrorCode
from kgroup.core.member import CommitCompleted, CommittedFetched, FatalError, PartitionsAssigned
from kgroup.core.member import PartitionsLost, PartitionsRevoked
from kgroup.core.member.consumer import ConsumerProtocolMember, ConsumerProtocolConfig
from kgroup.testing import MockClock
from kgroup.values import TopicPartition

OK = ErrorCode.NONE
COORDINATOR = 7


def tps(topic: str, *partitions: int) -> frozenset:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def seeded_random_bytes(seed: int):
    rng = random.Random(seed)
    return lambda n: bytes(rng.getrandbits(8) for _ in range(n))


class ScriptedMember:
    def __init__(self, topics: Iterable[str] = ("t",), seed: int = 1, **config) -> None:
        config.setdefault("group_id", "g")
        config.setdefault("enable_auto_commit", False)
        config.setdefault("fetch_committed_on_assignment", False)
        config.setdefault("retry_backoff_ms", 50)
        config.setdefault("max_poll_interval_ms", 10_000)
        self.clock = MockClock(1000)
        self.member = ConsumerProtocolMember(ConsumerProtocolConfig(**config), self.clock.now_ms,
                                             seeded_random_bytes(seed))
        self.pending: dict[type, list] = {}
        #: ("revoked" | "assigned" | "lost", sorted partitions), in the order the app ran them.
        self.callbacks: list[tuple[str, list]] = []
        self.commits: dict[int, CommitCompleted] = {}
        self.fetches: dict[int, CommittedFetched] = {}
        self.fatal: list[FatalError] = []
        if topics:
            self.member.subscribe(list(topics), self.now)

    @property
    def now(self) -> int:
        return self.clock.now_ms

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- the network -------------------------------------------------------------------

    def pump(self) -> list:
        """What the member sends now (kept, by request type, for ``answer``)."""
        out = self.member.outbound(self.now)
        for ob in out:
            self.pending.setdefault(type(ob.request), []).append(ob)
        return [ob.request for ob in out]

    def sent(self, request_type: type) -> list:
        return [ob.request for ob in self.pending.get(request_type, [])]

    def answer(self, request_type: type, response) -> object:
        ob = self.pending[request_type].pop(0)
        self.member.on_response(ob.token, response, self.now)
        return ob.request

    def fail(self, request_type: type) -> object:
        ob = self.pending[request_type].pop(0)
        self.member.on_transport_error(ob.token, self.now)
        return ob.request

    def find_coordinator(self, node_id: int = COORDINATOR) -> None:
        requests = self.pump()
        assert any(isinstance(r, m.FindCoordinatorRequest) for r in requests), requests
        self.answer(m.FindCoordinatorRequest, m.FindCoordinatorResponse(OK, node_id, "localhost", 9092))

    def heartbeat(self) -> ConsumerGroupHeartbeatRequest:
        """The one heartbeat the member sends now (asserts there is exactly one)."""
        hbs = [r for r in self.pump() if isinstance(r, ConsumerGroupHeartbeatRequest)]
        assert len(hbs) == 1, f"expected one heartbeat, got {hbs} in state {self.member.state}"
        return hbs[0]

    def answer_heartbeat(self, epoch: int, assignment: Optional[Iterable[TopicPartition]] = None,
                         interval_ms: int = 3000, error: ErrorCode = OK, member_id: Optional[str] = None,
                         message: Optional[str] = None) -> ConsumerGroupHeartbeatRequest:
        request = self.pending[ConsumerGroupHeartbeatRequest][0].request
        response = self.member_response(epoch, assignment, interval_ms, error,
                                        member_id or request.member_id or "server-made-id", message)
        self.answer(ConsumerGroupHeartbeatRequest, response)
        return request

    def member_response(self, epoch: int, assignment: Optional[Iterable[TopicPartition]] = None,
                        interval_ms: int = 3000, error: ErrorCode = OK, member_id: Optional[str] = None,
                        message: Optional[str] = None) -> ConsumerGroupHeartbeatResponse:
        return ConsumerGroupHeartbeatResponse(
            error, message, member_id or self.member.member_id, epoch if error is OK else -1,
            interval_ms if error is OK else 0, None if assignment is None else tuple(assignment))

    # -- the application -------------------------------------------------------------------

    def poll(self, positions=None) -> list:
        """One application poll: take the events, run the callbacks, tell the member."""
        events = self.member.take_events()
        for event in events:
            if isinstance(event, PartitionsRevoked):
                self.callbacks.append(("revoked", sorted(event.partitions)))
            elif isinstance(event, PartitionsAssigned):
                self.callbacks.append(("assigned", sorted(event.partitions)))
            elif isinstance(event, PartitionsLost):
                self.callbacks.append(("lost", sorted(event.partitions)))
            elif isinstance(event, CommitCompleted):
                self.commits[event.token] = event
            elif isinstance(event, CommittedFetched):
                self.fetches[event.token] = event
            elif isinstance(event, FatalError):
                self.fatal.append(event)
        self.member.on_app_poll(self.now, positions)
        return events

    def poll_until_quiet(self, positions=None, rounds: int = 10) -> None:
        for _ in range(rounds):
            self.poll(positions)
            if not self.member.has_events():
                return
        raise AssertionError("the member kept emitting events")

    # -- whole steps -------------------------------------------------------------------------

    def join(self, assignment: Iterable[TopicPartition] = (), epoch: int = 1,
             interval_ms: int = 3000) -> ConsumerGroupHeartbeatRequest:
        """Find the coordinator, join, receive ``assignment``, reconcile it and send the ack."""
        self.poll()
        self.find_coordinator()
        join = self.heartbeat()
        self.answer_heartbeat(epoch, assignment, interval_ms)
        self.poll_until_quiet()
        ack = self.heartbeat()
        assert ack.topic_partitions == tuple(sorted(assignment)), ack
        return join
