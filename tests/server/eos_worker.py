"""One exactly-once consume-transform-produce worker (confluent-kafka), run as its own process.

    python eos_worker.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID MODE TRIGGER

Reads INPUT in consumer group GROUP (read_committed), writes ``out-<value>`` for every record to
OUTPUT and sends the consumed offsets to the same transaction (KIP-447: with the consumer's group
metadata), one transaction per batch.  Lines on stdout tell the test what it did: ``COMMITTED n``
after each commit, ``ABORTED`` after an abort.  MODE:

* ``normal``: until ``stop`` arrives on stdin;
* ``crash``: at the TRIGGER-th transaction after ``arm`` arrived on stdin, produce the batch, flush,
  print ``READY-TO-CRASH`` and wait (the test SIGKILLs it mid-transaction);
* ``stall``: at the TRIGGER-th transaction after ``arm``, take the group metadata and positions,
  produce, flush, print ``STALLED`` and wait for ``resume`` on stdin (the test sends it once the
  group rebalanced without it, past max.poll.interval.ms); then try to commit with the stale
  metadata and print ``LATE-COMMIT committed`` or ``LATE-COMMIT refused <error name>``, abort if
  refused, rewind to the committed offsets and go on as ``normal``.
"""
from __future__ import annotations

import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

#: Short enough that a killed worker's open transaction is aborted within the test's bounds.
TRANSACTION_TIMEOUT_MS = 8000
SESSION_TIMEOUT_MS = 6000
MAX_POLL_INTERVAL_MS = 6000
STEP_S = 30.0


def _say(line: str) -> None:
    print(line, flush=True)


def main() -> int:
    bootstrap, source, sink, group, transactional_id, mode, trigger_text = sys.argv[1:8]
    trigger = int(trigger_text)
    commands: "list[str]" = []

    def read_stdin() -> None:
        for line in sys.stdin:
            commands.append(line.strip())

    threading.Thread(target=read_stdin, daemon=True).start()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 500,
                         "max.poll.interval.ms": MAX_POLL_INTERVAL_MS})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "linger.ms": 5})
    producer.init_transactions(STEP_S)
    consumer.subscribe([source])
    transactions = 0
    #: Transactions committed since ``arm``: the test arms the faults once every worker is in the
    #: group, so that no fault fires while the group is still forming.
    armed_transactions = 0
    while "stop" not in commands:
        batch = [m for m in consumer.consume(num_messages=50, timeout=0.2) if m.error() is None]
        if not batch:
            continue
        producer.begin_transaction()
        for message in batch:
            producer.produce(sink, key=message.key(), value=b"out-" + message.value())
        # One reading per batch: "arm" arriving mid-transaction must not count that transaction
        # without having checked the trigger for it.
        armed = "arm" in commands
        trigger_now = armed and armed_transactions == trigger
        if mode == "crash" and trigger_now:
            producer.flush(STEP_S)
            _say("READY-TO-CRASH")
            while True:
                time.sleep(1)
        if mode == "stall" and trigger_now:
            metadata = consumer.consumer_group_metadata()
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
            producer.flush(STEP_S)
            _say("STALLED")
            while "resume" not in commands:
                time.sleep(0.05)
            try:
                producer.send_offsets_to_transaction(positions, metadata, STEP_S)
                producer.commit_transaction(STEP_S)
                _say("LATE-COMMIT committed")
                transactions += 1
            except KafkaException as failure:
                _say(f"LATE-COMMIT refused {failure.args[0].name()}")
                _abort_and_rewind(producer, consumer)
            mode = "normal"
            continue
        try:
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), STEP_S)
            producer.commit_transaction(STEP_S)
        except KafkaException as failure:
            if not failure.args[0].txn_requires_abort():
                raise
            _abort_and_rewind(producer, consumer)
            continue
        transactions += 1
        armed_transactions += armed
        _say(f"COMMITTED {transactions}")
    consumer.close()
    producer.flush(STEP_S)
    return 0


def _abort_and_rewind(producer: Producer, consumer: Consumer) -> None:
    """Abort, then read again from the group's committed offsets (the standard exactly-once loop)."""
    producer.abort_transaction(STEP_S)
    _say("ABORTED")
    assignment = consumer.assignment()
    if assignment:
        for tp in consumer.committed(assignment, timeout=STEP_S):
            try:
                consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
            except KafkaException:
                pass  # revoked meanwhile: its next owner starts from the committed offset anyway


if __name__ == "__main__":
    sys.exit(main())
