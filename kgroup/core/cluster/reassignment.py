"""Partition reassignment, recording AR / leader / ISR after each step.

The steps are numbered 1-12 as in Kafka 2.3's ``KafkaController.onPartitionReassignment`` (OAR =
original replicas, RAR = reassigned replicas, AR = assigned replicas); KIP-455 (Kafka 2.4) regroups the
same steps into its phases U, A and B.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import attrs

from kgroup.core.cluster.states import PartitionState, ReplicaState


@attrs.frozen
class ReassignmentStep:
    step: int
    assigned: Tuple[int, ...]  # the persisted AR (what ZK / the metadata log holds)
    leader: Optional[int]
    isr: Tuple[int, ...]


class Reassignment:
    """Drives one partition from OAR to RAR; ``start`` does steps 1-3, ``poll`` the rest once caught up."""

    def __init__(self, partition, rar: List[int]) -> None:
        self.partition = partition
        self.oar = list(partition.assigned)
        self.rar = list(rar)
        self.persisted_ar: Tuple[int, ...] = tuple(self.oar)
        self.steps: List[ReassignmentStep] = []
        self.done = False
        self._record(0)

    def _record(self, step: int) -> None:
        p = self.partition
        self.steps.append(ReassignmentStep(step, self.persisted_ar, p.leader, tuple(sorted(p.isr))))

    def start(self, now_ms: int) -> None:
        p = self.partition
        ar = self.oar + [b for b in self.rar if b not in self.oar]
        self.persisted_ar = tuple(ar)                                   # step 1
        p.assigned = list(ar)
        self._record(1)
        p.set_leader(p.leader, now_ms)                                  # step 2: force an epoch bump
        self._record(2)
        from kgroup.core.cluster.replica_log import ReplicaLog
        for b in self.rar:                                              # step 3
            if b not in self.oar:
                p.logs[b] = ReplicaLog()
                p.add_replica_state(b)
                p.replica_states[b].transition_to(ReplicaState.NEW)
                p.needs_truncation.add(b)
        self._record(3)

    def complete_if_caught_up(self, now_ms: int, elect) -> bool:
        """Finish steps 4-12 if every RAR replica is in the ISR; ``elect(partition, candidates)`` picks a
        leader."""
        p = self.partition
        if self.done or not all(b in p.isr for b in self.rar):
            return self.done
        self._record(4)
        for b in self.rar:                                              # step 5
            p.replica_states[b].transition_to(ReplicaState.ONLINE)
        self._record(5)
        p.assigned = list(self.rar)                                     # step 6 (in memory only)
        self._record(6)
        if p.leader not in self.rar:                                    # step 7
            new_leader = elect(p, self.rar)
            p.set_leader(new_leader, now_ms)
        else:
            p.set_leader(p.leader, now_ms)
        p.state.transition_to(PartitionState.ONLINE)
        self._record(7)
        removed = [b for b in self.oar if b not in self.rar]
        for b in removed:                                               # step 8
            p.replica_states[b].transition_to(ReplicaState.OFFLINE)
        p.isr = [b for b in p.isr if b not in removed]
        self._record(8)
        for b in removed:                                               # step 9
            sm = p.replica_states[b]
            sm.transition_to(ReplicaState.DELETION_STARTED)
            sm.transition_to(ReplicaState.DELETION_SUCCESSFUL)
            sm.transition_to(ReplicaState.NON_EXISTENT)
            del p.logs[b]
            del p.replica_states[b]
        self._record(9)
        self.persisted_ar = tuple(self.rar)                             # step 10
        self._record(10)
        self.done = True                                                # step 11: drop from pending
        self._record(11)
        self._record(12)                                                # step 12: metadata to all brokers
        return True
