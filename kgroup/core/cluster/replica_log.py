"""One replica's copy of a partition log: entries, LEO, HW and the leader-epoch cache."""
from __future__ import annotations

from operator import attrgetter
from typing import Any, List, Optional, Sequence, Tuple

import attrs


@attrs.frozen
class LogEntry:
    leader_epoch: int
    payload: Any
    #: The cluster's clock when the leader appended it (-1: unknown).  What a Kafka batch's
    #: timestamp holds for records its writer stamps with the append time (the coordinators'
    #: records, CoordinatorRuntime's ``currentTimeMs``); not part of an entry's identity.
    append_time_ms: int = attrs.field(default=-1, eq=False)


_EPOCH_OF = attrgetter("leader_epoch")


class ReplicaLog:
    __slots__ = ("entries", "hw", "epoch_starts")

    def __init__(self) -> None:
        self.entries: List[LogEntry] = []
        self.hw = 0
        # (epoch, start_offset) ascending: what OffsetsForLeaderEpoch answers from.
        self.epoch_starts: List[Tuple[int, int]] = []

    @property
    def leo(self) -> int:
        return len(self.entries)

    def last_epoch(self) -> Optional[int]:
        return self.epoch_starts[-1][0] if self.epoch_starts else None

    def assign_epoch(self, epoch: int) -> None:
        """Record that ``epoch`` starts at the current LEO (done by a new leader, and on copy)."""
        if not self.epoch_starts or epoch > self.epoch_starts[-1][0]:
            self.epoch_starts.append((epoch, self.leo))

    def append(self, entry: LogEntry) -> int:
        self.assign_epoch(entry.leader_epoch)
        self.entries.append(entry)
        return self.leo - 1

    def extend(self, entries: Sequence[LogEntry]) -> None:
        """Append ``entries`` in order: the same as :meth:`append` on each, in one step when they
        share one leader epoch (the usual case: a produced batch, a follower's fetch)."""
        if not entries:
            return
        if len(set(map(_EPOCH_OF, entries))) > 1:
            for entry in entries:
                self.append(entry)
            return
        self.assign_epoch(entries[0].leader_epoch)
        self.entries.extend(entries)

    def end_offset_for(self, epoch: int) -> Tuple[int, int]:
        """OffsetsForLeaderEpoch: (largest known epoch <= epoch, offset where the next epoch starts or
        LEO)."""
        found = -1
        end = 0
        for i, (e, _start) in enumerate(self.epoch_starts):
            if e <= epoch:
                found = e
                end = self.epoch_starts[i + 1][1] if i + 1 < len(self.epoch_starts) else self.leo
            else:
                break
        return found, end

    def truncate_to(self, offset: int) -> None:
        # Epochs starting at or past ``offset`` go even when they hold no entries (a former
        # leader's empty epoch), or the epoch-lookup loop would never converge.
        del self.entries[offset:]
        self.epoch_starts = [(e, s) for e, s in self.epoch_starts if s < offset]
        self.hw = min(self.hw, offset)

    def truncate_to_match(self, leader: "ReplicaLog") -> None:
        """KIP-279 truncation: ask the leader where our last epoch ends, repeat until epochs agree."""
        while self.epoch_starts:
            mine = self.epoch_starts[-1][0]
            leader_epoch, leader_end = leader.end_offset_for(mine)
            own_end = self.end_offset_for(leader_epoch)[1] if leader_epoch >= 0 else 0
            self.truncate_to(min(leader_end, own_end, self.leo))
            last = self.last_epoch()
            if last is None or last <= leader_epoch:
                return
