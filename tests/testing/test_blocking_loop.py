"""kgroup.io.runner.block_until: the one blocking loop of GroupConsumer and the kafka-python
ConsumerCoordinator (project issue 10)."""
import pytest

from kgroup.errors import KGroupError
from kgroup.io.clock import wait_until_ms
from kgroup.io.runner import BLOCKING_STEP_MS, MemberRunner, block_until
from kgroup.testing import MockClock


class QuietMember:
    """Sends nothing; has an optional next deadline."""

    def __init__(self, deadline_ms=None):
        self.deadline_ms = deadline_ms

    def outbound(self, now_ms):
        return []

    def get_timer(self):
        return self.deadline_ms


class SleepingTransport:
    """poll(timeout) lets the mock clock pass the whole timeout and records it."""

    def __init__(self, clock):
        self.clock = clock
        self.waits = []

    def poll(self, timeout_ms):
        self.waits.append(timeout_ms)
        self.clock.advance(timeout_ms)
        return []

    def wakeup(self):
        pass


def runner_on(clock, deadline_ms=None):
    transport = SleepingTransport(clock)
    return MemberRunner(QuietMember(deadline_ms), transport, clock), transport


def test_waits_in_bounded_steps_up_to_the_deadline_then_says_false():
    clock = MockClock(0)
    runner, transport = runner_on(clock)
    assert block_until(runner, 120, lambda: False) is False
    assert transport.waits == [BLOCKING_STEP_MS, BLOCKING_STEP_MS, 20] and clock() == 120


def test_done_first_round_returns_true_without_waiting_or_checking():
    clock = MockClock(0)
    runner, transport = runner_on(clock)
    checks = []
    assert block_until(runner, 0, lambda: True, check=lambda: checks.append(1)) is True
    assert transport.waits == [] and checks == []


def test_after_step_runs_under_the_lock_and_can_finish_the_wait():
    clock = MockClock(0)
    runner, transport = runner_on(clock)
    results = []

    def after_step(member):
        assert runner.lock._is_owned()
        results.append(clock())

    assert block_until(runner, 1_000, lambda: len(results) >= 2, after_step=after_step) is True
    assert results == [50, 100]


def test_a_poll_loop_wakes_at_the_member_deadline():
    clock = MockClock(0)
    runner, transport = runner_on(clock, deadline_ms=30)
    rounds = []
    assert block_until(runner, 100, lambda: rounds.append(clock()) or len(rounds) > 1,
                       wake_for_member=True) is True
    assert transport.waits == [30]
    # Without it, the loop sleeps through the member's deadline.
    runner, transport = runner_on(MockClock(0), deadline_ms=30)
    block_until(runner, 100, lambda: False)
    assert transport.waits[0] == BLOCKING_STEP_MS


def test_no_deadline_waits_until_done_and_check_errors_escape():
    clock = MockClock(0)
    runner, transport = runner_on(clock)
    assert block_until(runner, None, lambda: clock() >= 500) is True and clock() == 500

    def broken():
        raise KGroupError("heartbeat thread died")

    with pytest.raises(KGroupError, match="heartbeat thread died"):
        block_until(runner, None, lambda: False, check=broken)


def test_wait_until_ms_is_capped_and_at_least_one_ms():
    assert wait_until_ms(None, 10, 1_000) == 1_000
    assert wait_until_ms(40, 10, 1_000) == 30
    assert wait_until_ms(5, 10, 1_000) == 1
    assert wait_until_ms(5_000, 10, 50) == 50
