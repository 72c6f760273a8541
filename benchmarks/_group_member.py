"""One stock consumer in its own process, for the wire-server rebalance benchmark.

    python benchmarks/_group_member.py CLIENT BOOTSTRAP TOPIC GROUP STRATEGY

CLIENT is ``kafka-python`` or ``confluent``.  The consumer is built at once (``ready`` on
stdout); it subscribes and starts polling (every 100 ms) when ``go`` arrives on stdin, and
closes (LeaveGroup) and exits on ``close``.  It reports on stdout, one line each:

    assigned GEN P...   revoked GEN P...   lost GEN P...   gen GEN   closed

(partition numbers; GEN is the group generation kafka-python reports, -1 for confluent,
which does not expose it).  Group timing: session.timeout.ms 6000, heartbeat 2000 ms.
"""
from __future__ import annotations

import sys
import threading
import time

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 2000
#: Never outlive a broken benchmark run.
LIFETIME_S = 300


def _say(*words) -> None:
    print(*words, flush=True)


class _Commands:
    def __init__(self) -> None:
        self.go = threading.Event()
        self.close = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            word = line.strip()
            if word == "go":
                self.go.set()
            elif word == "close":
                self.go.set()
                self.close.set()
        self.go.set()
        self.close.set()  # the parent went away


def _kafka_python(bootstrap: str, topic: str, group: str, strategy: str, commands: _Commands) -> None:
    import kafka
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    assignor = {"range": RangePartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[strategy]
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        partition_assignment_strategy=[assignor])

    def generation() -> int:
        return consumer.group_metadata().generation_id

    class Listener(kafka.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            _say("revoked", generation(), *sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            _say("assigned", generation(), *sorted(tp.partition for tp in assigned))

        def on_partitions_lost(self, lost):
            _say("lost", generation(), *sorted(tp.partition for tp in lost))

    _say("ready")
    commands.go.wait()
    consumer.subscribe([topic], listener=Listener())
    seen = None
    deadline = time.monotonic() + LIFETIME_S
    while not commands.close.is_set() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=100)
        now = generation()
        if now != seen:
            seen = now
            _say("gen", now)
    consumer.close()
    _say("closed")


def _confluent(bootstrap: str, topic: str, group: str, strategy: str, commands: _Commands) -> None:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "partition.assignment.strategy": strategy, "log_level": 0})

    def report(kind):
        def callback(_consumer, partitions):
            _say(kind, -1, *sorted(tp.partition for tp in partitions))
        return callback

    _say("ready")
    commands.go.wait()
    consumer.subscribe([topic], on_assign=report("assigned"), on_revoke=report("revoked"),
                       on_lost=report("lost"))
    deadline = time.monotonic() + LIFETIME_S
    while not commands.close.is_set() and time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()
    _say("closed")


def main(client: str, bootstrap: str, topic: str, group: str, strategy: str) -> None:
    commands = _Commands()
    run = {"kafka-python": _kafka_python, "confluent": _confluent}[client]
    run(bootstrap, topic, group, strategy, commands)


if __name__ == "__main__":
    main(*sys.argv[1:6])
