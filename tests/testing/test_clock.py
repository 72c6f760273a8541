"""kgroup.io.clock: one clock module, one timer verb pair, one loop that moves mock time (issue 25)."""
import pytest

from kgroup.core.coordinator.standalone import StandaloneCoordinator
from kgroup.core.cluster import ClusterStateMachine
from kgroup.core.cluster.group_hosting import GroupHosting
from kgroup.errors import ConfigError
from kgroup.io import clock as clock_module
from kgroup.io.clock import MockClock, autojump, monotonic_ms, run_timers_through
from kgroup.io.inprocess import InProcessHub
from kgroup.server.engine import ServerEngine
from kgroup.server.network import Network as ServerNetwork
from kgroup.sim.app import ConsumerApp, Producer
from kgroup.sim.network import SimNetwork
from kgroup.testing.scheduler import PollCadence


def test_kgroup_testing_still_exports_the_one_mock_clock():
    import kgroup.testing

    assert kgroup.testing.MockClock is clock_module.MockClock


def test_the_real_clock_is_monotonic_milliseconds():
    first = monotonic_ms()
    assert isinstance(first, int) and monotonic_ms() >= first


def test_a_mock_clock_never_goes_backwards():
    clock = MockClock(10)
    with pytest.raises(ConfigError):
        clock.advance(-1)
    assert clock.advance_to(5) == 10 and clock() == 10


def test_autojump_visits_from_now_to_before_the_end_jumping_to_each_next_instant():
    clock = MockClock(0)
    deadlines = [30, 75, 400]
    visits = []

    def next_instant_ms(end_ms):
        later = [d for d in deadlines if d > clock()]
        return max(clock() + 1, min(later[0] if later else end_ms, end_ms))

    autojump(clock, 200, lambda: visits.append(clock()), next_instant_ms)
    assert visits == [0, 30, 75] and clock() == 200
    autojump(clock, 200, lambda: visits.append(clock()), next_instant_ms, through_end=True)
    assert visits[3:] == [200]  # an empty window visits only its end, when asked to


def test_autojump_stops_once_done_at_the_instant_visited_last():
    clock = MockClock(100)
    visits = []
    autojump(clock, 100 + 50 * 5, lambda: visits.append(clock()), lambda end_ms: min(end_ms, clock() + 5),
             done=lambda: len(visits) == 3)
    assert visits == [100, 105, 110] and clock() == 110


class _CountingBackend:
    """A broker seam whose deadline moves only when the test says so; counts how often it is asked."""

    def __init__(self):
        self.deadline = 50
        self.asked = 0
        self.handled = []

    def send(self, node_id, request_key, request, now_ms, context=None):
        return []

    def get_timer(self):
        self.asked += 1
        return self.deadline

    def handle_timer(self, now_ms):
        self.handled.append(now_ms)
        return []


def test_the_hub_asks_its_backend_every_time_unless_told_to_cache():
    backend = _CountingBackend()
    hub = InProcessHub(backend, clock=MockClock(0), run_timers=False)
    assert [hub.get_timer(), hub.get_timer()] == [50, 50] and backend.asked == 2
    backend.deadline = 70  # moved behind the hub's back: an uncached hub sees it
    assert hub.get_timer() == 70

    hub.cache_timer = True
    assert [hub.get_timer(), hub.get_timer()] == [70, 70] and backend.asked == 4
    backend.deadline = 90
    assert hub.get_timer() == 70  # cached until something goes through the hub
    assert not hub.due(69) and hub.due(70)
    hub.handle_timer(70)
    assert backend.handled == [70] and hub.get_timer() == 90


def test_run_timers_through_hands_each_result_over_and_ends_at_the_end():
    backend = _CountingBackend()
    backend.deadline = 40
    clock = MockClock(0)
    results = []

    def handle_timer(now_ms):
        backend.deadline = now_ms + 40
        return now_ms

    backend.handle_timer = handle_timer
    run_timers_through(clock, backend, 120, deliver=results.append)
    assert results == [40, 80, 120] and clock() == 120


TIMED = [StandaloneCoordinator, GroupHosting, ClusterStateMachine, ServerEngine, ServerNetwork, InProcessHub,
         SimNetwork, Producer, ConsumerApp, PollCadence]


@pytest.mark.parametrize("timed", TIMED, ids=[t.__module__ + "." + t.__name__ for t in TIMED])
def test_every_timed_component_has_the_one_verb_pair_and_no_other(timed):
    assert callable(getattr(timed, "get_timer")) and callable(getattr(timed, "handle_timer"))
    for old in ("tick", "fire", "next_deadline_ms", "next_poll_ms", "on_timers"):
        assert not hasattr(timed, old), f"{timed.__name__}.{old}"
