"""Keyed deadlines for a sans-I/O state machine.

Timers are named (``"join-<group>"``, ``"session-<group>-<member>"``), so
scheduling a key again replaces its deadline; the owner asks for the
earliest deadline and pops the keys that are due at a given ``now_ms``.
Cancelled or replaced entries are dropped lazily from the heap.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Hashable, Optional


class KeyedTimers:
    __slots__ = ("_deadline_by_key", "_heap", "_sequence")

    def __init__(self) -> None:
        self._deadline_by_key: dict[Hashable, tuple[int, int]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._sequence = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        """Set (or replace) the deadline of ``key``."""
        entry = (deadline_ms, next(self._sequence))
        self._deadline_by_key[key] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], key))
        # Replaced entries linger in the heap; compact when they dominate.
        if len(self._heap) > 64 and len(self._heap) > 4 * len(self._deadline_by_key):
            self._compact()

    def cancel(self, key: Hashable) -> bool:
        return self._deadline_by_key.pop(key, None) is not None

    def deadline_of(self, key: Hashable) -> Optional[int]:
        entry = self._deadline_by_key.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._deadline_by_key

    def __len__(self) -> int:
        return len(self._deadline_by_key)

    def next_deadline_ms(self) -> Optional[int]:
        self._drop_stale_head()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> list[Hashable]:
        """Remove and return the keys whose deadline is ``<= now_ms``, earliest first."""
        due: list[Hashable] = []
        while True:
            self._drop_stale_head()
            if not self._heap or self._heap[0][0] > now_ms:
                return due
            deadline_ms, sequence, key = heapq.heappop(self._heap)
            del self._deadline_by_key[key]
            due.append(key)

    def _drop_stale_head(self) -> None:
        heap = self._heap
        while heap:
            deadline_ms, sequence, key = heap[0]
            if self._deadline_by_key.get(key) == (deadline_ms, sequence):
                return
            heapq.heappop(heap)

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s) in self._deadline_by_key.items()]
        heapq.heapify(self._heap)
