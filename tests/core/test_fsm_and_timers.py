import enum

import pytest

from kgroup.core.fsm import StateMachine, check_table
from kgroup.core.timers import KeyedTimers
from kgroup.errors import ConfigError, IllegalStateTransition
from kgroup.testing import MockClock


class Light(enum.Enum):
    RED = 1
    GREEN = 2
    AMBER = 3


LIGHT_TABLE = {
    Light.RED: frozenset({Light.AMBER}),
    Light.GREEN: frozenset({Light.RED}),
    Light.AMBER: frozenset({Light.GREEN}),
}


def test_legal_transition_returns_previous_state():
    machine = StateMachine("light", Light.RED, LIGHT_TABLE)
    assert machine.transition_to(Light.GREEN) is Light.RED
    assert machine.state is Light.GREEN


def test_illegal_transition_names_both_states():
    machine = StateMachine("light", Light.RED, LIGHT_TABLE)
    with pytest.raises(IllegalStateTransition) as caught:
        machine.transition_to(Light.AMBER)
    assert "RED" in str(caught.value) and "AMBER" in str(caught.value)
    assert caught.value.from_state is Light.RED and caught.value.to_state is Light.AMBER
    assert machine.state is Light.RED


def test_incomplete_table_is_rejected():
    with pytest.raises(ValueError, match="GREEN"):
        check_table(Light, {Light.RED: frozenset(), Light.AMBER: frozenset()})


def test_keyed_timers_replace_and_pop_in_order():
    timers = KeyedTimers()
    timers.schedule("a", 100)
    timers.schedule("b", 50)
    timers.schedule("a", 30)  # replaces the 100 deadline
    assert timers.next_deadline_ms() == 30
    assert timers.pop_due(49) == ["a"]
    assert timers.pop_due(49) == []
    assert timers.cancel("b")
    assert timers.next_deadline_ms() is None
    assert timers.pop_due(10_000) == []


def test_keyed_timers_compact_keeps_only_live_deadlines():
    timers = KeyedTimers()
    for i in range(1000):
        timers.schedule("hot", i)
    timers.schedule("cold", 5000)
    assert len(timers) == 2
    assert timers.pop_due(998) == []
    assert timers.pop_due(999) == ["hot"]
    assert timers.deadline_of("cold") == 5000


def test_mock_clock_refuses_to_go_back():
    clock = MockClock(10)
    assert clock.advance(5) == 15
    assert clock.advance_to(12) == 15
    with pytest.raises(ConfigError):
        clock.advance(-1)
