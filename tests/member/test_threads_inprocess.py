"""Real threads: GroupConsumers over InProcessTransport to the in-memory coordinator."""
import threading
import time

import pytest

from kgroup.core.coordinator import GroupCoordinator, GroupCoordinatorConfig
from kgroup.core.member import ClassicMemberState
from kgroup.io.group_consumer import GroupConsumer

from member_threads_harness import FAST, TOPICS, balanced, poll_until
from member_fakes import EagerOnly


def consumer(hub, listener=None, **kw):
    config = dict(FAST, **kw)
    return GroupConsumer(hub.transport(), group_id="g", topics=["t"], assignors=(EagerOnly(),),
                         listener=listener, partitions_per_topic=TOPICS, **config)


def test_slow_processing_within_max_poll_is_not_evicted_but_beyond_it_is(hub):
    a, b = consumer(hub), consumer(hub)
    try:
        poll_until([a, b], lambda: balanced([a, b]))
        generation = a.member.generation.generation_id
        mine = a.assignment()
        for _ in range(2):
            time.sleep(1.2)          # 3x the session timeout, within max_poll_interval_ms
            a.poll(0)
            b.poll(0)
        assert a.member.generation.generation_id == generation and a.assignment() == mine
        # Now exceed max_poll_interval_ms: the heartbeat thread leaves the group for a.
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            b.poll(50)
        assert len(b.assignment()) == 6
        assert a.member.state is ClassicMemberState.UNJOINED
        poll_until([a, b], lambda: balanced([a, b]))   # a rejoins cleanly
        assert sorted(len(c.assignment()) for c in (a, b)) == [3, 3]
    finally:
        a.close(timeout_ms=1000)
        b.close(timeout_ms=1000)


class Boom(Exception):
    pass


class RaisingListener:
    def __init__(self):
        self.calls = []
        self.raise_next = True

    def on_partitions_revoked(self, partitions):
        self.calls.append(("revoked", partitions, threading.get_ident()))

    def on_partitions_assigned(self, partitions):
        self.calls.append(("assigned", partitions, threading.get_ident()))
        if self.raise_next:
            self.raise_next = False
            raise Boom("listener failed")


def test_listener_exception_surfaces_from_poll_after_state_is_consistent(hub):
    listener = RaisingListener()
    c = consumer(hub, listener=listener)
    try:
        with pytest.raises(Boom):
            for _ in range(100):
                c.poll(50)
        assert c.member.state is ClassicMemberState.STABLE and len(c.assignment()) == 6
        assert listener.calls[-1][0] == "assigned"
        # callbacks ran on the polling thread, never on the heartbeat thread
        assert {call[2] for call in listener.calls} == {threading.get_ident()}
        c.poll(50)                       # the consumer keeps working
        assert len(c.assignment()) == 6
    finally:
        c.close(timeout_ms=1000)


def test_commit_and_committed_round_trip_and_close_stops_heartbeat_thread(hub):
    c = consumer(hub)
    poll_until([c], lambda: balanced([c]))
    tp = sorted(c.assignment())[0]
    c.commit({tp: 42})
    assert c.committed([tp])[tp].offset == 42
    c.close(timeout_ms=1000)
    assert not c._heartbeat.alive


def test_transport_on_a_bare_coordinator_owns_its_hub_and_timers():
    from kgroup.io.inprocess import InProcessTransport

    coordinator = GroupCoordinator(GroupCoordinatorConfig(group_min_session_timeout_ms=100,
                                                          group_initial_rebalance_delay_ms=200))
    c = GroupConsumer(InProcessTransport(coordinator), group_id="g", topics=["t"], assignors=(EagerOnly(),),
                      partitions_per_topic=TOPICS, **FAST)
    try:
        # the initial rebalance delay only ends if the hub's timer thread fires it
        poll_until([c], lambda: balanced([c]))
    finally:
        c.close(timeout_ms=1000)
