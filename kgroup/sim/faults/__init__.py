"""The simulator's fault kinds, each one class, registered once (docs/simulator.md, *Fault kinds*).

Adding a fault kind is one class (in the module of its family, or a new one) and one line in
:data:`FAULT_KINDS` below; the schedule's reader and printer, ``generate_schedule``, the simulator
and the shrinker find it there.
"""
from __future__ import annotations

from typing import Dict, Iterator, Mapping, Tuple

from kgroup.sim.faults.base import FaultContext, FaultDraw, FaultKind, TargetKind, Undo
from kgroup.sim.faults.brokers import (
    ControlledShutdownFault, IsolateBrokerFault, KillBrokerFault, MoveCoordinatorFault, SlowFollowerFault,
)
from kgroup.sim.faults.brokers import PreferredElectionFault
from kgroup.sim.faults.links import LossyFault, PartitionFault, ResetFault
from kgroup.sim.faults.members import (
    BounceFault, CrashFault, FreezeFault, JoinFault, LeaveFault, ResubscribeFault, SlowPollFault,
)
from kgroup.sim.faults.topics import AddPartitionsFault

__all__ = ["DRAWN_FAULT_KINDS", "FAULT_KINDS", "FaultContext", "FaultDraw", "FaultKind", "FaultKindRegistry",
           "TargetKind", "Undo"]


class FaultKindRegistry(Mapping[str, FaultKind]):
    """The fault kinds by name, in the order they were listed."""

    def __init__(self, kinds: Tuple[FaultKind, ...]) -> None:
        self._kinds: Dict[str, FaultKind] = {}
        for kind in kinds:
            if not kind.name or kind.name in self._kinds:
                raise ValueError(f"fault kind {kind!r}: its name must be set and unique")
            self._kinds[kind.name] = kind

    def __getitem__(self, name: str) -> FaultKind:
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)


#: Every fault kind.  The order of the drawn ones is part of every seed's schedule (mixed mode picks
#: a kind with ``rng.choice`` over them in this order): a new kind goes at the end, ``drawn = False``.
FAULT_KINDS = FaultKindRegistry((
    CrashFault(),
    LeaveFault(),
    SlowPollFault(),
    BounceFault(),
    ResubscribeFault(),
    KillBrokerFault(),
    ControlledShutdownFault(),
    IsolateBrokerFault(),
    SlowFollowerFault(),
    MoveCoordinatorFault(),
    PartitionFault(),
    LossyFault(),
    ResetFault(),
    JoinFault(),
    AddPartitionsFault(),
    FreezeFault(),
    PreferredElectionFault(),
))

#: The names of the kinds ``generate_schedule``'s mixed mode draws from, in drawing order.
DRAWN_FAULT_KINDS: Tuple[str, ...] = tuple(name for name, kind in FAULT_KINDS.items() if kind.drawn)
