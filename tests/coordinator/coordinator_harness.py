"""A tiny deterministic driver and "client" for coordinator tests.

Metadata and assignments are opaque bytes to the coordinator; the clients
here encode them as readable strings so tests can assert on them.
"""
from __future__ import annotations

import itertools
from typing import Optional

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    HeartbeatRequest, JoinGroupProtocol, JoinGroupRequest, LeaveGroupRequest, MemberIdentity,
    SyncGroupAssignment, SyncGroupRequest,
)
from kgroup.io.clock import MockClock, run_timers_through

PARTITIONS = ("t-0", "t-1", "t-2")


class Driver:
    """Owns a coordinator, a mock clock, every response and every record so far."""

    def __init__(self, config: Optional[GroupCoordinatorConfig] = None, start_ms: int = 0) -> None:
        self.clock = MockClock(start_ms)
        self.transitions: list[tuple[str, GroupState, GroupState]] = []
        counter = itertools.count(1)
        self.config = config or GroupCoordinatorConfig()
        self.member_id_factory = lambda prefix: f"{prefix}-{next(counter)}"
        self.coordinator = GroupCoordinator(self.config, member_id_factory=self.member_id_factory,
                                            on_transition=self._observe)
        self.responses: dict = {}
        self.records: list = []
        self._keys = itertools.count()

    def _observe(self, group_id: str, old: GroupState, new: GroupState) -> None:
        self.transitions.append((group_id, old, new))

    def failover(self) -> None:
        """Replace the coordinator by one loaded from every record so far (parked requests are lost)."""
        self.coordinator = GroupCoordinator.load(self.records, self.clock.now_ms, self.config,
                                                 member_id_factory=self.member_id_factory,
                                                 on_transition=self._observe)
        self.coordinator.assert_invariants()

    def _absorb(self, result) -> None:
        # Every call leaves each group's counters, maps, timers and records consistent.
        self.coordinator.assert_invariants()
        for delivery in result.deliveries:
            assert delivery.request_key not in self.responses, f"answered twice: {delivery.request_key}"
            self.responses[delivery.request_key] = delivery.response
        self.records.extend(result.records)

    def send(self, request, key=None):
        """Send a request; return its response if answered at once, else None (parked)."""
        key = key if key is not None else ("req", next(self._keys))
        self._absorb(self.coordinator.handle(key, request, self.clock.now_ms))
        return self.responses.get(key), key

    def request(self, request):
        return self.send(request)[0]

    # The driver is the timed component (not the coordinator: a failover replaces it).
    def get_timer(self) -> Optional[int]:
        return self.coordinator.get_timer()

    def handle_timer(self, now_ms: int) -> None:
        self._absorb(self.coordinator.handle_timer(now_ms))

    def advance(self, delta_ms: int) -> None:
        """Move the clock, handling every deadline on the way at its own time."""
        run_timers_through(self.clock, self, self.clock.now_ms + delta_ms)

    def fire(self) -> None:
        """Handle what is due now."""
        self.handle_timer(self.clock.now_ms)

    def states(self, group_id: str = "g") -> list[GroupState]:
        seq = [t[1] for t in self.transitions if t[0] == group_id][:1]
        return seq + [t[2] for t in self.transitions if t[0] == group_id]


class Client:
    """One consumer: joins, syncs (the leader assigns round-robin), heartbeats."""

    def __init__(self, driver: Driver, name: str, group_id: str = "g", session_timeout_ms: int = 10_000,
                 rebalance_timeout_ms: int = 60_000, instance_id: Optional[str] = None,
                 protocols: tuple[str, ...] = ("range",), topics: str = "t") -> None:
        self.driver = driver
        self.name = name
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.instance_id = instance_id
        self.protocols = tuple(JoinGroupProtocol(p, f"{name}:{topics}".encode()) for p in protocols)
        self.member_id = ""
        self.generation_id = -1
        self.is_leader = False
        self.leader_members: tuple = ()
        self.assignment: Optional[bytes] = None
        self.assignments_received = 0
        self.join_key = None
        self.sync_key = None

    # -- join ------------------------------------------------------------------

    def join_request(self, **overrides) -> JoinGroupRequest:
        fields = dict(group_id=self.group_id, member_id=self.member_id,
                      session_timeout_ms=self.session_timeout_ms,
                      rebalance_timeout_ms=self.rebalance_timeout_ms, group_instance_id=self.instance_id,
                      protocols=self.protocols, client_id=self.name)
        fields.update(overrides)
        return JoinGroupRequest(**fields)

    def join(self, **overrides):
        """Send JoinGroup; a MEMBER_ID_REQUIRED answer is retried at once, as clients do."""
        response, key = self.driver.send(self.join_request(**overrides))
        if response is not None and response.error_code is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            response, key = self.driver.send(self.join_request(**overrides))
        self.join_key = key
        return self.poll_join()

    def poll_join(self):
        response = self.driver.responses.get(self.join_key)
        if response is not None and response.error_code is ErrorCode.NONE:
            self.member_id = response.member_id
            self.generation_id = response.generation_id
            self.is_leader = response.leader == response.member_id
            self.leader_members = response.members
        return response

    # -- sync ------------------------------------------------------------------

    def sync(self):
        assignments = ()
        if self.is_leader and self.leader_members:
            ids = sorted(m.member_id for m in self.leader_members)
            owned: dict[str, list[str]] = {mid: [] for mid in ids}
            for i, tp in enumerate(PARTITIONS):
                owned[ids[i % len(ids)]].append(tp)
            assignments = tuple(SyncGroupAssignment(mid, ",".join(tps).encode())
                                for mid, tps in owned.items())
        response, self.sync_key = self.driver.send(SyncGroupRequest(
            self.group_id, self.generation_id, self.member_id, group_instance_id=self.instance_id,
            protocol_name=None, assignments=assignments))
        return self.poll_sync()

    def poll_sync(self):
        response = self.driver.responses.get(self.sync_key)
        if response is not None and response.error_code is ErrorCode.NONE and self.sync_key is not None:
            self.assignment = response.assignment
            self.assignments_received += 1
            self.sync_key = None
        return response

    # -- other -----------------------------------------------------------------

    def heartbeat(self):
        return self.driver.request(HeartbeatRequest(self.group_id, self.generation_id, self.member_id,
                                                    group_instance_id=self.instance_id))

    def leave(self):
        return self.driver.request(LeaveGroupRequest(self.group_id, (MemberIdentity(self.member_id,
                                                                                    self.instance_id),)))


def make_stable(driver: Driver, *clients: Client) -> None:
    """Join every client, complete the join, sync (followers first) and check the group is Stable."""
    for c in clients:
        c.join()
    driver.fire()
    for c in clients:
        c.poll_join()
    for c in sorted(clients, key=lambda c: c.is_leader):
        c.sync()
    for c in clients:
        c.poll_sync()
    assert driver.coordinator.group_state(clients[0].group_id) is GroupState.STABLE
