"""Time to a balanced group and to takeover, in-process with real threads.

Run: python -m pytest tests/member/test_inprocess_timings.py -m slow -s
"""
import time

import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.io.inprocess import InProcessHub

from kgroup.io.group_consumer import GroupConsumer

from member_threads_harness import FAST, TOPICS, balanced, poll_until
from member_fakes import CooperativeSplit, EagerOnly


@pytest.mark.slow
@pytest.mark.parametrize("assignor", [EagerOnly, CooperativeSplit])
def test_time_to_balance_and_takeover(assignor):
    hub = InProcessHub(GroupCoordinator(GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                                               group_initial_rebalance_delay_ms=0)))
    start = time.monotonic()
    consumers = [GroupConsumer(hub.transport(), group_id="g", topics=["t"], assignors=(assignor(),),
                               partitions_per_topic=TOPICS, **FAST) for _ in range(3)]
    try:
        poll_until(consumers, lambda: balanced(consumers))
        to_balanced = time.monotonic() - start
        leaving = consumers.pop()
        start = time.monotonic()
        leaving.close(timeout_ms=1000)
        poll_until(consumers, lambda: balanced(consumers))
        to_takeover = time.monotonic() - start
        crashed = consumers.pop()
        crashed._heartbeat.stop()            # simulates a crash: no LeaveGroup, no heartbeats
        start = time.monotonic()
        poll_until(consumers, lambda: balanced(consumers))
        to_expiry_takeover = time.monotonic() - start
        print(f"\n{assignor.name}: balanced {to_balanced * 1000:.0f} ms, takeover after close "
              f"{to_takeover * 1000:.0f} ms, after crash {to_expiry_takeover * 1000:.0f} ms (session 400 ms)")
        assert to_expiry_takeover >= 0.3
    finally:
        for c in consumers:
            c.close(timeout_ms=1000)
        hub.close()
