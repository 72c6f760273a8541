"""Kafka's own decoder reads what kgroup's broker serves of ``__consumer_offsets`` and
``__transaction_state``.

``java/CoordinatorLogReader.java`` fetches every partition of a topic with Apache Kafka 4.4's
consumer (CRC checked) to its end offset and decodes each record with ``GroupCoordinatorRecordSerde``
(what ``kafka-console-consumer --formatter OffsetsMessageFormatter`` and Burrow-like tools read) or
the generated ``TransactionLogKey`` / ``TransactionLogValue``; it fails on a record Kafka cannot
read or bytes left after one.  This test drives a classic group (kafka-python), a KIP-848 group
subscribed by regex (confluent-kafka, ``group.protocol=consumer``), an offset delete, a
transactional offset commit and a committed transaction (kafka-python's transactional producer),
then checks the decoded fields.  Before, the consumer got no records and never reached the end
offsets (the reader timed out).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from base64 import b64decode
from pathlib import Path
from typing import Dict, List

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer

pytestmark = pytest.mark.kafka
confluent_kafka = pytest.importorskip("confluent_kafka")

READER_SOURCE = Path(__file__).parent / "java" / "CoordinatorLogReader.java"
#: What the reader may take to read a topic to its end (it stops there; a JVM start is ~1 s).
READ_BUDGET_MS = 30_000
#: A generous bound for a client step (join, assignment, commit) on a loaded 2-core machine.
STEP_S = 30.0
CONFIG = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100,
                                consumer_group_heartbeat_interval_ms=200)


@pytest.fixture(scope="module")
def reader_classpath(tmp_path_factory) -> str:
    """CoordinatorLogReader compiled against Kafka's jars (into pytest's temporary directory)."""
    from kgroup.testing.apache_kafka import KafkaUnavailableError, kafka_jars
    try:
        jars = kafka_jars()
    except KafkaUnavailableError as error:
        pytest.skip(f"Apache Kafka's jars are unavailable: {error}")
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac on PATH (Java 17+)")
    classes = str(tmp_path_factory.mktemp("coordinator-log-reader"))
    jar_path = os.pathsep.join(str(jar) for jar in jars)
    built = subprocess.run([javac, "-encoding", "UTF-8", "-Xlint:all", "-Werror", "-d", classes,
                            "-cp", jar_path, str(READER_SOURCE)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    return os.pathsep.join([classes, jar_path])


def _read(classpath: str, bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> List[dict]:
    from kgroup.testing.apache_kafka import java_binary
    done = subprocess.run([java_binary(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath,
                           "CoordinatorLogReader", bootstrap, topic, isolation, str(READ_BUDGET_MS)],
                          capture_output=True, text=True, timeout=READ_BUDGET_MS / 1000 + 60)
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return uuid.UUID(bytes=b64decode(text.replace("-", "+").replace("_", "/") + "=="))


def _classic_group(bootstrap: str, group: str) -> int:
    """A kafka-python consumer joins ``group``, reads "t" and commits; the offset it committed."""
    consumer = KafkaConsumer("t", bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        read = 0
        deadline = time.monotonic() + STEP_S
        while read < 3:
            assert time.monotonic() < deadline, "the classic consumer read nothing"
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        consumer.commit()
        return consumer.committed(KafkaTopicPartition("t", 0))
    finally:
        consumer.close()


def _regex_group(bootstrap: str, group: str) -> None:
    """A KIP-848 member subscribed to ``^t.*`` (the coordinator resolves it), assigned, committing."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["^t.*"])
        deadline = time.monotonic() + STEP_S
        while not any(tp.topic == "t" for tp in consumer.assignment()):
            assert time.monotonic() < deadline, f"never assigned t: {consumer.assignment()}"
            consumer.poll(0.1)
        consumer.commit(offsets=[confluent_kafka.TopicPartition("t", 0, 2)], asynchronous=False)
    finally:
        consumer.close()


def _transaction(bootstrap: str, group: str) -> None:
    """A committed transaction writing to "t" and committing ``group``'s offset of t-0 to 3."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx", enable_idempotence=True)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", b"in-txn")
        producer.send_offsets_to_transaction({KafkaTopicPartition("t", 0): KafkaOffsetAndMetadata(3, "", -1)},
                                             group)
        producer.commit_transaction()
    finally:
        producer.close()


def _of(records: List[dict], record_type: int, **key) -> List[dict]:
    return [r for r in records if r["recordType"] == record_type
            and all(r["key"].get(name) == value for name, value in key.items())]


def test_kafka_decodes_every_coordinator_record_kgroup_serves(reader_classpath):
    with KafkaServer(brokers=1, coordinator=CONFIG, offsets_partitions=3) as server:
        server.create_topic("t", partitions=1)
        server.wait_coordinators_loaded()
        bootstrap = server.bootstrap_servers
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(3):
            producer.send("t", b"%d" % i)
        producer.flush()
        producer.close()
        committed = _classic_group(bootstrap, "classic")
        _regex_group(bootstrap, "modern")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.delete_group_offsets("classic", [KafkaTopicPartition("t", 0)])
        finally:
            admin.close()
        _transaction(bootstrap, "eos")
        topic_id = server._call(lambda: server.engine.data.topic_id("t"))

        offsets = _read(reader_classpath, bootstrap, "__consumer_offsets")
        transactions = _read(reader_classpath, bootstrap, "__transaction_state")

    records = [r for r in offsets if "recordType" in r]
    ends: Dict[str, int] = offsets[-1]["positions"]
    # The reader reached every partition's end offset, one record per offset but the transaction's
    # COMMIT marker on the "eos" group's partition (a control batch: the consumer skips it).
    served = {(r["partition"], r["offset"]) for r in records}
    missing = {(int(p), o) for p, end in ends.items() for o in range(end)} - served
    assert len(records) == len(served) == sum(ends.values()) - 1 and len(missing) == 1
    assert all(r["timestampType"] == "CreateTime" for r in records)
    # Classic group: its GroupMetadata (v3), its commit (OffsetCommitValue v4), then the delete's tombstone.
    classic = _of(records, 2, group="classic")
    assert classic and all(r["valueVersion"] == 3 for r in classic if r["value"] is not None)
    assert any(r["value"] and r["value"]["protocolType"] == "consumer" and r["value"]["protocol"] == "range"
               and len(r["value"]["members"]) == 1 for r in classic)
    commits = _of(records, 1, group="classic", topic="t", partition=0)
    assert [r["value"] and (r["valueVersion"], r["value"]["offset"]) for r in commits] == [
        (4, committed), None]
    # KIP-848 group: epochs, the member's regex subscription, the regex resolved, assignments by topic id.
    assert any(r["value"] and r["value"]["epoch"] >= 1 for r in _of(records, 3, groupId="modern"))
    members = _of(records, 5, groupId="modern")
    # librdkafka sends a "^" subscription wrapped in a group: "(^t.*)".
    assert any(r["value"] and r["value"]["subscribedTopicRegex"] == "(^t.*)" for r in members)
    regexes = _of(records, 16, groupId="modern", regularExpression="(^t.*)")
    assert any(r["value"] and "t" in r["value"]["topics"] for r in regexes)
    targets = _of(records, 7, groupId="modern") + _of(records, 8, groupId="modern")
    assigned = [tp for r in targets if r["value"]
                for tp in r["value"].get("topicPartitions", r["value"].get("assignedPartitions", []))]
    assert any(_uuid(tp["topicId"]) == topic_id and tp["partitions"] == [0] for tp in assigned)
    assert [r["value"]["offset"] for r in _of(records, 1, group="modern", topic="t") if r["value"]] == [2]
    # The transactional offset commit (its batch transactional: read_committed shows it once committed).
    assert [r["value"]["offset"] for r in _of(records, 1, group="eos", topic="t") if r["value"]] == [3]

    # __transaction_state: the transaction's states in TransactionLogValue v1.
    txn = [r for r in transactions if r.get("key", {}).get("transactionalId") == "tx"]
    assert txn and all(r["valueVersion"] == 1 for r in txn if r["value"] is not None)
    statuses = [r["value"]["transactionStatus"] for r in txn if r["value"]]
    assert statuses[0] == 0 and 1 in statuses and statuses[-2:] == [2, 4]  # Empty ... PrepareCommit, Complete
    prepared = next(r["value"] for r in txn if r["value"] and r["value"]["transactionStatus"] == 2)
    assert {p["topic"] for p in prepared["transactionPartitions"]} == {"t", "__consumer_offsets"}
    assert prepared["transactionStartTimestampMs"] <= prepared["transactionLastUpdateTimestampMs"]
