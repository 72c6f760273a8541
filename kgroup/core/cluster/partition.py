"""One partition: assigned replicas, leader, ISR, leader epoch and the replication step.

Fetches are explicit: :meth:`Partition.replicate` lets every eligible follower fetch once.
The fetch response carries the leader's HW *before* the fetch raised it, so a follower's HW
lags one round behind, which is exactly what makes HW truncation lose data (KIP-101).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import attrs

from kgroup.core.cluster.replica_log import LogEntry, ReplicaLog
from kgroup.core.cluster.states import (
    PARTITION_LEGAL_PREVIOUS, REPLICA_LEGAL_PREVIOUS, PartitionState, ReplicaState,
)
from kgroup.core.error_codes import ErrorCode
from kgroup.core.fsm import StateMachine
from kgroup.errors import ClusterError


@attrs.frozen
class Ack:
    """An acks=all append the leader acknowledged (its HW passed the offset within one epoch)."""
    topic: str
    partition: int
    offset: int
    payload: Any


class Partition:
    def __init__(self, topic: str, index: int, assigned: List[int], min_insync_replicas: int = 1) -> None:
        self.topic = topic
        self.index = index
        self.assigned: List[int] = list(assigned)
        self.logs: Dict[int, ReplicaLog] = {b: ReplicaLog() for b in assigned}
        self.leader: Optional[int] = None
        self.isr: List[int] = []
        self.leader_epoch = -1
        self.min_insync_replicas = min_insync_replicas
        self.last_unclean = False
        self.last_caught_up_ms: Dict[int, int] = {}
        self.needs_truncation: set = set()
        self.pending: List[Tuple[int, int, Any]] = []  # (offset, epoch, payload) awaiting HW
        self.acked: List[Ack] = []
        self.state = StateMachine(f"partition {topic}-{index}", PartitionState.NON_EXISTENT,
                                  PARTITION_LEGAL_PREVIOUS)
        self.replica_states: Dict[int, StateMachine] = {}
        for b in assigned:
            self.add_replica_state(b)

    def add_replica_state(self, broker: int) -> None:
        self.replica_states[broker] = StateMachine(
            f"replica {self.topic}-{self.index}@{broker}", ReplicaState.NON_EXISTENT, REPLICA_LEGAL_PREVIOUS)

    @property
    def key(self) -> Tuple[str, int]:
        return (self.topic, self.index)

    def leader_log(self) -> Optional[ReplicaLog]:
        return None if self.leader is None else self.logs[self.leader]

    def _led_log(self) -> ReplicaLog:
        # Only reached while the partition has a leader: produce refuses a leaderless partition
        # first, and replication (which shrinks the ISR) skips one.
        if self.leader is None:
            raise ClusterError(f"{self.topic}-{self.index} has no leader", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return self.logs[self.leader]

    # -- leadership -------------------------------------------------------------
    def set_leader(self, leader: Optional[int], now_ms: int, unclean: bool = False) -> None:
        """Apply an election: bump the epoch; the old epoch's appends still awaiting the HW are
        dropped, never acknowledged (take_acks)."""
        self.pending = []
        if leader is None:
            # Losing the leader is a leader change too: Kafka writes NoLeader with a bumped leader epoch
            # (ControllerIntegrationTest.testLeaderAndIsrWhenEntireIsrOffline*); a further failed
            # election of an already leaderless partition writes nothing.
            if self.leader is not None:
                self.leader_epoch += 1
            self.leader = None
            return
        self.leader = leader
        self.leader_epoch += 1
        self.last_unclean = unclean
        if unclean:
            self.isr = [leader]
        elif leader not in self.isr:
            self.isr.append(leader)
        log = self.logs[leader]
        log.assign_epoch(self.leader_epoch)
        for b in self.assigned:
            # Kafka Replica.resetReplicaState: an in-sync follower counts as caught up now (it gets the
            # full lag to fetch from the new leader); an out-of-sync one as never, so it cannot hold the HW.
            self.last_caught_up_ms[b] = now_ms if b in self.isr else 0
            if b != leader:
                self.needs_truncation.add(b)
        self.needs_truncation.discard(leader)

    # -- produce ------------------------------------------------------------------
    def append(self, payload: Any, acks_all: bool, append_time_ms: int = -1) -> int:
        log = self._led_log()
        offset = log.append(LogEntry(self.leader_epoch, payload, append_time_ms))
        if acks_all:
            self.pending.append((offset, self.leader_epoch, payload))
        self._advance_hw()
        return offset

    def append_many(self, payloads: Sequence[Any], acks_all: bool, append_time_ms: int = -1) -> int:
        """:meth:`append` of each payload in order, with the high watermark advanced once at the end
        (the same outcome: nothing but the leader's own appends moves between them).  Returns the
        first payload's offset."""
        log = self._led_log()
        epoch = self.leader_epoch
        first = log.leo
        entries: List[LogEntry] = []
        previous: Any = None
        entry: Optional[LogEntry] = None
        for payload in payloads:
            if entry is None or payload is not previous:
                # Runs of one payload object (a record batch's offsets) share one frozen entry.
                entry, previous = LogEntry(epoch, payload, append_time_ms), payload
            entries.append(entry)
        log.extend(entries)
        if acks_all:
            self.pending.extend((first + i, epoch, payload) for i, payload in enumerate(payloads))
        self._advance_hw()
        return first

    # -- replication -----------------------------------------------------------
    def replicate(self, now_ms: int, can_fetch: Callable[[int], bool], epoch_truncation: bool,
                  lag_max_ms: int) -> None:
        leader = self.leader
        if leader is None:
            return
        logs = self.logs
        leader_log = logs[leader]
        if self._in_step(leader_log, can_fetch):
            # The round below would only note that each follower that fetched is caught up.
            for b in self.assigned:
                if b != leader and b in logs and can_fetch(b):
                    self.last_caught_up_ms[b] = now_ms
            return
        # Runs once per active partition per fetch round (the simulator's most frequent cluster step):
        # LEOs are read as len(entries), not through the property, and the log is extended only when
        # the leader has more (extending by nothing does nothing).
        leader_entries = leader_log.entries
        isr = self.isr
        for b in self.assigned:
            if b == leader or b not in logs or not can_fetch(b):
                continue
            log = logs[b]
            if b in self.needs_truncation:
                if epoch_truncation:
                    log.truncate_to_match(leader_log)
                self.needs_truncation.discard(b)
            leader_leo = len(leader_entries)
            if len(log.entries) > leader_leo:
                # Offset out of range on the leader: the follower drops what the leader lacks.
                log.truncate_to(leader_leo)
            response_hw = leader_log.hw
            leo = len(log.entries)
            if leo < leader_leo:
                log.extend(leader_entries[leo:])
                leo = leader_leo
            if leo < response_hw:
                response_hw = leo
            if response_hw > log.hw:
                log.hw = response_hw
            self.last_caught_up_ms[b] = now_ms
            if b not in isr and leo >= leader_log.hw and self._epoch_start_reached(log):
                isr.append(b)
        self.shrink_isr(now_ms, lag_max_ms)
        self._advance_hw()

    def _in_step(self, leader_log: ReplicaLog, can_fetch: Callable[[int], bool]) -> bool:
        """Nothing for a fetch round to move: no truncation or acks=all append pending, the leader's
        HW at its LEO, every follower that can fetch in the ISR with the leader's LEO and HW, and
        every ISR member at the leader's LEO (so the ISR cannot shrink)."""
        # (LEOs read as len(entries): this runs for every active partition at every fetch round.)
        leo, hw = len(leader_log.entries), leader_log.hw
        if self.needs_truncation or self.pending or hw != leo:
            return False
        logs, isr, leader = self.logs, self.isr, self.leader
        for b in isr:
            if len(logs[b].entries) != leo:
                return False
        for b in self.assigned:
            if b == leader or b not in logs or not can_fetch(b):
                continue
            log = logs[b]
            if b not in isr or len(log.entries) != leo or log.hw < hw:
                return False
        return True

    def is_quiet(self, is_live: Callable[[int], bool]) -> bool:
        """Nothing any later fetch round can change until something else touches the partition
        (an append, an election, a fault): leaderless, or in step with every live follower,
        slowed ones included (a slowed follower that is behind will fetch in a later round).
        A quiet partition's rounds would only refresh ``last_caught_up_ms`` of the followers that
        fetched, which :meth:`ClusterStateMachine.wake` restores from their last fetch time."""
        if self.leader is None:
            return True
        logs, isr, leader = self.logs, self.isr, self.leader
        leader_log = logs[leader]
        leo = len(leader_log.entries)
        if self.needs_truncation or self.pending or leader_log.hw != leo:
            return False
        for b in isr:
            if len(logs[b].entries) != leo:
                return False
        for b in self.assigned:
            if b == leader or b not in logs or not is_live(b):
                continue
            log = logs[b]
            if b not in isr or len(log.entries) != leo or log.hw < leo:
                return False
        return True

    def _epoch_start_reached(self, log: ReplicaLog) -> bool:
        return log.leo >= self._led_log().end_offset_for(self.leader_epoch - 1)[1]

    def is_caught_up(self, broker: int, now_ms: int, lag_max_ms: int) -> bool:
        """Kafka ``ReplicaState.isCaughtUp``: a follower whose LEO equals the leader's is caught up however
        long ago it last fetched (an idle partition must not shrink its ISR); otherwise it must have been
        caught up within ``lag_max_ms``."""
        leader = self.leader
        if leader is not None and self.logs[broker].leo == self.logs[leader].leo:
            return True
        # A follower never counted caught up starts at 0, as Kafka's ReplicaState.Empty does.
        return now_ms - self.last_caught_up_ms.get(broker, 0) <= lag_max_ms

    def shrink_isr(self, now_ms: int, lag_max_ms: int) -> None:
        """Drop out-of-sync followers (Kafka ``Partition.getOutOfSyncReplicas``)."""
        leader = self.leader
        if leader is not None:
            logs = self.logs
            leo = len(logs[leader].entries)
            for b in self.isr:
                if len(logs[b].entries) != leo:
                    break
            else:
                return  # every ISR member is at the leader's LEO, so caught up (the usual round)
        keep = [b for b in self.isr if b == self.leader or self.is_caught_up(b, now_ms, lag_max_ms)]
        if keep != self.isr:
            self.isr = keep
            self._advance_hw()

    def effective_min_isr(self) -> int:
        """Kafka ``Partition.effectiveMinIsr``: min.insync.replicas capped by the replication factor."""
        return min(self.min_insync_replicas, len(self.assigned))

    def is_under_min_isr(self) -> bool:
        """Kafka ``Partition.isUnderMinIsr`` (only a partition with a leader is)."""
        return self.leader is not None and len(self.isr) < self.effective_min_isr()

    def is_at_min_isr(self) -> bool:
        """Kafka ``Partition.isAtMinIsr``: one more ISR loss and acks=all produce is refused."""
        return self.leader is not None and len(self.isr) == self.effective_min_isr()

    def is_under_replicated(self) -> bool:
        """Kafka ``Partition.isUnderReplicated``: led, with fewer ISR members than assigned replicas."""
        return self.leader is not None and len(self.isr) < len(self.assigned)

    def _advance_hw(self) -> None:
        # KAFKA-15583: while the ISR is below min.insync.replicas the leader holds its HW, so nothing
        # (not even an acks=1 write) becomes visible to consumers that fewer replicas than required hold.
        # (is_under_min_isr and _led_log, inlined: this runs after every append and fetch round.)
        leader = self.leader
        if leader is None:
            raise ClusterError(f"{self.topic}-{self.index} has no leader", ErrorCode.NOT_LEADER_OR_FOLLOWER)
        isr = self.isr
        minimum = self.min_insync_replicas
        if len(self.assigned) < minimum:
            minimum = len(self.assigned)
        if len(isr) < minimum:
            return
        logs = self.logs
        leader_log = logs[leader]
        new_hw = min([len(logs[b].entries) for b in isr])  # each ISR member's LEO
        if new_hw > leader_log.hw:
            leader_log.hw = new_hw
        if not self.pending:
            return
        hw, epoch = leader_log.hw, self.leader_epoch
        if self.pending[0][0] >= hw:
            # Pending appends are in offset order: none has been passed yet (the usual append).
            return
        still = []
        for offset, entry_epoch, payload in self.pending:
            if offset < hw and entry_epoch == epoch:
                self.acked.append(Ack(self.topic, self.index, offset, payload))
            else:
                still.append((offset, entry_epoch, payload))
        self.pending = still
