"""Faults of one broker: killed, shut down, cut off from the controller, replicating slowly."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from kgroup.core.cluster import BrokerState
from kgroup.sim.faults.base import BROKER, FaultContext, FaultDraw, FaultKind, TargetKind, Undo

if TYPE_CHECKING:
    from kgroup.sim.schedule import Fault

__all__ = ["ControlledShutdownFault", "IsolateBrokerFault", "KillBrokerFault", "MoveCoordinatorFault",
           "PreferredElectionFault", "SlowFollowerFault"]

#: How often a ``slow_follower`` fetches from its leaders (a normal follower fetches at once).
SLOW_FOLLOWER_FETCH_INTERVAL_MS = 500


class _BrokerFault(FaultKind):
    """A fault of one live broker that is not isolated: ``b<id>``, or ``group`` (whichever broker
    coordinates the group when the fault fires)."""

    target = BROKER

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        return f"b{drawn.broker}", drawn.duration_ms, 0

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        cluster = context.cluster
        if fault.target == "group":
            broker = context.kafka.coordinator_node(context.group_id)
        else:
            broker = int(fault.target.lstrip("b"))
        if broker is None or broker not in cluster.brokers:
            return None
        if cluster.brokers[broker] is not BrokerState.LIVE or broker in cluster.isolated:
            return None
        return self.apply_to_broker(context, broker)

    def apply_to_broker(self, context: FaultContext, broker: int) -> Undo:
        raise NotImplementedError(f"fault kind {self.name} does not say what it does to a broker")


class KillBrokerFault(_BrokerFault):
    """Killed; restarted after the duration."""

    name = "kill_broker"

    def apply_to_broker(self, context: FaultContext, broker: int) -> Undo:
        context.kafka.kill_broker(broker)
        return lambda: context.restart_broker_if_dead(broker)


class ControlledShutdownFault(_BrokerFault):
    """Leadership moved away first, then shut down; restarted after the duration."""

    name = "controlled_shutdown"

    def apply_to_broker(self, context: FaultContext, broker: int) -> Undo:
        context.kafka.controlled_shutdown(broker)
        return lambda: context.restart_broker_if_dead(broker)


class IsolateBrokerFault(_BrokerFault):
    """A zombie for the duration: cut off from the controller, still believing it leads."""

    name = "isolate_broker"

    def apply_to_broker(self, context: FaultContext, broker: int) -> Undo:
        context.kafka.isolate_broker(broker)
        return lambda: context.kafka.heal_broker(broker)


class SlowFollowerFault(_BrokerFault):
    """Fetches every 500 ms for the duration, so the ISR shrinks and the high watermark lags."""

    name = "slow_follower"

    def apply_to_broker(self, context: FaultContext, broker: int) -> Undo:
        context.kafka.slow_follower(broker, SLOW_FOLLOWER_FETCH_INTERVAL_MS)
        return lambda: context.kafka.slow_follower(broker, None)


class MoveCoordinatorFault(ControlledShutdownFault):
    """A controlled shutdown of whichever broker coordinates the group when it fires."""

    name = "move_coordinator"

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        return "group", drawn.duration_ms, 0


class PreferredElectionFault(FaultKind):
    """The controller moves every partition's leadership back to its preferred replica (the first
    assigned, when live and in sync), as Kafka's automatic leader rebalance does
    (``auto.leader.rebalance.enable``, every ``leader.imbalance.check.interval.seconds``): after a
    broker came back, the group's coordinator may move although no broker failed.  Drawn only on
    request, as every kind added after the first ones."""

    name = "preferred_election"
    target = TargetKind("the cluster", r"cluster")
    drawn = False

    def draw(self, drawn: FaultDraw) -> Tuple[str, int, int]:
        return "cluster", 0, 0

    def apply(self, context: FaultContext, fault: Fault, now_ms: int) -> Optional[Undo]:
        context.kafka.elect_preferred_leaders()
        return None

    def shrink(self, fault: Fault) -> Tuple[Fault, ...]:
        return ()
