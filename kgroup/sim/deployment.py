"""What each simulated member's process runs: its group protocol and assignor, the rolling restart (if
any) that redeploys it (:mod:`kgroup.sim.rollout`), and the group type that leads to.

:class:`Deployment` is the simulation's record of which protocol each member's current (or next) process
speaks.  A rolling restart into the other protocol is KIP-848's online migration: the members it restarts
take the migration's target assignor, and the coordinator's group type (classic or consumer) is recorded
in the history whenever it changes (:class:`~kgroup.sim.history.GroupTypeChanged`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional

from kgroup.core.consumer_group.group import ConsumerGroupState
from kgroup.core.coordinator import GroupState
from kgroup.core.member.consumer import CLASSIC, CONSUMER
from kgroup.sim.history import GroupTypeChanged, History, RollingRestartStep
from kgroup.sim.rollout import RollingRestart, draw_rolling_restart

if TYPE_CHECKING:  # the simulator imports this module: its config type is for the checker only
    from kgroup.sim.faults import FaultContext
    from kgroup.sim.simulator import SimConfig

__all__ = ["Deployment"]


class Deployment:
    """The group protocol and assignor of each member's process, and the rolling restart that changes them."""

    def __init__(self, seed: int, config: "SimConfig", assignor: str, context: "FaultContext",
                 history: History) -> None:
        self.config = config
        #: The group's own assignor (drawn from the seed when the config says ``any``).
        self.assignor = assignor
        self.context = context
        self.history = history
        #: The group protocol of each member's current (or next) process; a rolling restart changes it.
        self.protocols: Dict[str, str] = {}
        self.rollout: Optional[RollingRestart] = None
        if config.rolling_restart_to:
            steps = draw_rolling_restart(seed, config.member_names(), config.fault_plan().window_ms,
                                         config.session_timeout_ms)
            self.rollout = RollingRestart(seed, steps, config.rolling_restart_to, config.session_timeout_ms,
                                          context, self.protocols, self._record_restart_step)
        #: The coordinator's group type last seen (recorded only by a migration).
        self._group_type = "none"

    def _record_restart_step(self, now_ms: int, name: str, action: str) -> None:
        self.history.record(RollingRestartStep(now_ms, name, self.protocols[name], action))

    def assignor_for(self, protocol: str) -> str:
        """The assignor of a member speaking ``protocol``: the group's, or the migration's target one."""
        return self.assignor if protocol == self.config.group_protocol else self.config.target_assignor

    def protocol_of(self, name: str) -> str:
        """The protocol ``name``'s next process speaks: its own so far; for a member never started, the
        new protocol once a rolling restart has begun (it deploys the new version)."""
        if name in self.protocols:
            return self.protocols[name]
        started = self.rollout is not None and self.rollout.started
        return self.config.final_protocol if started else self.config.group_protocol

    def observe_group_type(self, group_id: str, now_ms: int) -> None:
        """Record the coordinator's group type when it changes (read directly: a hub query would count as
        a change of the hub).  No coordinator (a failover loading) is no change."""
        coordinator = self.context.kafka.hosting.coordinator_for(group_id)
        if coordinator is None:
            return
        consumer_group = coordinator.consumer_group(group_id)
        classic_state = coordinator.group_state(group_id)
        if consumer_group is not None and consumer_group.state is not ConsumerGroupState.DEAD:
            group_type = CONSUMER
        elif classic_state is not None and classic_state is not GroupState.DEAD:
            group_type = CLASSIC
        else:
            return
        if group_type != self._group_type:
            self.history.record(GroupTypeChanged(now_ms, group_id, self._group_type, group_type))
            self._group_type = group_type
