"""Faults of a topic: it grows."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import attrs

from kgroup.sim.faults.base import TOPIC, FaultContext, FaultDraw, FaultKind, Undo

if TYPE_CHECKING:
    from kgroup.sim.schedule import Fault

__all__ = ["AddPartitionsFault"]


class AddPartitionsFault(FaultKind):
    """The topic grows by ``value`` partitions (at least one); the members refresh their metadata."""

    name = "add_partitions"
    target = TOPIC

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        return drawn.plan.topic, 0, drawn.rng.randint(1, 3)

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        def grow(now_ms: int) -> list:
            context.cluster.add_partitions(fault.target, max(1, fault.value))
            return []
        context.kafka.hub.apply(grow)
        for app in context.apps.values():
            app.member.update_metadata(context.kafka.partitions_per_topic(), context.clock())
        return None

    def shrink(self, fault: Fault) -> Sequence[Fault]:
        return (attrs.evolve(fault, value=1),) if fault.value > 1 else ()
