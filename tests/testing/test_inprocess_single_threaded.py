"""InProcessHub.drive_single_threaded (issue 28): a single-threaded driver's requests skip the locks."""
import pytest

from kgroup.core.broker import RequestContext
from kgroup.core.messages import JoinGroupRequest
from kgroup.errors import ConfigError
from kgroup.io.clock import MockClock
from kgroup.io.inprocess import InProcessHub
from kgroup.io.transport import TransportError


class _Forbidden:
    """Stands in for a lock or condition variable the single-threaded path must not touch."""

    def __getattr__(self, name):
        raise AssertionError(f"the single-threaded path used the lock ({name})")

    def __enter__(self):
        raise AssertionError("the single-threaded path took the lock")

    def __exit__(self, *exc):
        return False


class _EchoBackend:
    """Answers every request with (request, context) at once, but a "park" request only at its timer."""

    def __init__(self):
        self.parked = []

    def send(self, node_id, request_key, request, now_ms, context=None):
        if request == "park":
            self.parked.append(request_key)
            return []
        return [(request_key, (request, context, now_ms))]

    def get_timer(self):
        return None

    def handle_timer(self, now_ms):
        parked, self.parked = self.parked, []
        return [(key, ("timer", None, now_ms)) for key in parked]


def test_a_single_threaded_hub_answers_through_its_transports_without_any_lock():
    hub = InProcessHub(_EchoBackend(), clock=MockClock(5), run_timers=False)
    first, second = hub.transport("c1", "h1"), hub.transport("c2")
    hub.drive_single_threaded()
    hub._lock = hub._timer_wake = _Forbidden()
    for transport in (first, second):
        transport._cond = _Forbidden()

    one = first.send("ping", node_id=1)
    join = JoinGroupRequest("g", client_id="j", client_host="jh", api_version=5)
    two = second.send(join, node_id=2)
    assert first.has_completions() and second.has_completions()
    [answer] = first.poll(1000)  # never waits: nothing can arrive from another thread
    assert answer.correlation_id == one
    assert answer.result == ("ping", RequestContext("c1", "h1"), 5)
    [joined] = second.poll(0)
    assert joined.correlation_id == two and joined.result[1] == RequestContext("j", "jh", 5)
    assert first.poll(1000) == [] and hub.changes == 2

    parked = second.send("park")
    assert not second.has_completions()
    hub.handle_timer(7)  # the timer answers the parked request to its sender, as under the lock
    assert [(c.correlation_id, c.result) for c in second.poll(0)] == [(parked, ("timer", None, 7))]
    assert hub.changes == 4


def test_a_single_threaded_transport_still_fails_requests_while_isolated():
    hub = InProcessHub(_EchoBackend(), clock=MockClock(0), run_timers=False)
    hub.drive_single_threaded()
    transport = hub.transport()
    transport.isolate()
    transport._cond = _Forbidden()
    correlation_id = transport.send("ping")
    [failed] = transport.poll(0)
    assert failed.correlation_id == correlation_id and isinstance(failed.result, TransportError)


def test_a_hub_with_a_timer_thread_refuses_to_be_driven_single_threaded():
    hub = InProcessHub(_EchoBackend(), run_timers=True)
    try:
        with pytest.raises(ConfigError, match="own thread"):
            hub.drive_single_threaded()
        assert not hub.single_threaded
    finally:
        hub.close()
