"""The network layer's one event-loop timer follows the engine's next deadline (issue 28).

Before, every answered request cancelled the loop timer and armed a new one for the same
deadline (a TimerHandle and a heap entry per request, left in the loop's heap until it
was cleaned); now the armed timer stays while the deadline does not change."""
from __future__ import annotations

import asyncio
from typing import List, Optional

from kgroup.server.network import Network


class _Engine:
    def __init__(self) -> None:
        self.deadline_ms: Optional[int] = 1_000
        self.timers: List[int] = []

    def get_timer(self) -> Optional[int]:
        return self.deadline_ms

    def handle_timer(self, now_ms: int) -> list:
        self.timers.append(now_ms)
        self.deadline_ms = None
        return []

    def has_work(self) -> bool:
        return False


def test_the_loop_timer_is_rearmed_only_when_the_engine_deadline_moves():
    engine = _Engine()
    now = [0]

    async def scenario() -> None:
        network = Network(engine, lambda: now[0], "127.0.0.1", real_time=True)  # type: ignore[arg-type]
        network.schedule()
        armed = network._timer
        assert armed is not None
        for _ in range(5):  # requests answered, the deadline unchanged
            network.schedule()
            assert network._timer is armed and not armed.cancelled()
        engine.deadline_ms = 0  # something is due now: the timer moves
        network.schedule()
        assert armed.cancelled() and network._timer is not armed
        await asyncio.sleep(0.05)
        assert engine.timers == [0] and network._timer is None  # it fired; nothing is due after it
        network.schedule()
        assert network._timer is None
        await network.close()

    asyncio.run(scenario())
