"""What every simulated fault kind knows, and what it may touch in a simulation.

A fault kind (FoundationDB's simulated faults are the model) is one class: its name in a
schedule line, the targets it aims at, how its line is read and printed, how it is drawn from a
seed's fault stream, what it does to the simulation (and how that is undone ``duration_ms``
later), and how a failing fault is made smaller when a schedule is shrunk.  The kinds are listed
once, in :data:`kgroup.sim.faults.FAULT_KINDS`; the schedule, the simulator and the shrinker only
ask that registry.

A kind touches the simulation only through :class:`FaultContext`, so the kinds need not import the
simulator (which imports them through the schedule).
"""
from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Callable, Dict, Optional, Protocol, Sequence, Tuple

import attrs

if TYPE_CHECKING:  # the schedule imports this package: its types are for the checker only
    from kgroup.core.cluster import ClusterStateMachine
    from kgroup.sim.app import ConsumerApp
    from kgroup.sim.network import SimNetwork
    from kgroup.sim.schedule import Fault, FaultPlan
    from kgroup.io.clock import MockClock
    from kgroup.testing.in_memory_kafka import InMemoryKafka
    from kgroup.testing.scheduler import Scheduler

__all__ = ["BROKER", "LINK", "MEMBER", "TOPIC", "FaultContext", "FaultDraw", "FaultKind", "TargetKind",
           "Undo"]

#: Undoes an applied fault (called ``duration_ms`` after it began, or when everything is healed).
Undo = Callable[[], None]


@attrs.frozen
class TargetKind:
    """What a fault aims at: a name for messages and the pattern of a valid target."""

    description: str
    pattern: str

    def accepts(self, target: str) -> bool:
        return re.fullmatch(self.pattern, target) is not None


#: A member (``m0``...) or a joiner (``j0``...).
MEMBER = TargetKind("a member (m<i> or j<i>)", r"[mj]\d+")
#: A broker, or ``group``: whichever broker coordinates the group when the fault fires.
BROKER = TargetKind("a broker (b<id>) or group", r"b\d+|group")
#: A (member, broker) link: both ways (``m0-b1``, ``m0-*`` every broker) or one way (``m0>b1``, ``b1>m0``).
LINK = TargetKind("a link (m0-b1, m0>b1, b1>m0, m0-*)", r"[mj]\d+[->](?:b\d+|\*)|(?:b\d+|\*)>[mj]\d+")
#: A topic name.
TOPIC = TargetKind("a topic", r"[\w.-]+")


class FaultContext(Protocol):
    """The parts of a running simulation a fault may touch (the simulator's ``_Simulation``)."""

    @property
    def clock(self) -> MockClock: ...

    @property
    def kafka(self) -> InMemoryKafka: ...

    @property
    def cluster(self) -> ClusterStateMachine: ...

    @property
    def network(self) -> SimNetwork: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def apps(self) -> Dict[str, ConsumerApp]:
        """The running applications by member name."""

    @property
    def group_id(self) -> str: ...

    @property
    def topic(self) -> str: ...

    @property
    def aux_topic(self) -> str:
        """The second topic a ``resubscribe`` adds to a subscription."""

    @property
    def max_members(self) -> int:
        """How many applications may run at once (the configured members and a few joiners)."""

    @property
    def max_poll_interval_ms(self) -> int: ...

    @property
    def bounce_leaves_cleanly(self) -> bool:
        """Whether a static member's bounce closes (leaves with epoch -2) rather than dies (KIP-848)."""

    def start(self, name: str) -> ConsumerApp: ...
    def stop(self, name: str, clean: bool) -> None: ...
    def subscribe(self, app: ConsumerApp, topics: Sequence[str]) -> None: ...
    def restart_broker_if_dead(self, broker: int) -> None: ...


@attrs.frozen
class FaultDraw:
    """What :func:`~kgroup.sim.schedule.generate_schedule` drew for one fault before asking its kind:
    the draws every kind makes, in the order they are made, so a kind's own draws come after them."""

    rng: random.Random
    plan: FaultPlan
    at_ms: int
    duration_ms: int
    member: str
    broker: int
    #: The faults drawn before this one.
    earlier: Sequence[Fault]


class FaultKind:
    """One kind of fault; subclasses set the class attributes and override :meth:`apply`."""

    #: The kind's word in a schedule line.
    name: str = ""
    target: TargetKind = MEMBER
    #: Whether ``generate_schedule``'s mixed mode draws it (a new kind drawn by default would change
    #: every seed's schedule: its draw list is part of the seed).
    drawn: bool = True
    #: Drawn only for static members (``group.instance.id``).
    static_only: bool = False
    #: The smallest duration :meth:`shrink` tries (0: the fault is undone at once).
    min_duration_ms: int = 0

    def __repr__(self) -> str:
        return f"<fault kind {self.name}>"

    # -- the schedule line ------------------------------------------------------------------------

    def format(self, fault: Fault) -> str:
        """``<at> ms  <kind> <target> [for <duration> ms] [value <n>]``."""
        text = f"{fault.at_ms:>6} ms  {fault.kind} {fault.target}"
        if fault.duration_ms:
            text += f" for {fault.duration_ms} ms"
        if fault.value:
            text += f" value {fault.value}"
        return text

    def target_error(self, target: str) -> Optional[str]:
        """Why ``target`` is no target of this kind (None: it is one)."""
        if self.target.accepts(target):
            return None
        return f"{self.name} aims at {self.target.description}, not {target!r}"

    # -- drawing ------------------------------------------------------------------------------------

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        """The fault's target, duration and value; may draw more from ``drawn.rng`` (after the
        common draws).  By default: the drawn member, for the drawn duration."""
        return drawn.member, drawn.duration_ms, 0

    # -- the simulation -----------------------------------------------------------------------------

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        """Do the fault at ``now_ms``; return what undoes it ``duration_ms`` later (None: nothing to
        undo, or the fault did nothing)."""
        raise NotImplementedError(f"fault kind {self.name} does not say how it applies")

    # -- shrinking ----------------------------------------------------------------------------------

    def shrink(self, fault: Fault) -> Sequence[Fault]:
        """Smaller versions of ``fault`` to try, smallest first: by default the shortest duration
        (:attr:`min_duration_ms`), then half the duration.  A fault that cannot be smaller gives ()."""
        return _shorter(fault, self.min_duration_ms)


def _shorter(fault: Fault, min_duration_ms: int) -> Tuple[Fault, ...]:
    durations = sorted({min_duration_ms, max(min_duration_ms, fault.duration_ms // 2)})
    return tuple(attrs.evolve(fault, duration_ms=duration_ms) for duration_ms in durations
                 if duration_ms < fault.duration_ms)
