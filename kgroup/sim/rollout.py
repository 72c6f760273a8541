"""A rolling restart of the simulated group, and with it the online migration between group protocols.

Every member restarts once, one at a time, as a Kubernetes rolling update does: the application closes
its consumer (a dynamic member leaves the group), the process is down for a while shorter than the
session timeout, and the new process starts, possibly speaking the other group protocol
(``SimConfig.rolling_restart_to``).  Restarting a classic group's members into the consumer protocol is
Kafka's online upgrade (KIP-848; the first ConsumerGroupHeartbeat converts the classic group and the
classic members stay inside the consumer group until their turn); the reverse is the downgrade (the
last consumer-protocol member's leave converts the group back).  Restarting into the same protocol is a
plain redeploy: the baseline a migration is compared with.

The plan is drawn from the seed's own ``rolling-restart-<seed>`` stream, never from the fault stream,
so the seed's faults (and every other stream) are the same with or without a rolling restart, and the
same plan strikes every variant of a comparison.  Faults keep striking during the rolling restart.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Callable, Dict, List, Sequence, Tuple

import attrs

if TYPE_CHECKING:
    from kgroup.sim.faults import FaultContext

__all__ = ["READY_GAP_MS", "RestartStep", "RollingRestart", "draw_rolling_restart"]

#: Between one member's new process starting and the next member's restart: the rollout waits for the
#: new pod to be ready (Kubernetes' readiness probe, minReadySeconds) before it takes the next one down.
READY_GAP_MS = (1_000, 3_000)
#: The first step falls this late at most before the end of the fault window, so the faults drawn in
#: the window also strike while members are being restarted.
_FIRST_STEP_MS = 2_000


@attrs.frozen
class RestartStep:
    """``member`` closes its consumer at ``at_ms`` and its new process starts ``down_ms`` later."""

    at_ms: int
    member: str
    down_ms: int


def _down_ms(rng: random.Random, session_timeout_ms: int) -> int:
    return rng.randint(50, max(50, session_timeout_ms // 2))


def draw_rolling_restart(seed: int, members: Sequence[str], window_ms: Tuple[int, int],
                         session_timeout_ms: int) -> Tuple[RestartStep, ...]:
    """One step a member, in a seed-drawn order: the first in the first half of the fault window (from
    ``window_ms[0]``), each back within half the session timeout, the next one a readiness gap later."""
    rng = random.Random(f"rolling-restart-{seed}")
    order = list(members)
    rng.shuffle(order)
    first, last = window_ms
    at_ms = rng.randint(first, max(first, first + (last - first) // 2, first + _FIRST_STEP_MS))
    steps: List[RestartStep] = []
    for name in order:
        down_ms = _down_ms(rng, session_timeout_ms)
        steps.append(RestartStep(at_ms, name, down_ms))
        at_ms += down_ms + rng.randint(*READY_GAP_MS)
    return tuple(steps)


class RollingRestart:
    """Runs the planned steps in a simulation, then restarts (at the same cadence) any member still on
    the old protocol: a joiner that started before the rollout did.  A member that is down when its turn
    comes (crashed, waiting for its restart) comes back on the new protocol: its pending restart starts
    the new version."""

    def __init__(self, seed: int, steps: Tuple[RestartStep, ...], new_protocol: str, session_timeout_ms: int,
                 context: "FaultContext", protocols: Dict[str, str],
                 on_step: Callable[[int, str, str], None]) -> None:
        self.steps = steps
        self.new_protocol = new_protocol
        self.session_timeout_ms = session_timeout_ms
        self.context = context
        #: The protocol each member's current (or next) process speaks; the simulation's own dict.
        self.protocols = protocols
        self.on_step = on_step
        self.started = False
        self.done = not steps
        self.restarted: List[str] = []
        # Continues after the planned draws, so the plan does not depend on what the sweep needs.
        self._rng = random.Random(f"rolling-restart-sweep-{seed}")

    def schedule(self) -> None:
        for index, step in enumerate(self.steps):
            self.context.scheduler.call_at(step.at_ms, _StepEvent(self, step, index == len(self.steps) - 1))

    def latest_end_ms(self, extra_members: int) -> int:
        """No later than this the rollout is over: the last planned step, then one sweep step for each
        member that may have joined before the rollout (each a readiness gap and a downtime at most)."""
        if not self.steps:
            return 0
        last = self.steps[-1]
        sweep_ms = READY_GAP_MS[1] + max(50, self.session_timeout_ms // 2)
        return last.at_ms + last.down_ms + (extra_members + 1) * sweep_ms

    def run_step(self, member: str, down_ms: int, last: bool) -> None:
        self.started = True
        context, now = self.context, self.context.clock()
        self.protocols[member] = self.new_protocol
        self.restarted.append(member)
        running = member in context.apps
        self.on_step(now, member, "restart" if running else "switch while down")
        if running:
            context.stop(member, clean=True)

            def start(now_ms: int) -> None:
                if member not in context.apps:
                    context.start(member)
            context.scheduler.call_at(context.clock() + down_ms, start)
        if last or not self.steps:
            gap_ms = down_ms + self._rng.randint(*READY_GAP_MS)
            context.scheduler.call_at(context.clock() + gap_ms, self._sweep)

    def _sweep(self, now_ms: int) -> None:
        """One more step for a member still on the old protocol (sorted by name), or the end."""
        left = self.old_protocol_members()
        if not left:
            self.done = True
            return
        self.run_step(left[0], _down_ms(self._rng, self.session_timeout_ms), last=True)

    def old_protocol_members(self) -> List[str]:
        return sorted(name for name, protocol in self.protocols.items() if protocol != self.new_protocol)


class _StepEvent:
    """A planned step (a named callable, so the scheduler's queue stays printable)."""

    def __init__(self, rollout: RollingRestart, step: RestartStep, last: bool) -> None:
        self.rollout = rollout
        self.step = step
        self.last = last

    def __call__(self, now_ms: int) -> None:
        self.rollout.run_step(self.step.member, self.step.down_ms, self.last)

    def __repr__(self) -> str:
        return f"<rolling restart of {self.step.member} at {self.step.at_ms} ms>"
