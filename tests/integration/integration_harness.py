"""Consumers running in background threads, with ownership recorded from listeners.

Each :class:`RunningConsumer` polls in its own thread (the "application"),
commits synchronously after every batch and in ``on_partitions_revoked``,
and logs, with monotonic timestamps, when each partition became owned and
when it stopped being owned.  Tests read those intervals to check balance,
takeover times and that no partition was owned twice at once.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from kafka import ConsumerRebalanceListener

#: Group timing used by every integration test: short enough for takeovers in
#: seconds, long enough that a loaded 2-core machine does not evict members.
SESSION_TIMEOUT_MS = 4_000
HEARTBEAT_INTERVAL_MS = 500
MAX_POLL_INTERVAL_MS = 10_000


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, step_s: float = 0.05) -> float:
    """Poll ``predicate`` until true; return the seconds it took (bounded)."""
    start = time.monotonic()
    deadline = start + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic() - start
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class OwnershipLog:
    """Thread-safe log of (member, partition, start_s, end_s) intervals."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, object], float] = {}
        self.closed: list[tuple[str, object, float, float]] = []
        self.events: list[tuple[float, str, str, frozenset]] = []

    def start(self, member: str, partitions) -> None:
        now = time.monotonic()
        with self._lock:
            self.events.append((now, member, "assigned", frozenset(partitions)))
            for tp in partitions:
                self._open[(member, tp)] = now

    def end(self, member: str, partitions, kind: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.events.append((now, member, kind, frozenset(partitions)))
            for tp in partitions:
                began = self._open.pop((member, tp), None)
                if began is not None:
                    self.closed.append((member, tp, began, now))

    def end_all(self, member: str, at: Optional[float] = None) -> None:
        """Close every open interval of ``member`` (a killed process)."""
        now = time.monotonic() if at is None else at
        with self._lock:
            for (who, tp) in [k for k in self._open if k[0] == member]:
                self.closed.append((who, tp, self._open.pop((who, tp)), now))

    def open_for(self, member: str) -> set:
        with self._lock:
            return {tp for (m, tp) in self._open if m == member}

    def intervals(self) -> list[tuple[str, object, float, float]]:
        now = time.monotonic()
        with self._lock:
            return list(self.closed) + [(m, tp, s, now) for (m, tp), s in self._open.items()]

    def overlaps(self) -> list[tuple]:
        """Pairs of intervals in which two members owned one partition at once."""
        by_tp: dict[object, list] = {}
        for interval in self.intervals():
            by_tp.setdefault(interval[1], []).append(interval)
        bad = []
        for tp, items in by_tp.items():
            items.sort(key=lambda x: x[2])
            for a, b in zip(items, items[1:]):
                if a[0] != b[0] and b[2] < a[3]:
                    bad.append((tp, a, b))
        return bad


class _Listener(ConsumerRebalanceListener):
    def __init__(self, owner: "RunningConsumer") -> None:
        self.owner = owner

    def on_partitions_revoked(self, revoked):
        # Commit what was processed while this member is still the owner.
        self.owner.commit_quietly()
        self.owner.log.end(self.owner.name, revoked, "revoked")

    def on_partitions_assigned(self, assigned):
        self.owner.log.start(self.owner.name, assigned)

    def on_partitions_lost(self, lost):
        self.owner.log.end(self.owner.name, lost, "lost")


class RunningConsumer:
    """A consumer polling in a background thread, as an application would."""

    def __init__(self, name: str, consumer_factory: Callable[[], object], topic: str,
                 log: OwnershipLog) -> None:
        self.name = name
        self.log = log
        self.topic = topic
        self.records: list[tuple[object, int, bytes]] = []
        self.errors: list[BaseException] = []
        self._factory = consumer_factory
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._ready = threading.Event()
        self.consumer = None
        self._thread = threading.Thread(target=self._run, name=f"app-{name}", daemon=True)

    def start(self) -> "RunningConsumer":
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError(f"{self.name}: consumer was not constructed within 30 s")
        if self.errors:
            raise self.errors[0]
        return self

    def _run(self) -> None:
        try:
            self.consumer = self._factory()
            self.consumer.subscribe([self.topic], listener=_Listener(self))
        except BaseException as exc:
            self.errors.append(exc)
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._stop.is_set():
                batch = self.consumer.poll(timeout_ms=100)
                for tp, recs in batch.items():
                    self.records.extend((tp, r.offset, r.value) for r in recs)
                if batch:
                    self.commit_quietly()
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            try:
                self.consumer.close()
            finally:
                self.log.end_all(self.name)
                self._closed.set()

    def commit_quietly(self) -> None:
        """Commit consumed positions; a refused commit only means a duplicate later."""
        try:
            self.consumer.commit()
        except Exception:
            pass

    def owned(self) -> set:
        """Partitions this member owns now (an open interval in the log)."""
        return self.log.open_for(self.name)

    def close(self, timeout_s: float = 15.0) -> None:
        self._stop.set()
        if not self._closed.wait(timeout_s):
            raise AssertionError(f"{self.name}: close did not finish within {timeout_s} s")
        self._thread.join(5)


def owned_by(consumers) -> dict[str, set]:
    return {c.name: c.owned() for c in consumers}


def is_balanced(consumers, partitions: int) -> bool:
    """Every partition owned exactly once, counts differing by at most one."""
    owned = owned_by(consumers)
    every = [tp for tps in owned.values() for tp in tps]
    if len(every) != partitions or len(set(every)) != partitions:
        return False
    counts = [len(tps) for tps in owned.values()]
    return max(counts) - min(counts) <= 1


def consumed_values(consumers) -> list[bytes]:
    return [value for c in consumers for (_, _, value) in c.records]
