"""One way to drive mock time: jump to the earliest deadline of everything driven.

:class:`Scheduler` asks everything it drives for its next deadline and moves the
clock straight there with :func:`kgroup.io.clock.autojump`, as trio's
``MockClock`` with ``autojump_threshold=0`` does: nothing happens between two
deadlines, so nothing is lost by skipping them.  Everything it drives is a timed
component (``get_timer()`` / ``handle_timer(now_ms)``, :mod:`kgroup.io.clock`):
the in-process hub, the simulator's network and producers, an application, a
test's coordinator driver; a member is asked ``get_timer()`` and stepped
through its runner.

What it drives, in this order at every instant it visits:

1. timed callbacks (``call_at``) that are due, earliest first, ties in the order
   they were scheduled (fault events; a callback may schedule more);
2. applications: each member's ``handle_timer(now_ms)`` when its ``get_timer()``
   has come (the application's ``poll()`` loop; a member counts
   ``max.poll.interval.ms`` from these, so a driver picks a cadence);
3. every member's runner, stepped until its transport has nothing more;
4. timed components (the in-process hub, a coordinator driver): ``handle_timer(now_ms)``;
5. every member's runner again (the timers may have answered requests);
6. ``after_instant`` hooks (invariant checks; they observe the members, never call them).

Phases 3 and 5 skip a member with nothing due when its transport can tell (see
:class:`DrivenMember`); the instants visited and everything done at them are the same.

The next instant is the earliest of: the members' ``get_timer()``, their
applications', the timed components', the next timed callback and the caller's
limit; at least 1 ms after this one.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Callable, List, Optional, Tuple

from kgroup.errors import ConfigError
from kgroup.io.clock import MockClock, TimedComponent, autojump
from kgroup.io.runner import MemberRunner

__all__ = ["DrivenMember", "EventScheduler", "NEVER", "PollCadence", "Scheduler"]

#: "No deadline" for the event scheduler's cached times (later than any instant a run reaches).
NEVER = 1 << 62

#: How many transport rounds one member gets per phase before the scheduler moves on (an
#: in-process answer can prompt a new request at once: join -> sync -> fetch offsets).
DRAIN_ROUNDS = 20


class PollCadence:
    """An application that polls every ``interval_ms``: ``handle_timer(now_ms)`` runs ``on_poll``."""

    def __init__(self, on_poll: Callable[[int], None], interval_ms: int, first_ms: int) -> None:
        if interval_ms < 1:
            raise ConfigError(f"an application poll cadence must be at least 1 ms, got {interval_ms}")
        self.on_poll = on_poll
        self.interval_ms = interval_ms
        self.next_ms = first_ms

    def get_timer(self) -> Optional[int]:
        return self.next_ms

    def handle_timer(self, now_ms: int) -> None:
        self.next_ms = now_ms + self.interval_ms
        self.on_poll(now_ms)


class DrivenMember:
    """One member the scheduler drives: its runner and, optionally, its application's polls.

    A member is sans-I/O: what ``outbound`` returns changes only when one of its methods is
    called or one of its deadlines comes, and ``get_timer()`` is the earliest instant at
    which it may have something to send.  When the runner's transport can say whether a
    completion is due (``completion_due(now_ms)``, the simulator's network does), the scheduler
    skips the member at an instant where nothing can be due for it: no completion is due and its
    deadline has not come.  The deadline is cached after each drain; ``dirty`` (an application
    poll, a timed callback or an outside call since) means the cache is stale and the member is
    asked again.  Such a drain would step the runner once for nothing.  A transport without
    ``completion_due`` is drained at every instant.
    """

    __slots__ = ("key", "runner", "app", "dirty", "deadline", "completion_due", "poll_at", "completion_at",
                 "deadline_at")

    def __init__(self, key: object, runner: MemberRunner, app: Optional[TimedComponent]) -> None:
        self.key = key
        self.runner = runner
        self.app = app
        #: Something may have changed the member since its deadline was cached.
        self.dirty = True
        self.deadline: Optional[int] = None
        transport = getattr(runner, "transport", None)
        self.completion_due: Optional[Callable[[int], bool]] = getattr(transport, "completion_due", None)
        # EventScheduler only: the application's next poll and the earliest completion on its way
        # (NEVER: none), kept between the calls that can move them.
        self.poll_at = NEVER
        self.completion_at = NEVER
        #: ``deadline`` as a number (NEVER: none; -1: the transport cannot tell, due at every instant).
        self.deadline_at = NEVER if self.completion_due is not None else -1

    def completion_scheduled(self, due_ms: int) -> None:
        """The transport put a completion on its way, due at ``due_ms`` (EventScheduler)."""
        if due_ms < self.completion_at:
            self.completion_at = due_ms

    def get_timer(self) -> Optional[int]:
        if self.dirty or self.completion_due is None:
            return self.runner.member.get_timer()
        return self.deadline

    def drain(self, now_ms: Optional[int] = None) -> None:
        """Step the runner until a round brings no completion (bounded); with ``now_ms``, only when
        something may be due (see the class doc)."""
        due = self.completion_due
        if now_ms is not None and due is not None and not due(now_ms):
            # A dirty member's deadline is asked again: a poll that made nothing due needs no step.
            deadline = self.runner.member.get_timer() if self.dirty else self.deadline
            if deadline is None or deadline > now_ms:
                self.deadline = deadline
                self.dirty = False
                return
        for _ in range(DRAIN_ROUNDS):
            if not self.runner.step(0):
                break
        if due is not None:
            self.deadline = self.runner.member.get_timer()
            self.dirty = False


class Scheduler:
    #: Whether anything at the last instant could have changed a member, and which (None: any; see
    #: :class:`EventScheduler`); this scheduler does not keep track, so always, any.
    touched = True
    touched_keys: Optional[set] = None

    def __init__(self, clock: MockClock) -> None:
        self.clock = clock
        self.members: dict = {}
        self.timers: List[TimedComponent] = []
        self.after_instant: List[Callable[[int], None]] = []
        self._timed: List[Tuple[int, int, Callable[[int], None]]] = []
        self._sequence = itertools.count()

    # -- what it drives -------------------------------------------------------------------------

    def add_member(self, key: object, runner: MemberRunner,
                   app: Optional[TimedComponent] = None) -> DrivenMember:
        if key in self.members:
            raise ConfigError(f"the scheduler already drives a member {key!r}")
        driven = DrivenMember(key, runner, app)
        self.members[key] = driven
        return driven

    def remove_member(self, key: object) -> Optional[DrivenMember]:
        return self.members.pop(key, None)

    def add_timers(self, source: TimedComponent) -> None:
        self.timers.append(source)

    def call_at(self, when_ms: int, callback: Callable[[int], None]) -> None:
        """Run ``callback(now_ms)`` at the first instant at or after ``when_ms``."""
        heapq.heappush(self._timed, (when_ms, next(self._sequence), callback))

    def pending_calls(self) -> List[Callable[[int], None]]:
        """Take the callbacks not yet due, in the order they would have run."""
        pending = [callback for _when, _seq, callback in sorted(self._timed)]
        self._timed = []
        return pending

    # -- driving --------------------------------------------------------------------------------

    def instant(self) -> None:
        """Do everything due at the clock's current time (phases 1-6 of the module doc)."""
        # A callback may move the clock itself (a clean leave waits for its LeaveGroup answer):
        # read it again after each one, so later phases see the time it left.
        called = False
        while self._timed and self._timed[0][0] <= self.clock():
            _when, _seq, callback = heapq.heappop(self._timed)
            callback(self.clock())
            called = True
        if called:
            self.touch_all()  # a fault may have done anything to any member
        now = self.clock()
        for driven in list(self.members.values()):
            app = driven.app
            if app is None:
                continue
            due = app.get_timer()
            if due is not None and due <= now:
                app.handle_timer(now)
                driven.dirty = True  # an application touches its own member only
        self._drain_due(list(self.members.values()), now)
        for source in self.timers:
            source.handle_timer(now)
        self._drain_due(list(self.members.values()), now)
        for hook in self.after_instant:
            hook(now)

    @staticmethod
    def _drain_due(members: List[DrivenMember], now: int) -> None:
        # DrivenMember.drain's skip, inlined for the clean members: this runs twice per member per
        # instant and most of them have nothing due.
        for driven in members:
            due = driven.completion_due
            if due is not None and not driven.dirty and not due(now):
                deadline = driven.deadline
                if deadline is None or deadline > now:
                    continue
            driven.drain(now)

    def next_instant_ms(self, limit_ms: int) -> int:
        """The earliest deadline of anything driven, capped at ``limit_ms``; at least 1 ms ahead."""
        # One loop, no intermediate lists: this runs once per instant.
        best = limit_ms
        for source in self.timers:
            deadline = source.get_timer()
            if deadline is not None and deadline < best:
                best = deadline
        if self._timed and self._timed[0][0] < best:
            best = self._timed[0][0]
        for driven in self.members.values():
            app = driven.app
            if app is not None:
                due = app.get_timer()
                if due is not None and due < best:
                    best = due
            # DrivenMember.get_timer, inlined.
            if driven.dirty or driven.completion_due is None:
                deadline = driven.runner.member.get_timer()
            else:
                deadline = driven.deadline
            if deadline is not None and deadline < best:
                best = deadline
        return max(self.clock() + 1, best)

    def app_timer_moved(self, key: object) -> None:
        """The application of member ``key`` may be due earlier for a reason the scheduler cannot see;
        this scheduler asks every application at every instant, so there is nothing to do."""

    def touch_all(self) -> None:
        """Something outside the scheduler may have called the members: drain each at the next instant."""
        for driven in self.members.values():
            driven.dirty = True

    def run_until_ms(self, end_ms: int) -> None:
        """Visit every instant that has something due before ``end_ms``; the clock ends at ``end_ms``."""
        self.touch_all()  # the caller may have touched members since the last run
        autojump(self.clock, end_ms, self.instant, self.next_instant_ms)

    def run_for(self, duration_ms: int) -> None:
        self.run_until_ms(self.clock() + duration_ms)

    def run_until(self, condition: Callable[[], bool], limit_ms: int, check_every_ms: int) -> int:
        """Run until ``condition()`` holds, checked every ``check_every_ms``; return the mock time
        taken; raise ``AssertionError`` once ``limit_ms`` has passed without it."""
        start = self.clock()
        while not condition():
            if self.clock() - start >= limit_ms:
                raise AssertionError(f"condition not reached within {limit_ms} ms of mock time")
            self.run_for(check_every_ms)
        return self.clock() - start


class EventScheduler(Scheduler):
    """The :class:`Scheduler`'s instants and phases, doing only what is due at each.

    The plain scheduler asks every application, member and timed component at every instant whether
    anything is due, and runs every timed component's ``handle_timer`` at every instant.  This one
    keeps each answer until something that can change it happens, and runs only what is due:

    - an application's next poll is asked again only after it polled, after its member was
      stepped (a loop blocked in a commit wakes on its member's news) or after a timed callback;
    - a member's deadline is cached after each drain (as :class:`DrivenMember` already does), and
      the earliest completion on its way is told by the transport
      (``on_completion_scheduled``) and read back after each drain;
    - a timed component's ``handle_timer`` runs only when its optional ``due(now_ms)`` hint says
      so (one without ``due`` runs at every instant, as before), and it must answer
      ``get_timer()`` cheaply: it is asked at every instant (the in-process hub with
      ``cache_timer``, the simulator's network and producers do).

    So it needs members whose transport has ``completion_due``, ``next_completion_ms`` and
    ``on_completion_scheduled`` (the simulator's network; a member without them is drained at
    every instant), applications whose ``get_timer()`` changes only through the calls above,
    and timed components whose ``due`` is true whenever ``handle_timer`` would do anything.  The instants
    visited, and what is done at each and in which order, are the plain scheduler's.

    ``touched`` tells the ``after_instant`` hooks whether anything at the instant could have changed
    a member (a poll, a member stepped, a timed callback, or the caller since the last run), and
    ``touched_keys`` which members (None: any): a hook that only looks at members may skip an
    untouched instant, or look only at the touched members.
    """

    def __init__(self, clock: MockClock) -> None:
        super().__init__(clock)
        self.touched = True
        #: The keys of the members polled or stepped at the last instant; None: any member may have
        #: changed (a timed callback, a member added or removed, the caller since the last run).
        self.touched_keys: Optional[set] = None
        self._touched_next = True
        #: Each timed component with its ``due`` (None: it runs at every instant).
        self._firing: List[Tuple[TimedComponent, Optional[Callable[[int], bool]]]] = []

    def add_member(self, key: object, runner: MemberRunner,
                   app: Optional[TimedComponent] = None) -> DrivenMember:
        driven = super().add_member(key, runner, app)
        transport: Any = getattr(runner, "transport", None)
        if hasattr(transport, "on_completion_scheduled") and hasattr(transport, "next_completion_ms"):
            transport.on_completion_scheduled = driven.completion_scheduled
            next_completion = transport.next_completion_ms()
            driven.completion_at = NEVER if next_completion is None else next_completion
        else:
            # The transport cannot tell what is on its way: the member is drained at every instant.
            driven.completion_due = None
            driven.deadline_at = -1
        self._touched_next = True
        return driven

    def remove_member(self, key: object) -> Optional[DrivenMember]:
        self._touched_next = True
        return super().remove_member(key)

    def add_timers(self, source: TimedComponent) -> None:
        super().add_timers(source)
        self._firing.append((source, getattr(source, "due", None)))

    def touch_all(self) -> None:
        super().touch_all()
        self._touched_next = True

    def app_timer_moved(self, key: object) -> None:
        """The application of member ``key`` may be due earlier for a reason the scheduler cannot see
        (the simulator's long poll: records arrived): ask its ``get_timer()`` again now."""
        driven = self.members.get(key)
        if driven is not None and driven.app is not None:
            due = driven.app.get_timer()
            driven.poll_at = NEVER if due is None else due

    def instant(self) -> None:
        clock = self.clock
        timed = self._timed
        if timed and timed[0][0] <= clock():
            # As Scheduler.instant: a callback may move the clock; read it again after each one.
            while timed and timed[0][0] <= clock():
                _when, _seq, callback = heapq.heappop(timed)
                callback(clock())
            self.touch_all()
        everything, self._touched_next = self._touched_next, False
        keys: set = set()
        now = clock()
        members = list(self.members.values())
        for driven in members:
            app = driven.app
            if app is None:
                continue
            if driven.dirty:
                due = app.get_timer()
                driven.poll_at = NEVER if due is None else due
            if driven.poll_at <= now:
                app.handle_timer(now)
                driven.dirty = True  # an application touches its own member only
                keys.add(driven.key)
        for driven in members:
            if driven.dirty or driven.deadline_at <= now or driven.completion_at <= now:
                if self._drain(driven, now):
                    keys.add(driven.key)
        for source, due_now in self._firing:
            if due_now is None or due_now(now):
                source.handle_timer(now)
        for driven in list(self.members.values()):
            if driven.dirty or driven.deadline_at <= now or driven.completion_at <= now:
                if self._drain(driven, now):
                    keys.add(driven.key)
        self.touched = everything or bool(keys)
        self.touched_keys = None if everything else keys
        for hook in self.after_instant:
            hook(now)

    @staticmethod
    def _drain(driven: DrivenMember, now: int) -> bool:
        """:meth:`DrivenMember.drain`, then the application's next poll and the next completion
        read again; True if the member was stepped."""
        was_dirty = driven.dirty
        stepped = True
        due = driven.completion_due
        if due is not None and not due(now):
            deadline = driven.runner.member.get_timer() if was_dirty else driven.deadline
            if deadline is None or deadline > now:
                driven.deadline = deadline
                driven.deadline_at = NEVER if deadline is None else deadline
                driven.dirty = False
                stepped = False
        if stepped:
            # The first round sends only if the member may have something due; a later round never
            # does (the round before ended by sending what its completions made due, at this instant).
            send_first = due is None or was_dirty or driven.deadline_at <= now
            runner = driven.runner
            for _ in range(DRAIN_ROUNDS):
                if not (runner.step(0) if send_first else runner.step(0, send_first=False)):
                    break
                send_first = False
            if due is not None:
                deadline = driven.deadline = driven.runner.member.get_timer()
                driven.deadline_at = NEVER if deadline is None else deadline
                driven.dirty = False
        if stepped or was_dirty:
            app = driven.app
            if app is not None:
                poll = app.get_timer()
                driven.poll_at = NEVER if poll is None else poll
            if due is not None:
                next_completion = driven.runner.transport.next_completion_ms()  # type: ignore[attr-defined]
                driven.completion_at = NEVER if next_completion is None else next_completion
        return stepped

    def next_instant_ms(self, limit_ms: int) -> int:
        best = limit_ms
        for source in self.timers:
            deadline = source.get_timer()
            if deadline is not None and deadline < best:
                best = deadline
        if self._timed and self._timed[0][0] < best:
            best = self._timed[0][0]
        for driven in self.members.values():
            if driven.dirty or driven.deadline_at < 0:
                # Dirty (touched from outside since its last drain), or a transport that cannot tell:
                # ask, as the plain scheduler does.
                app = driven.app
                if app is not None:
                    due = app.get_timer()
                    if due is not None and due < best:
                        best = due
                deadline = driven.runner.member.get_timer()
                if deadline is not None and deadline < best:
                    best = deadline
                continue
            if driven.poll_at < best:
                best = driven.poll_at
            if driven.deadline_at < best:
                best = driven.deadline_at
            if driven.completion_at < best:
                best = driven.completion_at
        now = self.clock()
        return best if best > now else now + 1
