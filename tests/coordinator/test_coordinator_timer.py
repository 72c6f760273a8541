"""CoordinatorTimer: every deadline is scheduled with the operation it runs (Kafka's CoordinatorTimer),
so the coordinator fires timers without dispatching on their keys (issue 25, point 5)."""
from __future__ import annotations

from kgroup.core.coordinator_common.timer import CoordinatorTimer


def test_due_operations_run_at_handle_timer_earliest_first_with_the_time_they_fire_at():
    timer = CoordinatorTimer()
    ran: list = []
    timer.schedule("late", 30, lambda now_ms: ran.append(("late", now_ms)))
    timer.schedule("early", 10, lambda now_ms: ran.append(("early", now_ms)))
    assert timer.get_timer() == 10
    timer.handle_timer(9)
    assert ran == []
    timer.handle_timer(40)
    assert ran == [("early", 40), ("late", 40)]
    assert timer.get_timer() is None and "early" not in timer


def test_scheduling_a_key_again_replaces_its_deadline_and_its_operation():
    timer = CoordinatorTimer()
    ran: list = []
    timer.schedule("k", 10, lambda now_ms: ran.append("first"))
    timer.schedule("k", 20, lambda now_ms: ran.append("second"))
    timer.handle_timer(15)
    assert ran == [] and timer.deadline_of("k") == 20
    timer.handle_timer(20)
    assert ran == ["second"]


def test_cancel_drops_the_operation_and_reschedule_keeps_it():
    timer = CoordinatorTimer()
    ran: list = []
    timer.schedule("gone", 10, lambda now_ms: ran.append("gone"))
    timer.cancel("gone")
    assert timer.reschedule("gone", 20) is False and "gone" not in timer  # nothing to move
    timer.schedule("moved", 10, lambda now_ms: ran.append(("moved", now_ms)))
    assert timer.reschedule("moved", 25) is True and timer.deadline_of("moved") == 25
    timer.handle_timer(24)
    assert ran == []
    timer.handle_timer(25)
    assert ran == [("moved", 25)]


def test_an_operation_may_schedule_more_work_that_is_due_in_the_same_call():
    timer = CoordinatorTimer()
    ran: list = []

    def first(now_ms: int) -> None:
        ran.append("first")
        timer.schedule("chained", now_ms, lambda at_ms: ran.append("chained"))

    timer.schedule("first", 5, first)
    timer.handle_timer(5)
    assert ran == ["first", "chained"] and timer.get_timer() is None


def test_a_key_re_armed_by_an_earlier_operation_of_the_same_batch_waits_for_its_new_deadline():
    timer = CoordinatorTimer()
    ran: list = []
    timer.schedule("a", 5, lambda now_ms: timer.schedule("b", 50, lambda at_ms: ran.append("b again")))
    timer.schedule("b", 5, lambda now_ms: ran.append("b"))
    timer.handle_timer(5)
    assert ran == [] and timer.deadline_of("b") == 50
    timer.handle_timer(50)
    assert ran == ["b again"]


def test_clear_forgets_every_deadline():
    timer = CoordinatorTimer()
    ran: list = []
    timer.schedule("a", 5, ran.append)
    timer.clear()
    timer.handle_timer(100)
    assert ran == [] and timer.get_timer() is None and "a" not in timer
