"""One group member of the client matrix, in its own process so a test can SIGKILL it.

Usage: ``python server_client_worker.py CONFIG_JSON`` (not a test module; spawned by the
``client_matrix`` fixture in ``conftest.py``).  CONFIG_JSON holds ``kind`` (``kafka-python``,
``kgroup``, ``confluent``, ``aiokafka``), ``bootstrap``, ``topic``, ``group``, ``client_id``,
``strategy`` (``range`` or ``cooperative-sticky``), ``instance_id`` (or null),
``session_timeout_ms``, ``heartbeat_interval_ms``, ``max_records``, ``batch_sleep_ms`` and
``commit_every`` (commit after that many non-empty batches, or when a poll comes back empty), and
optionally ``group_protocol`` (``classic``, the default, or ``consumer`` for KIP-848: the session
timeout, heartbeat interval and strategy are then the broker's, so they are not passed, and
``server_assignor``, when not null, names the broker's assignor: KIP-848's ``group.remote.assignor``).
``java/JavaClientWorker.java`` is this worker for Apache Kafka's Java consumer (kind ``java``).

The worker subscribes, polls, commits synchronously the positions of the records it has
handed out (only for partitions it owns), and prints one JSON object per line on stdout,
each with ``t`` = ``time.monotonic()`` (CLOCK_MONOTONIC: comparable across processes):

* ``{"e": "assigned"|"revoked"|"lost", "p": [partitions]}`` from the rebalance listener,
* ``{"e": "records", "r": [[partition, offset, key, value, headers], ...]}`` after each poll,
* ``{"e": "committed", "o": {partition: offset}}`` once a synchronous commit succeeded,
* ``{"e": "commit_failed", "err": "..."}``, ``{"e": "ready"}``, ``{"e": "lost_join"}`` (kafka-python),
* ``{"e": "closing"}`` once it stopped handing out records, before it closes the consumer, and
  ``{"e": "closed"}`` after.

A line ``close`` on stdin makes it commit what it has consumed and close the consumer the
client's normal way (a dynamic member sends LeaveGroup, a static one does not).  With
``MATRIX_WORKER_LOG=DEBUG`` (or INFO...) in the environment the client's own logs go to the
worker's stderr file (the fixture keeps one per member in the test's tmp_path).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Dict, Iterable, List, Optional

_out_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    fields["e"] = event
    fields["t"] = time.monotonic()
    line = json.dumps(fields)
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode()


def _headers(headers: Optional[Iterable]) -> List[List[str]]:
    return [[name, _text(value)] for name, value in (headers or [])]


class Stdin:
    """Reads commands on a thread; the poll loop checks ``closing``."""

    def __init__(self) -> None:
        self.closing = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                self.closing.set()
                return
        # stdin closed: the test is gone, do not outlive it.
        self.closing.set()


class Book:
    """What the member owns and the positions it has handed out but not committed yet."""

    def __init__(self) -> None:
        self.owned: set = set()
        self.positions: Dict[int, int] = {}
        self.batches = 0

    def assigned(self, partitions: List[int]) -> None:
        self.owned |= set(partitions)
        emit("assigned", p=sorted(partitions))

    def revoked(self, partitions: List[int], kind: str = "revoked") -> None:
        self.owned -= set(partitions)
        for p in partitions:
            self.positions.pop(p, None)
        emit(kind, p=sorted(partitions))

    def handed_out(self, records: List[list]) -> None:
        for partition, offset, *_ in records:
            self.positions[partition] = offset + 1
        emit("records", r=records)
        self.batches += 1

    def to_commit(self) -> Dict[int, int]:
        offsets = {p: o for p, o in self.positions.items() if p in self.owned}
        if not offsets:
            self.batches = 0
        return offsets

    def commit_due(self, polled_any: bool, every: int) -> bool:
        """Every ``every`` batches, and whenever a poll came back empty (caught up) with something pending."""
        return self.batches >= every or (not polled_any and self.batches > 0)

    def committed(self, offsets: Dict[int, int]) -> None:
        for p, o in offsets.items():
            if self.positions.get(p) == o:
                del self.positions[p]
        self.batches = 0
        emit("committed", o={str(p): o for p, o in offsets.items()})


def _report_lost_joins(coordinator) -> None:
    """Emit ``lost_join`` whenever kafka-python 3.0.12 throws away a completed join (observation only).

    Its ``join_group_async`` keeps the JoinGroup/SyncGroup task across poll() timeouts, but when
    the task has completed by the next poll it starts a new join instead of applying the answer
    (``if self._join_task is None or self._join_task.is_done``).  The member then sends another
    JoinGroup; when it is the leader, the coordinator (like Kafka's) starts one more generation.
    Tests that count generations allow one extra per reported lost join.  Wraps two private
    methods of the 3.0 coordinator and changes nothing they do.
    """
    counts = {"synced": 0, "applied": 0}
    join_and_sync = coordinator._do_join_and_sync_async
    on_join_complete = coordinator._on_join_complete_async

    async def tracked_join_and_sync(*args, **kwargs):
        if counts["synced"] > counts["applied"]:
            counts["applied"] = counts["synced"]
            emit("lost_join")
        result = await join_and_sync(*args, **kwargs)
        counts["synced"] += 1
        return result

    async def tracked_on_join_complete(*args, **kwargs):
        counts["applied"] = counts["synced"]
        return await on_join_complete(*args, **kwargs)

    coordinator._do_join_and_sync_async = tracked_join_and_sync
    coordinator._on_join_complete_async = tracked_on_join_complete


def run_kafka_python(config: dict, stdin: Stdin) -> None:
    from kafka import ConsumerRebalanceListener, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.structs import OffsetAndMetadata

    if config["kind"] == "kgroup":
        from kgroup import KafkaConsumer
    else:
        from kafka import KafkaConsumer
    if config["strategy"] == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        strategy: list = [CooperativeStickyAssignor]
    else:
        strategy = [RangePartitionAssignor]
    book = Book()
    topic = config["topic"]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            book.revoked([tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            book.assigned([tp.partition for tp in assigned])

        def on_partitions_lost(self, lost):
            book.revoked([tp.partition for tp in lost], "lost")

    group_settings: dict = dict(session_timeout_ms=config["session_timeout_ms"],
                                heartbeat_interval_ms=config["heartbeat_interval_ms"],
                                partition_assignment_strategy=strategy)
    if config.get("group_protocol", "classic") == "consumer":
        # KIP-848: the broker owns these; kgroup.KafkaConsumer refuses them, as the Java client does.
        group_settings = dict(group_protocol="consumer")
        if config.get("server_assignor") is not None:
            group_settings["group_remote_assignor"] = config["server_assignor"]
    consumer = KafkaConsumer(
        bootstrap_servers=config["bootstrap"], group_id=config["group"], client_id=config["client_id"],
        group_instance_id=config["instance_id"], max_poll_interval_ms=60_000,
        enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=config["max_records"],
        **group_settings)
    consumer.subscribe([topic], listener=Listener())
    if config["kind"] == "kafka-python":
        # Join only once the coordinator has seen the topic's metadata.  kafka-python 3.0.12 loses a
        # join otherwise: a leader that assigned before its metadata snapshot held the topic rejoins
        # when the snapshot fills in; that rejoin's own assignment makes need_rejoin() False again,
        # and join_group_async re-awaits an in-flight join only while need_rejoin() holds, so if
        # poll() timed out during that JoinGroup/SyncGroup the answer is never applied and heartbeats
        # stay disabled: the member hangs with stale partitions until the group expels it.  Any Kafka
        # triggers it (it is a client race); the snapshot is a private attribute, read only here.
        deadline = time.monotonic() + 30
        while not consumer._coordinator._metadata_snapshot.get(topic) and time.monotonic() < deadline:
            time.sleep(0.01)
        _report_lost_joins(consumer._coordinator)
    emit("ready")

    def commit() -> None:
        offsets = book.to_commit()
        if not offsets:
            return
        try:
            consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                             for p, o in offsets.items()})
        except Exception as error:  # CommitFailedError after a rebalance: keep going, as an app would
            emit("commit_failed", err=repr(error))
            return
        book.committed(offsets)

    while not stdin.closing.is_set():
        polled = consumer.poll(timeout_ms=100, max_records=config["max_records"])
        records = [[tp.partition, m.offset, _text(m.key), _text(m.value), _headers(m.headers)]
                   for tp, messages in polled.items() for m in messages]
        if records:
            book.handed_out(records)
            time.sleep(config["batch_sleep_ms"] / 1000)
        if book.commit_due(bool(records), config["commit_every"]):
            commit()
    commit()
    emit("closing")  # hands out nothing more: its ownership ends before close() sends LeaveGroup
    consumer.close()
    emit("closed")


def run_confluent(config: dict, stdin: Stdin) -> None:
    import confluent_kafka

    book = Book()
    topic = config["topic"]
    settings = {
        "bootstrap.servers": config["bootstrap"], "group.id": config["group"],
        "client.id": config["client_id"],
        "session.timeout.ms": config["session_timeout_ms"],
        "heartbeat.interval.ms": config["heartbeat_interval_ms"], "max.poll.interval.ms": 60_000,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "partition.assignment.strategy": config["strategy"],
    }
    if config.get("group_protocol", "classic") == "consumer":
        # KIP-848: librdkafka refuses the classic group settings next to group.protocol=consumer.
        for name in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            del settings[name]
        settings["group.protocol"] = "consumer"
        if config.get("server_assignor") is not None:
            settings["group.remote.assignor"] = config["server_assignor"]
    if config["instance_id"] is not None:
        settings["group.instance.id"] = config["instance_id"]
    consumer = confluent_kafka.Consumer(settings)
    consumer.subscribe(
        [topic],
        on_assign=lambda c, ps: book.assigned([tp.partition for tp in ps]),
        on_revoke=lambda c, ps: book.revoked([tp.partition for tp in ps]),
        on_lost=lambda c, ps: book.revoked([tp.partition for tp in ps], "lost"))
    emit("ready")

    def commit() -> None:
        offsets = book.to_commit()
        if not offsets:
            return
        try:
            result = consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, p, o)
                                              for p, o in offsets.items()], asynchronous=False)
        except confluent_kafka.KafkaException as error:
            emit("commit_failed", err=repr(error))
            return
        failed = [tp for tp in result or [] if tp.error is not None]
        if failed:
            emit("commit_failed", err=repr([(tp.partition, str(tp.error)) for tp in failed]))
            return
        book.committed(offsets)

    while not stdin.closing.is_set():
        messages = consumer.consume(num_messages=config["max_records"], timeout=0.1)
        records = []
        for m in messages:
            if m.error() is not None:
                emit("client_error", err=str(m.error()))
                continue
            records.append([m.partition(), m.offset(), _text(m.key()), _text(m.value()),
                            _headers(m.headers())])
        if records:
            book.handed_out(records)
            time.sleep(config["batch_sleep_ms"] / 1000)
        if book.commit_due(bool(records), config["commit_every"]):
            commit()
    commit()
    emit("closing")  # hands out nothing more: its ownership ends before close() sends LeaveGroup
    consumer.close()
    emit("closed")


def run_aiokafka(config: dict, stdin: Stdin) -> None:
    import asyncio

    import aiokafka
    from aiokafka.abc import ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor

    if config["strategy"] != "range":
        raise SystemExit(f"aiokafka has no {config['strategy']} assignor")
    book = Book()
    topic = config["topic"]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            book.revoked([tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            book.assigned([tp.partition for tp in assigned])

    async def main() -> None:
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=config["bootstrap"], group_id=config["group"], client_id=config["client_id"],
            group_instance_id=config["instance_id"], session_timeout_ms=config["session_timeout_ms"],
            heartbeat_interval_ms=config["heartbeat_interval_ms"], max_poll_interval_ms=60_000,
            enable_auto_commit=False, auto_offset_reset="earliest",
            partition_assignment_strategy=(RangePartitionAssignor,), max_poll_records=config["max_records"])
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        emit("ready")

        async def commit() -> None:
            offsets = book.to_commit()
            if not offsets:
                return
            try:
                await consumer.commit({aiokafka.TopicPartition(topic, p): o for p, o in offsets.items()})
            except Exception as error:  # CommitFailedError after a rebalance
                emit("commit_failed", err=repr(error))
                return
            book.committed(offsets)

        while not stdin.closing.is_set():
            polled = await consumer.getmany(timeout_ms=100, max_records=config["max_records"])
            records = [[tp.partition, m.offset, _text(m.key), _text(m.value), _headers(m.headers)]
                       for tp, messages in polled.items() for m in messages]
            if records:
                book.handed_out(records)
                await asyncio.sleep(config["batch_sleep_ms"] / 1000)
            if book.commit_due(bool(records), config["commit_every"]):
                await commit()
        await commit()
        emit("closing")
        await consumer.stop()
        emit("closed")

    asyncio.run(main())


RUNNERS = {"kafka-python": run_kafka_python, "kgroup": run_kafka_python, "confluent": run_confluent,
           "aiokafka": run_aiokafka}


def main(argv: List[str]) -> None:
    config = json.loads(argv[1])
    level = os.environ.get("MATRIX_WORKER_LOG")  # e.g. DEBUG: client logs on the worker's stderr
    if level:
        import logging
        logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    RUNNERS[config["kind"]](config, Stdin())


if __name__ == "__main__":
    main(sys.argv)
