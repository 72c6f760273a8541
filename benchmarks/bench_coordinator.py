"""In-memory GroupCoordinator throughput on the mock clock.

    python -m pytest benchmarks/bench_coordinator.py --benchmark-enable

* ``test_join_1000_members``: 1,000 members join a new group (initial delay 0),
  each through the MEMBER_ID_REQUIRED round trip; the leader syncs 1,000
  assignments, the followers sync; the group ends Stable.  Target < 1 s CPU.
* ``test_10000_heartbeats``: 10,000 heartbeats to that Stable group.
  Target >= 100,000 heartbeats/s.
"""
from __future__ import annotations

import itertools
import time

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from kgroup.core.error_codes import ErrorCode
from kgroup.core.messages import (
    HeartbeatRequest, JoinGroupProtocol, JoinGroupRequest, SyncGroupAssignment, SyncGroupRequest,
)

MEMBERS = 1_000
HEARTBEATS = 10_000
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
PROTOCOLS = (JoinGroupProtocol("range", b"\x00\x01topic"),)


def join_group(members: int = MEMBERS) -> tuple[GroupCoordinator, list[str], int]:
    counter = itertools.count()
    coordinator = GroupCoordinator(CONFIG, member_id_factory=lambda prefix: f"{prefix}-{next(counter)}")
    now_ms = 0
    member_ids = []
    for i in range(members):
        first = coordinator.handle(("j0", i), JoinGroupRequest("g", client_id=f"c{i}", protocols=PROTOCOLS),
                                   now_ms)
        member_id = first.deliveries[0].response.member_id
        member_ids.append(member_id)
        coordinator.handle(("j1", i), JoinGroupRequest("g", member_id=member_id, client_id=f"c{i}",
                                                       protocols=PROTOCOLS), now_ms)
    joined = coordinator.handle_timer(now_ms)
    responses = {d.request_key: d.response for d in joined.deliveries}
    assert len(responses) == members
    leader_response = next(r for r in responses.values() if r.members)
    generation = leader_response.generation_id
    for i, member_id in enumerate(member_ids):
        if member_id != leader_response.leader:
            coordinator.handle(("s", i), SyncGroupRequest("g", generation, member_id), now_ms)
    assignments = tuple(SyncGroupAssignment(m.member_id, m.member_id.encode())
                        for m in leader_response.members)
    leader_sync = SyncGroupRequest("g", generation, leader_response.leader, assignments=assignments)
    synced = coordinator.handle("leader-sync", leader_sync, now_ms)
    assert len(synced.deliveries) == members
    assert coordinator.group_state("g") is GroupState.STABLE
    return coordinator, member_ids, generation


def heartbeat_requests(member_ids: list[str], generation: int,
                       count: int = HEARTBEATS) -> list[HeartbeatRequest]:
    return [HeartbeatRequest("g", generation, member_ids[i % len(member_ids)]) for i in range(count)]


def heartbeat_all(coordinator: GroupCoordinator, requests: list[HeartbeatRequest]) -> None:
    handle = coordinator.handle
    for i, request in enumerate(requests):
        result = handle(i, request, 1_000 + i // 10)
    assert result.deliveries[0].response.error_code is ErrorCode.NONE


def test_join_1000_members(benchmark):
    benchmark.pedantic(join_group, rounds=3, iterations=1)


def test_10000_heartbeats(benchmark):
    coordinator, member_ids, generation = join_group()
    requests = heartbeat_requests(member_ids, generation)  # built outside the timed body
    benchmark.pedantic(heartbeat_all, args=(coordinator, requests), rounds=5, iterations=1)


if __name__ == "__main__":
    start = time.process_time()
    coordinator, ids, generation = join_group()
    join_s = time.process_time() - start
    requests = heartbeat_requests(ids, generation)
    start = time.process_time()
    heartbeat_all(coordinator, requests)
    beat_s = time.process_time() - start
    print(f"join of {MEMBERS} members: {join_s * 1000:.0f} ms CPU; "
          f"{HEARTBEATS} heartbeats: {HEARTBEATS / beat_s:,.0f}/s")
