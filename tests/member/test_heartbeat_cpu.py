"""Idle cost of the heartbeat thread (run: python -m pytest tests/member/test_heartbeat_cpu.py -m slow -s)."""
import time

import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.io.group_consumer import GroupConsumer
from kgroup.io.inprocess import InProcessHub

from member_fakes import EagerOnly


def idle_cpu_fraction(session_timeout_ms, heartbeat_interval_ms, seconds=3.0):
    hub = InProcessHub(GroupCoordinator(GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                                               group_initial_rebalance_delay_ms=0)))
    c = GroupConsumer(hub.transport(), group_id="g", topics=["t"], assignors=(EagerOnly(),),
                      partitions_per_topic={"t": 6}, session_timeout_ms=session_timeout_ms,
                      heartbeat_interval_ms=heartbeat_interval_ms, max_poll_interval_ms=600_000,
                      enable_auto_commit=False)
    try:
        for _ in range(100):
            if len(c.poll(50).assignment) == 6:
                break
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(seconds)      # the app is "busy": only the heartbeat (and hub timer) threads run
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        generation = c.member.generation.generation_id
        c.poll(0)
        assert c.member.generation.generation_id == generation   # still a member after the idle spell
        return cpu / wall
    finally:
        c.close(timeout_ms=1000)
        hub.close()


@pytest.mark.slow
@pytest.mark.parametrize("session_ms,interval_ms", [(10_000, 3_000), (400, 100)])
def test_idle_heartbeat_thread_cpu_is_small(session_ms, interval_ms):
    fraction = idle_cpu_fraction(session_ms, interval_ms)
    print(f"\nidle CPU, session {session_ms} ms / heartbeat {interval_ms} ms: "
          f"{fraction * 100:.3f}% of one core")
    assert fraction < 0.02
