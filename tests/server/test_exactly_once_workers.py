"""Exactly-once consume-transform-produce with a consumer group of three workers (issue 26, KIP-447).

Three confluent-kafka workers (``eos_worker.py``, each its own process: a consumer in one group
paired with a transactional producer) turn input records on 6 partitions (600, then chunks of 120
until both faults below fired) into output records, committing the consumed offsets inside each
transaction.  During the run:

* one worker stalls mid-transaction past ``max.poll.interval.ms``: the group rebalances without it,
  and its late commit, made with its stale group metadata, is refused (KIP-447 fencing);
* one worker is SIGKILLed mid-transaction (records produced, not committed): its transaction is
  aborted when ``transaction.timeout.ms`` passes, its partitions move to the survivors.

At the end the read_committed output holds every input record exactly once.  The same scenario runs
on kgroup's wire broker and on Apache Kafka.  Waits are bounded by the workers' timeouts (session 6 s,
max poll interval 6 s, transaction timeout 8 s) plus a margin for a loaded machine.
"""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, List

import pytest

from .server_transactions import read_all

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

WORKER = Path(__file__).with_name("eos_worker.py")
PARTITIONS = 6
#: Input records before the faults are armed (doubled, as the first RECORDS // 2), then chunks of
#: CHUNK until both faults fired.
RECORDS = 1200
CHUNK = 120
#: Longest wait for one step: the workers' largest timeout (8 s) several times over.
STEP_S = 60.0


class Worker:
    def __init__(self, bootstrap: str, source: str, sink: str, group: str, mode: str, trigger: int) -> None:
        self.lines: List[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), bootstrap, source, sink, group, f"tx-{uuid.uuid4().hex[:8]}", mode,
             str(trigger)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def said(self, prefix: str) -> List[str]:
        return [line for line in self.lines if line.startswith(prefix)]

    def tell(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.tell("stop")
            try:
                self.proc.wait(STEP_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _wait(condition: Callable[[], bool], what: str, workers: List[Worker]) -> None:
    deadline = time.monotonic() + STEP_S
    while time.monotonic() < deadline:
        if condition():
            return
        for worker in workers:
            if worker.proc.poll() not in (None, -signal.SIGKILL):
                pytest.fail(f"a worker exited ({worker.proc.returncode}) waiting for {what}: "
                            f"{worker.lines[-5:]}")
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}; workers said {[w.lines[-3:] for w in workers]}")


def _group_members(admin: AdminClient, group: str) -> int:
    try:
        description = admin.describe_consumer_groups([group])[group].result(timeout=STEP_S)
    except KafkaException:
        return -1  # the coordinator is not known or not loaded yet: asked again by _wait
    return len(description.members) if str(description.state).endswith("STABLE") else -1


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        answers = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=STEP_S)
        return sum(max(tp.offset, 0) for tp in answers)
    finally:
        consumer.close()


def test_three_workers_exactly_once_through_a_stall_and_a_crash(bootstrap, request):
    tag = uuid.uuid4().hex[:8]
    source, sink, group = f"eos-in-{tag}", f"eos-out-{tag}", f"eos-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name in (source, sink):
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(timeout=STEP_S)
    seed = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    inputs: List[str] = []

    def produce(count: int) -> None:
        for i in range(len(inputs), len(inputs) + count):
            seed.produce(source, key=str(i).encode(), value=f"r{i:05d}".encode())
            inputs.append(f"r{i:05d}")
        seed.flush(STEP_S)

    produce(RECORDS // 2)
    staller = Worker(bootstrap, source, sink, group, "stall", 0)
    crasher = Worker(bootstrap, source, sink, group, "crash", 1)
    steady = Worker(bootstrap, source, sink, group, "normal", 0)
    workers = [staller, crasher, steady]
    try:
        _wait(lambda: _group_members(admin, group) == 3, "three workers in the group", workers)
        # Armed before more input exists, so each has records left to fail on; input keeps coming (keys
        # spread over every partition) until both faults fired, whatever a worker happens to own.
        staller.tell("arm")
        crasher.tell("arm")

        def both_fired() -> bool:
            return bool(staller.said("STALLED")) and bool(crasher.said("READY-TO-CRASH"))

        deadline = time.monotonic() + STEP_S
        while not both_fired() and time.monotonic() < deadline:
            produce(CHUNK)
            chunk_deadline = min(deadline, time.monotonic() + 2.0)
            while not both_fired() and time.monotonic() < chunk_deadline:
                time.sleep(0.05)
        _wait(both_fired, "one worker stalled and one mid-transaction", workers)
        crasher.proc.send_signal(signal.SIGKILL)
        crasher.proc.wait()
        # Past max.poll.interval.ms the staller left; past the session timeout the crasher is gone.
        _wait(lambda: _group_members(admin, group) == 1, "the group to rebalance to the steady worker",
              workers)
        staller.tell("resume")
        _wait(lambda: bool(staller.said("LATE-COMMIT")), "the staller's late commit", workers)
        # Kafka 4.4 answers the stale member's TxnOffsetCommit UNKNOWN_MEMBER_ID (it left the group).
        assert staller.said("LATE-COMMIT") == ["LATE-COMMIT refused UNKNOWN_MEMBER_ID"], staller.lines
        _wait(lambda: _committed(bootstrap, group, source) == len(inputs), "every input offset committed",
              workers)
        output = read_all(bootstrap, sink, "read_committed", len(inputs), PARTITIONS, STEP_S)
    finally:
        for worker in workers:
            worker.stop()
    counts = collections.Counter(value.removeprefix("out-") for value in output)
    duplicates = {value: n for value, n in counts.items() if n > 1}
    missing = set(inputs) - set(counts)
    assert not duplicates and not missing, (len(duplicates), len(missing))
    assert len(output) == len(inputs) >= RECORDS // 2 + CHUNK
    request.node.user_properties += [("output_records", len(output)),
                                     ("aborts", sum(len(w.said("ABORTED")) for w in workers))]
