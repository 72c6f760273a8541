"""kgroup.testing.Scheduler: one driver that jumps mock time to the earliest deadline (project issue 10)."""
import pytest

from kgroup.errors import ConfigError
from kgroup.io.clock import run_timers_through
from kgroup.testing import InMemoryKafka, MockClock, Scheduler
from kgroup.testing.scheduler import EventScheduler, PollCadence


class FakeTimers:
    """A timed component with a fixed list of deadlines; records when it was handled."""

    def __init__(self, clock, deadlines):
        self.clock = clock
        self.deadlines = sorted(deadlines)
        self.fired = []

    def get_timer(self):
        return self.deadlines[0] if self.deadlines else None

    def handle_timer(self, now_ms):
        self.fired.append(now_ms)
        while self.deadlines and self.deadlines[0] <= now_ms:
            self.deadlines.pop(0)


class FakeMember:
    def __init__(self, deadline_ms=None):
        self.deadline_ms = deadline_ms

    def get_timer(self):
        return self.deadline_ms


class FakeRunner:
    """Counts steps; answers one completion per queued answer; a step at the deadline meets it."""

    def __init__(self, clock=None, deadline_ms=None, answers=0):
        self.clock = clock
        self.member = FakeMember(deadline_ms)
        self.answers = answers
        self.steps = 0

    def step(self, block_ms=0):
        self.steps += 1
        deadline = self.member.deadline_ms
        if deadline is not None and self.clock() >= deadline:
            self.member.deadline_ms = None
        if self.answers:
            self.answers -= 1
            return 1
        return 0


def visited(scheduler):
    instants = []
    scheduler.after_instant.append(instants.append)
    return instants


def test_jumps_from_deadline_to_deadline_instead_of_stepping():
    clock = MockClock(0)
    scheduler = Scheduler(clock)
    timers = FakeTimers(clock, [30, 75, 400])
    scheduler.add_timers(timers)
    instants = visited(scheduler)
    scheduler.run_for(200)
    assert instants == [0, 30, 75]
    assert timers.fired == [0, 30, 75]
    assert clock() == 200  # the clock ends at the end of the run, not at the next deadline


def test_an_idle_run_is_one_instant():
    clock = MockClock(1_000)
    scheduler = Scheduler(clock)
    instants = visited(scheduler)
    scheduler.run_for(60_000)
    assert instants == [1_000] and clock() == 61_000


def test_application_polls_keep_their_cadence_and_members_their_deadlines():
    clock = MockClock(0)
    scheduler = Scheduler(clock)
    polls = []
    runner = FakeRunner(clock, deadline_ms=35)
    scheduler.add_member("a", runner, PollCadence(polls.append, 20, first_ms=0))
    instants = visited(scheduler)
    scheduler.run_for(61)
    assert polls == [0, 20, 40, 60]
    assert instants == [0, 20, 35, 40, 60]


def test_a_member_is_stepped_until_its_transport_is_quiet_before_and_after_the_timers():
    clock = MockClock(0)
    scheduler = Scheduler(clock)
    runner = FakeRunner(answers=3)
    scheduler.add_member("a", runner)
    scheduler.instant()
    # Three rounds with an answer, one quiet round; then one quiet round after the timers.
    assert runner.steps == 5


class TellingTransport:
    """A transport that can say when a completion is due (the simulator's network can)."""

    def __init__(self):
        self.due_ms = None

    def completion_due(self, now_ms):
        return self.due_ms is not None and self.due_ms <= now_ms


class TellingRunner(FakeRunner):
    def __init__(self, clock, deadline_ms, due_ms):
        super().__init__(clock, deadline_ms)
        self.transport = TellingTransport()
        self.transport.due_ms = due_ms

    def step(self, block_ms=0):
        if self.transport.completion_due(self.clock()):
            self.transport.due_ms = None  # the completion is taken
        return super().step(block_ms)


def test_an_idle_member_is_skipped_when_its_transport_can_tell():
    clock = MockClock(0)
    scheduler = Scheduler(clock)
    runner = TellingRunner(clock, deadline_ms=50, due_ms=30)  # a completion comes back at 30

    def poll(now_ms):
        if now_ms == 2_000:
            runner.member.deadline_ms = now_ms  # this poll made something due now (e.g. an auto-commit)

    scheduler.add_member("a", runner, PollCadence(poll, 1_000, first_ms=0))
    scheduler.add_timers(FakeTimers(clock, [10, 20, 30]))
    steps = []
    scheduler.after_instant.append(lambda now: steps.append((now, runner.steps)))
    scheduler.run_until_ms(2_001)
    # 0, 10, 20: nothing due (a new member and its polls at 0 and 1000 are asked their deadline, not
    # stepped); 30: the completion; 50: its deadline (one step each: the fake has nothing more after
    # it); 1000: polled, nothing due; 2000: the poll made something due.
    assert steps == [(0, 0), (10, 0), (20, 0), (30, 1), (50, 2), (1_000, 2), (2_000, 3)]
    scheduler.instant()  # nothing due, nothing touched
    assert runner.steps == 3
    runner.member.deadline_ms = 2_001  # a caller touched the member between runs
    scheduler.run_until_ms(2_002)  # a run starts by asking everyone's deadline again
    assert runner.steps == 4


def test_timed_callbacks_run_in_time_then_scheduling_order_and_may_move_the_clock():
    clock = MockClock(0)
    scheduler = Scheduler(clock)
    calls = []
    scheduler.call_at(50, lambda now: calls.append(("late", now)))
    scheduler.call_at(10, lambda now: (calls.append(("first", now)), clock.advance(5)))
    scheduler.call_at(10, lambda now: calls.append(("second", now)))
    scheduler.call_at(90, lambda now: calls.append(("never", now)))
    polls = []
    scheduler.add_member("a", FakeRunner(), PollCadence(polls.append, 1_000, first_ms=10))
    scheduler.run_until_ms(60)
    # The second callback and the poll see the time the first one left.
    assert calls == [("first", 10), ("second", 15), ("late", 50)]
    assert polls[0] == 15
    assert [callback(0) for callback in scheduler.pending_calls()] and calls[-1] == ("never", 0)
    assert scheduler.pending_calls() == []


def test_run_timers_through_fires_each_deadline_at_its_own_time():
    clock = MockClock(0)
    timers = FakeTimers(clock, [5, 5, 40, 100, 101])
    run_timers_through(clock, timers, 100)
    assert timers.fired == [5, 40, 100] and clock() == 100


def test_run_until_gives_up_after_the_limit():
    scheduler = Scheduler(MockClock(0))
    with pytest.raises(AssertionError, match="within 500 ms"):
        scheduler.run_until(lambda: False, limit_ms=500, check_every_ms=100)
    assert scheduler.clock() == 500


def test_bad_cadence_and_duplicate_member_are_config_errors():
    scheduler = Scheduler(MockClock(0))
    with pytest.raises(ConfigError):
        PollCadence(lambda now: None, 0, first_ms=0)
    scheduler.add_member("a", FakeRunner())
    with pytest.raises(ConfigError):
        scheduler.add_member("a", FakeRunner())


def test_in_memory_kafka_run_visits_deadlines_between_polls():
    """InMemoryKafka.run: the coordinator's load finishes at its own deadline, not on a poll."""
    clock = MockClock(0)
    with InMemoryKafka(3, offsets_partitions=1, clock=clock, group_load_time_ms=37) as kafka:
        kafka.create_topic("t", 2)
        kafka.member("a", "g", ["t"], session_timeout_ms=6_000)
        instants = visited(kafka.scheduler)
        kafka.run(1_000, step_ms=100)
        assert set(range(0, 1_000, 100)) <= set(instants)
        assert any(instant % 100 for instant in instants)


class DueTimers(FakeTimers):
    """A FakeTimers that says when firing it would do anything (EventScheduler fires it only then)."""

    def due(self, now_ms):
        return bool(self.deadlines) and self.deadlines[0] <= now_ms


def _two_sources(scheduler_type):
    clock = MockClock(0)
    scheduler = scheduler_type(clock)
    told, untold = DueTimers(clock, [30, 70]), FakeTimers(clock, [50])
    scheduler.add_timers(told)
    scheduler.add_timers(untold)
    instants = visited(scheduler)
    scheduler.run_until_ms(100)
    return instants, told.fired, untold.fired


def test_event_scheduler_visits_the_same_instants_but_fires_a_source_only_when_due():
    plain = _two_sources(Scheduler)
    instants, told_fired, untold_fired = _two_sources(EventScheduler)
    assert instants == plain[0] == [0, 30, 50, 70]
    assert plain[1] == plain[2] == [0, 30, 50, 70]  # the plain scheduler fires every source every instant
    assert told_fired == [30, 70]
    assert untold_fired == [0, 30, 50, 70]  # no due(): fired at every instant, as before


def test_event_scheduler_drains_a_member_without_completion_hooks_at_every_instant():
    clock = MockClock(0)
    scheduler = EventScheduler(clock)
    runner = FakeRunner(clock, deadline_ms=40)
    scheduler.add_member("m", runner, PollCadence(lambda now: None, 25, 0))
    instants = visited(scheduler)
    scheduler.run_until_ms(60)
    assert instants == [0, 25, 40, 50]
    assert runner.steps == 2 * len(instants)  # before and after the timers, as the plain scheduler


class QuietTransport:
    """Nothing ever on its way, and it can say so (the hooks the event scheduler uses)."""

    on_completion_scheduled = None

    def completion_due(self, now_ms):
        return False

    def next_completion_ms(self):
        return None


def test_event_scheduler_tells_hooks_whether_a_member_was_touched():
    clock = MockClock(0)
    scheduler = EventScheduler(clock)
    scheduler.add_timers(DueTimers(clock, [10, 20]))
    polls = []
    runner = FakeRunner(clock)
    runner.transport = QuietTransport()
    scheduler.add_member("m", runner, PollCadence(polls.append, 20, 0))
    seen = []
    scheduler.after_instant.append(lambda now: seen.append((now, scheduler.touched, scheduler.touched_keys)))
    scheduler.run_until_ms(30)
    # Polled at 0 (the first instant of a run: anything may have changed) and 20 (touched: "m");
    # at 10 only the timer source fired.
    assert seen == [(0, True, None), (10, False, set()), (20, True, {"m"})]
