"""Faults of the network between one member and the brokers (see :mod:`kgroup.sim.network`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import attrs

from kgroup.sim.faults.base import LINK, FaultContext, FaultDraw, FaultKind, Undo

if TYPE_CHECKING:
    from kgroup.sim.schedule import Fault

__all__ = ["LossyFault", "PartitionFault", "ResetFault"]

#: The drop percentages a ``lossy`` fault is drawn with.
LOSSY_PERCENTS = (10, 30, 60)


@attrs.frozen
class _LinkTarget:
    """A link target read: ``m0-b1`` both ways, ``m0>b1`` requests only, ``b1>m0`` answers only;
    broker -1 is ``*`` (every broker)."""

    member: str
    broker: int
    to_broker: bool
    to_member: bool

    @classmethod
    def of(cls, target: str) -> "_LinkTarget":
        if ">" in target:
            source, destination = target.split(">")
            to_broker = source.startswith(("m", "j"))
            member, broker_text = (source, destination) if to_broker else (destination, source)
            to_member = not to_broker
        else:
            member, broker_text = target.split("-")
            to_broker = to_member = True
        return cls(member, -1 if broker_text == "*" else int(broker_text.lstrip("b")), to_broker, to_member)


class _LinkFault(FaultKind):
    target = LINK

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        member, broker = drawn.member, drawn.broker
        target = drawn.rng.choice((f"{member}-b{broker}", f"{member}>b{broker}", f"b{broker}>{member}",
                                   f"{member}-*"))
        return target, drawn.duration_ms, 0


class PartitionFault(_LinkFault):
    """The link is cut (one way or both) for the duration."""

    name = "partition"

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        link, network = _LinkTarget.of(fault.target), context.network
        network.cut(link.member, link.broker, link.to_broker, link.to_member, 1)
        return lambda: network.cut(link.member, link.broker, link.to_broker, link.to_member, -1)


class LossyFault(_LinkFault):
    """The link drops ``value`` % of its messages for the duration."""

    name = "lossy"

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        target, duration_ms, _value = super().draw(drawn)
        return target, duration_ms, drawn.rng.choice(LOSSY_PERCENTS)

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        link, network = _LinkTarget.of(fault.target), context.network
        network.set_drop(link.member, link.broker, fault.value)
        return lambda: network.set_drop(link.member, link.broker, 0)

    def shrink(self, fault: Fault) -> Sequence[Fault]:
        fewer = [attrs.evolve(fault, value=percent) for percent in LOSSY_PERCENTS if percent < fault.value]
        return tuple(fewer[:1]) + tuple(super().shrink(fault))


class ResetFault(_LinkFault):
    """Every request in flight on the link (``m0-b1``, or ``m0-*``: to every broker) fails at once."""

    name = "reset"

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        super().draw(drawn)  # the target draw is made (and discarded), as every link fault makes it
        return f"{drawn.member}-b{drawn.broker}", 0, 0

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        link = _LinkTarget.of(fault.target)
        brokers = [link.broker] if link.broker != -1 else list(context.cluster.brokers) + [0]
        for key in brokers:
            context.network.reset(link.member, key, context.clock())
        return None

    def shrink(self, fault: Fault) -> Sequence[Fault]:
        return ()
