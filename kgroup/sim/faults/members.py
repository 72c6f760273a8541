"""Faults of one member's process: it dies, leaves, restarts, stalls, freezes, resubscribes, or joins."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

from kgroup.sim.faults.base import FaultContext, FaultDraw, FaultKind, Undo

if TYPE_CHECKING:
    from kgroup.sim.schedule import Fault

__all__ = ["BounceFault", "CrashFault", "FreezeFault", "JoinFault", "LeaveFault", "ResubscribeFault",
           "SlowPollFault"]


class _Restart(FaultKind):
    """The member's process stops (``clean``: after closing its consumer) and starts again
    ``duration_ms`` later; the last member of the group is spared."""

    def clean(self, context: FaultContext) -> bool:
        return False

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        name, apps = fault.target, context.apps
        if name not in apps or len(apps) < 2:
            return None
        context.stop(name, clean=self.clean(context))

        def restart() -> None:
            if name not in apps:
                context.start(name)
        return restart


class CrashFault(_Restart):
    """The process dies without a word; restarts (same static id) after the duration."""

    name = "crash"


class LeaveFault(_Restart):
    """The application closes its consumer (commit, revoke, LeaveGroup); restarts after the duration."""

    name = "leave"

    def clean(self, context: FaultContext) -> bool:
        return True


class BounceFault(_Restart):
    """A static member's restart (same ``group.instance.id``) after the duration.

    A KIP-848 static member restarts through close(), which leaves with epoch -2 so the new process
    may take its place; killed without it, the new process would get UNRELEASED_INSTANCE_ID until the
    session expired (``crash`` shows that).  Other bounces restart without a word, as a classic one does.
    """

    name = "bounce"
    static_only = True

    def clean(self, context: FaultContext) -> bool:
        return context.bounce_leaves_cleanly

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        return drawn.member, drawn.rng.randint(50, drawn.plan.session_timeout_ms // 2), 0


class SlowPollFault(FaultKind):
    """The application stops polling for ``max.poll.interval.ms`` + duration (its heartbeats go on)."""

    name = "slow_poll"

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        app = context.apps.get(fault.target)
        if app is not None:
            app.paused_until_ms = context.clock() + context.max_poll_interval_ms + fault.duration_ms
        return None


class ResubscribeFault(FaultKind):
    """The member subscribes to a second topic for the duration."""

    name = "resubscribe"

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        name = fault.target
        app = context.apps.get(name)
        if app is None:
            return None
        context.subscribe(app, (context.topic, context.aux_topic))
        return lambda: context.subscribe(app, (context.topic,)) if context.apps.get(name) is app else None


class JoinFault(FaultKind):
    """A new member (``j0``, ``j1``... in the order drawn) joins, while the group has room."""

    name = "join"

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        joins = sum(1 for fault in drawn.earlier if fault.kind == self.name)
        return f"j{joins}", 0, 0

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        if fault.target not in context.apps and len(context.apps) < context.max_members:
            context.start(fault.target)
        return None

    def shrink(self, fault: Fault) -> Sequence[Fault]:
        return ()


class FreezeFault(FaultKind):
    """The whole process stops for the duration (a stop-the-world GC pause, a suspended VM): no polls,
    no heartbeats, no answers read; then it resumes where it was, late, believing it still owns its
    partitions.  Unlike ``crash`` it keeps its member id and generation; unlike ``slow_poll`` its
    heartbeats stop too, so a freeze longer than the session timeout gets it expelled (a zombie that
    must learn it was fenced, KIP-345's and Kafka's "consumer paused by GC" case).

    Not drawn by ``generate_schedule``'s mixed mode (that would change every seed's schedule); write
    it in a schedule or add it to :attr:`~kgroup.sim.schedule.FaultPlan.extra_kinds`."""

    name = "freeze"
    drawn = False

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        name = fault.target
        app = context.apps.get(name)
        scheduler = context.scheduler
        if app is None or app.runner is None or name not in scheduler.members:
            return None
        runner = app.runner
        scheduler.remove_member(name)

        def thaw() -> None:
            # Only the frozen process resumes: a crash while frozen replaced or removed it.
            if context.apps.get(name) is app and name not in scheduler.members:
                scheduler.add_member(name, runner, app)
        return thaw
