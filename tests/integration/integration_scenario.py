"""The group scenario every integration test runs, with the figures it measures.

Three in-process consumers join a 6-partition topic; a batch is consumed
exactly once; one closes and the other two take over; a fourth member in a
subprocess joins and is SIGKILLed, and the survivors take over after the
session timeout.  After every rebalance a fresh batch must be consumed
exactly once, which only holds if committed offsets survived the rebalance.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from kgroup.testing.tansu import create_topic, produce
from integration_factories import make_consumer
from integration_harness import (
    MAX_POLL_INTERVAL_MS, OwnershipLog, RunningConsumer, consumed_values, is_balanced, owned_by, wait_for,
)

PARTITIONS = 6
BATCH = 60
#: A join converges within this: each generation completes within the rebalance timeout
#: (the members' max_poll_interval_ms), and a join takes at most 5 generations on Tansu,
#: plus one for a member that missed one.
JOIN_BOUND_S = 6 * MAX_POLL_INTERVAL_MS / 1000
HERE = Path(__file__).resolve().parent


class MemberProcess:
    """A consumer in a subprocess whose ownership lines feed the shared log."""

    def __init__(self, name: str, kind: str, bootstrap: str, topic: str, group: str, strategy: str,
                 log: OwnershipLog):
        self.name = name
        self.log = log
        self.topic = topic
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "integration_member_worker.py"), kind, bootstrap, topic, group,
             strategy],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._follow, daemon=True)
        self._reader.start()

    def _follow(self) -> None:
        from kafka.structs import TopicPartition

        for line in self.proc.stdout:
            kind, *parts = line.split()
            if kind == "started":
                self.started.set()
                continue
            tps = [TopicPartition(self.topic, int(p)) for p in parts]
            if kind == "assigned":
                self.log.start(self.name, tps)
            else:
                self.log.end(self.name, tps, kind)

    def owned(self) -> set:
        return self.log.open_for(self.name)

    def kill(self) -> float:
        """SIGKILL the process; its ownership ends now. Returns the kill time."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        killed_at = time.monotonic()
        self.log.end_all(self.name, killed_at)
        return killed_at

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _expect_exactly_once(consumers, expected: list[bytes], timeout_s: float) -> None:
    wait_for(lambda: len(consumed_values(consumers)) >= len(expected), timeout_s,
             f"{len(expected)} records consumed")
    time.sleep(0.3)  # a duplicate delivery would show up right behind the last record
    counts = Counter(consumed_values(consumers))
    duplicates = {v: n for v, n in counts.items() if n > 1}
    assert not duplicates, f"records consumed more than once: {sorted(duplicates)[:10]}"
    assert set(counts) == set(expected), f"missing records: {sorted(set(expected) - set(counts))[:10]}"


def _generation(running: RunningConsumer) -> int:
    return running.consumer.group_metadata().generation_id


def run_group_scenario(
    bootstrap: str, topic: str, group: str, kinds: Sequence[str], process_kind: str, strategy: str
) -> dict:
    """Run the scenario with in-process consumers of ``kinds`` (three of them)
    and one subprocess member of ``process_kind``; return measured figures."""
    create_topic(bootstrap, topic, PARTITIONS)
    log = OwnershipLog()
    figures: dict = {}
    names = ["A", "B", "C"]
    running: list[RunningConsumer] = []
    member = None
    try:
        started = time.monotonic()
        for name, kind in zip(names, kinds):
            running.append(RunningConsumer(
                name, lambda kind=kind: make_consumer(kind, bootstrap, group, strategy), topic, log).start())
        wait_for(lambda: is_balanced(running, PARTITIONS), 40, "first balanced assignment")
        figures["first_balanced_s"] = time.monotonic() - started

        sent = produce(bootstrap, topic, BATCH, PARTITIONS)
        _expect_exactly_once(running, sent, 30)

        # One member closes: the other two own all six partitions.
        leaver = running.pop()
        closed_at = time.monotonic()
        leaver.close()
        wait_for(lambda: is_balanced(running, PARTITIONS), 30, "takeover after close")
        figures["close_takeover_s"] = time.monotonic() - closed_at
        sent += _produce_tagged(bootstrap, topic, b"c")
        _expect_exactly_once(running + [leaver], sent, 30)

        # A member in another process joins, then dies without leaving.
        gen_before = _generation(running[0])
        member = MemberProcess("P", process_kind, bootstrap, topic, group, strategy, log)
        joined_at = time.monotonic()
        wait_for(lambda: is_balanced(running + [member], PARTITIONS), JOIN_BOUND_S,
                 "balance with the subprocess member")
        balanced_at = time.monotonic()
        figures["join_rebalance_s"] = balanced_at - joined_at
        # Generations the group went through for the join, P's first included.
        figures["join_rounds"] = _generation(running[0]) - gen_before
        # Ownerships that ended during the join: the partitions handed over
        # (cooperative) or revoked (eager), one entry per ended ownership.
        figures["join_handovers"] = sorted(
            tp.partition for _, tp, _, end in list(log.closed) if joined_at <= end <= balanced_at)
        killed_at = member.kill()
        wait_for(lambda: is_balanced(running, PARTITIONS), 40, "takeover after SIGKILL")
        figures["kill_takeover_s"] = time.monotonic() - killed_at
        sent += _produce_tagged(bootstrap, topic, b"k")
        _expect_exactly_once(running + [leaver], sent, 30)

        figures["overlaps"] = log.overlaps()
        figures["owned"] = owned_by(running)
        for r in running + [leaver]:
            assert not r.errors, f"{r.name} failed: {r.errors[0]!r}"
        return figures
    finally:
        if member is not None:
            member.stop()
        for r in running:
            r.close()


def _produce_tagged(bootstrap: str, topic: str, tag: bytes) -> list[bytes]:
    """Produce a fresh batch whose values differ from earlier batches."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    values = [tag + b"-%d" % i for i in range(BATCH)]
    try:
        for i, value in enumerate(values):
            producer.send(topic, value=value, partition=i % PARTITIONS)
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=5)
    return values
