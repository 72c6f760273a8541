"""Shared by the real-thread GroupConsumer tests (test_threads_inprocess, test_inprocess_timings):
the topic, fast timeouts, and polling every consumer until a condition holds."""
import time

import pytest

from kgroup.core.member import ClassicMemberState

TOPICS = {"t": 6}
FAST = dict(session_timeout_ms=400, heartbeat_interval_ms=100, max_poll_interval_ms=1500,
            retry_backoff_ms=50, enable_auto_commit=False)


def poll_until(consumers, predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(20)
        if predicate():
            return
    pytest.fail("condition not reached: "
                + str([(c.member.state, sorted(c.assignment())) for c in consumers]))


def balanced(consumers):
    owned = [tp for c in consumers for tp in c.assignment()]
    return len(owned) == len(set(owned)) == 6 and all(
        c.member.state is ClassicMemberState.STABLE and not c.member.rejoin_needed for c in consumers)
