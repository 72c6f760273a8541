"""Leader election rules (pure functions over replica lists).

Each is Kafka's ``PartitionLeaderElectionAlgorithms`` (``kafka.controller``, 3.x): the first replica in
assignment order that is live and in the ISR, with the extra rule each election adds.
"""
from __future__ import annotations

from typing import Collection, Optional, Sequence

import attrs


@attrs.frozen
class ElectionResult:
    leader: Optional[int]
    unclean: bool = False


def elect_offline(assigned: Sequence[int], isr: Collection[int], live: Collection[int],
                  unclean_enabled: bool) -> ElectionResult:
    """First live ISR replica in assignment order; else (if allowed) first live assigned replica."""
    for broker in assigned:
        if broker in live and broker in isr:
            return ElectionResult(broker)
    if unclean_enabled:
        for broker in assigned:
            if broker in live:
                return ElectionResult(broker, unclean=True)
    return ElectionResult(None)


def elect_controlled_shutdown(assigned: Sequence[int], isr: Collection[int], live: Collection[int],
                              shutting_down: Collection[int]) -> ElectionResult:
    """Move leadership to another ISR member that is not going away."""
    for broker in assigned:
        if broker in live and broker in isr and broker not in shutting_down:
            return ElectionResult(broker)
    return ElectionResult(None)


def elect_preferred(assigned: Sequence[int], isr: Collection[int], live: Collection[int]) -> ElectionResult:
    """The first assigned replica, only if it is live and in the ISR."""
    if assigned and assigned[0] in live and assigned[0] in isr:
        return ElectionResult(assigned[0])
    return ElectionResult(None)


def elect_reassignment(target: Sequence[int], isr: Collection[int], live: Collection[int]) -> ElectionResult:
    """First live ISR replica of the reassignment's target replicas; never unclean."""
    return elect_offline(target, isr, live, unclean_enabled=False)
