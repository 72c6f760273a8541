"""Faults as data: a schedule of timed events, printed one line an event and parsed back.

A :class:`Fault` is self-contained: a fault with ``duration_ms`` undoes itself
that long after it began (a crashed member restarts, a partition heals, a killed
broker comes back), so removing one line of a schedule removes the whole fault
and shrinking never leaves half of one behind.

Line format (``#`` starts a comment; :func:`parse_schedule` reads what
:meth:`Schedule.to_text` writes)::

    <at> ms  <kind> <target> [for <duration> ms] [value <n>]

    4200 ms  crash m1 for 800 ms
    5000 ms  partition m2>b1 for 1500 ms        # member m2 -> broker 1 only
    5100 ms  partition m0-* for 900 ms          # m0 cut off from every broker
    7000 ms  lossy m3-b2 for 2000 ms value 30   # 30 % of messages dropped
    9000 ms  add_partitions events value 2

Targets: members ``m0``, ``m1``..., joiners ``j0``..., brokers ``b1``...,
links ``m0-b1`` (both ways), ``m0>b1`` (member to broker), ``b1>m0`` (broker to
member), ``m0-*`` (every broker), ``group`` (whatever broker coordinates the
group when the fault fires), a topic name.

Each kind is one class of :mod:`kgroup.sim.faults`, listed in its registry
(:data:`~kgroup.sim.faults.FAULT_KINDS`): it checks its target, prints its line,
draws its parameters, applies (and undoes) itself and says how it shrinks.

:func:`generate_schedule` draws a schedule from the seed's own fault stream
(``Random("faults-<seed>")``), never from the application's.
"""
from __future__ import annotations

import random
import re
from typing import List, Optional, Sequence, Tuple

import attrs

from kgroup.errors import ConfigError
from kgroup.sim.faults import DRAWN_FAULT_KINDS, FAULT_KINDS, FaultDraw, FaultKind

__all__ = ["Fault", "FaultPlan", "Schedule", "ScheduleFormatError", "generate_schedule", "parse_schedule"]

_LINE = re.compile(r"^\s*(\d+) ms\s+(\w+)\s+(\S+)(?:\s+for (\d+) ms)?(?:\s+value (\d+))?\s*$")


class ScheduleFormatError(ValueError):
    """A schedule line that does not parse, names an unknown fault, or aims a fault at a wrong target."""


def _known_kind(fault: "Fault", attribute: object, kind: str) -> None:
    if kind not in FAULT_KINDS:
        raise ScheduleFormatError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")


@attrs.frozen
class Fault:
    """One timed event: ``kind`` at ``at_ms`` aimed at ``target``, undone after ``duration_ms`` (0: never
    or at once); ``value`` is the kind's number (drop percentage, partitions added)."""

    at_ms: int
    kind: str = attrs.field(validator=_known_kind)
    target: str
    duration_ms: int = 0
    value: int = 0

    def __attrs_post_init__(self) -> None:
        error = self.fault_kind.target_error(self.target)
        if error is not None:
            raise ScheduleFormatError(error)

    @property
    def fault_kind(self) -> FaultKind:
        """The class of fault this one is (its parsing, printing, applying and shrinking)."""
        return FAULT_KINDS[self.kind]

    @property
    def end_ms(self) -> int:
        return self.at_ms + self.duration_ms

    def __str__(self) -> str:
        return self.fault_kind.format(self)


@attrs.frozen
class Schedule:
    """The faults of one run, in time order (ties in the order written)."""

    faults: Tuple[Fault, ...] = ()
    seed: Optional[int] = None

    def to_text(self) -> str:
        header = [] if self.seed is None else [f"# seed {self.seed}"]
        return "\n".join(header + [str(fault) for fault in self.faults]) + "\n"

    def without(self, index: int) -> "Schedule":
        return attrs.evolve(self, faults=self.faults[:index] + self.faults[index + 1:])

    def with_faults(self, faults: Sequence[Fault]) -> "Schedule":
        return attrs.evolve(self, faults=tuple(faults))

    @property
    def last_fault_end_ms(self) -> int:
        return max((f.end_ms for f in self.faults), default=0)


def parse_schedule(text: str) -> Schedule:
    """The schedule :meth:`Schedule.to_text` printed (comments and blank lines ignored)."""
    faults: List[Fault] = []
    seed: Optional[int] = None
    for number, raw in enumerate(text.splitlines(), 1):
        line, _, comment = raw.partition("#")
        seed_match = re.match(r"\s*seed (\d+)", comment)
        if not line.strip() and seed_match and seed is None:
            seed = int(seed_match.group(1))
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match is None:
            raise ScheduleFormatError(f"line {number}: cannot read {raw!r} "
                                      "(expected '<at> ms <kind> <target> [for <n> ms] [value <n>]')")
        at_ms, kind, target, duration_ms, value = match.groups()
        try:
            faults.append(Fault(int(at_ms), kind, target, int(duration_ms or 0), int(value or 0)))
        except ScheduleFormatError as error:
            raise ScheduleFormatError(f"line {number}: {error}") from None
    return Schedule(tuple(faults), seed)


@attrs.frozen
class FaultPlan:
    """What :func:`generate_schedule` may draw from."""

    members: Tuple[str, ...]
    brokers: Tuple[int, ...]
    topic: str
    static: bool
    window_ms: Tuple[int, int]
    max_faults: int
    session_timeout_ms: int
    max_poll_interval_ms: int
    #: ``mixed`` (every drawn kind), ``static-bounce`` (only bounces within half the session timeout),
    #: ``none``.
    mode: str = "mixed"
    #: Kinds the mixed mode does not draw by default (``freeze``) that this plan draws too, after the
    #: others (a seed without them keeps its schedule).
    extra_kinds: Tuple[str, ...] = attrs.field(default=())

    @extra_kinds.validator
    def _undrawn_kinds(self, attribute: object, extra_kinds: Tuple[str, ...]) -> None:
        for name in extra_kinds:
            if name not in FAULT_KINDS or name in DRAWN_FAULT_KINDS or extra_kinds.count(name) > 1:
                undrawn = [n for n in FAULT_KINDS if n not in DRAWN_FAULT_KINDS]
                raise ConfigError(f"extra fault kind {name!r} is not one of the kinds drawn only on request "
                                  f"({', '.join(undrawn)}), or is listed twice")


def generate_schedule(seed: int, plan: FaultPlan) -> Schedule:
    """The faults of ``seed``: drawn only from ``Random("faults-<seed>")``."""
    rng = random.Random(f"faults-{seed}")
    first_ms, last_ms = plan.window_ms
    faults: List[Fault] = []
    if plan.mode == "none" or (plan.mode == "mixed" and plan.max_faults == 0):
        return Schedule((), seed)
    if plan.mode == "static-bounce":
        at_ms = first_ms
        for _ in range(rng.randint(1, 3)):
            at_ms += rng.randint(500, 3_000)
            down_ms = rng.randint(50, plan.session_timeout_ms // 2)
            faults.append(Fault(at_ms, "bounce", rng.choice(plan.members), down_ms))
            at_ms += plan.session_timeout_ms
        return Schedule(tuple(faults), seed)
    kinds = [name for name in DRAWN_FAULT_KINDS + plan.extra_kinds
             if plan.static or not FAULT_KINDS[name].static_only]
    for _ in range(rng.randint(1, plan.max_faults)):
        kind = FAULT_KINDS[rng.choice(kinds)]
        # Every fault makes these draws, in this order, whatever its kind; then its kind draws its own.
        at_ms = rng.randint(first_ms, last_ms)
        duration_ms = rng.randint(200, 2 * plan.max_poll_interval_ms)
        member = rng.choice(plan.members)
        broker = rng.choice(plan.brokers)
        drawn = FaultDraw(rng, plan, at_ms, duration_ms, member, broker, faults)
        target, duration_ms, value = kind.draw(drawn)
        faults.append(Fault(at_ms, kind.name, target, duration_ms, value))
    faults.sort(key=lambda f: (f.at_ms, f.kind, f.target))
    return Schedule(tuple(faults), seed)
