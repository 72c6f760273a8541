"""kgroup's broker where it differs from Apache Kafka's recorded answers: ONE table, enforced exactly.

``tests/broker_conformance/test_against_kgroup.py`` runs every scenario against
:class:`kgroup.server.KafkaServer` and asserts that the scenarios that differ are exactly these: a
listed scenario that starts matching (a fix elsewhere) fails the test until it is taken off the list,
and an unlisted difference fails it too.  docs/conformance/broker.md explains each reason.
"""
from __future__ import annotations

from typing import Dict

# -- reasons (the code areas are where other issues are at work; see docs/conformance/broker.md) ----

METADATA_INVALID_NAME = ("Metadata of an invalid topic name answers UNKNOWN_TOPIC_OR_PARTITION; Kafka "
                         "answers INVALID_TOPIC_EXCEPTION (CreateTopics itself matches)")
PRODUCE_INTERNAL = ("a client may append to __consumer_offsets; Kafka refuses with INVALID_TOPIC_EXCEPTION "
                    "(data plane: should be fixed)")
PRODUCE_ERROR_LOG_START = ("a refused produce answers log_start_offset 0 where Kafka answers -1")
MALFORMED_BATCH = ("a malformed batch (magic 1, truncated, bad length, bad record count) is CORRUPT_MESSAGE"
                   " or UNSUPPORTED_FOR_MESSAGE_FORMAT in kgroup, INVALID_RECORD (87) in Kafka; and "
                   "log_start_offset")
FETCH_OUT_OF_RANGE_HWM = ("an OFFSET_OUT_OF_RANGE fetch answer carries the high watermark; Kafka's carries "
                          "-1")
DUPLICATE_APPEND_TIME = ("the answer to a duplicate idempotent batch carries log_append_time_ms -1; Kafka's"
                         " carries the batch's max timestamp")
TXN_PRODUCE_VERIFICATION = ("a transactional batch for a partition not added to its transaction is "
                            "appended; "
                            "Kafka's leader verifies it with the transaction coordinator first (KIP-890 part "
                            "1, transaction.partition.verification.enable, on by default) and answers "
                            "INVALID_TXN_STATE, appending nothing (data plane: should be built)")
TXN_FETCH_MARKER = ("a fetch from offset 0 after the transaction ended returns the marker batch with the "
                    "records; Kafka 4.4's answer stops before the marker (seen on every run, also 2 s "
                    "later), and returns it to a fetch from the marker's offset (that step matches): the "
                    "records a consumer reads are the same, since clients skip control batches")

#: scenario id -> why kgroup's broker answers differently.
KNOWN_DIVERGENCES: Dict[str, str] = {
    "broker.create-topics.name-empty": METADATA_INVALID_NAME,
    "broker.create-topics.name-dot": METADATA_INVALID_NAME,
    "broker.create-topics.name-dotdot": METADATA_INVALID_NAME,
    "broker.create-topics.name-slash": METADATA_INVALID_NAME,
    "broker.create-topics.name-space": METADATA_INVALID_NAME,
    "broker.create-topics.name-too-long": METADATA_INVALID_NAME,
    "broker.produce.internal-topic": PRODUCE_INTERNAL,
    "broker.produce.unknown-topic": PRODUCE_ERROR_LOG_START,
    "broker.produce.unknown-partition": PRODUCE_ERROR_LOG_START,
    "broker.produce.invalid-acks": PRODUCE_ERROR_LOG_START,
    "broker.produce.malformed-crc": PRODUCE_ERROR_LOG_START,
    "broker.produce.malformed-magic": MALFORMED_BATCH,
    "broker.produce.malformed-truncated": MALFORMED_BATCH,
    "broker.produce.malformed-length": MALFORMED_BATCH,
    "broker.fetch.out-of-range": FETCH_OUT_OF_RANGE_HWM,
    "broker.produce.idempotent-duplicate": DUPLICATE_APPEND_TIME,
    "txn.produce.partition-not-added": TXN_PRODUCE_VERIFICATION,
    "txn.produce.fenced-epoch": PRODUCE_ERROR_LOG_START,
    "txn.fetch.read-committed.commit": TXN_FETCH_MARKER,
    "txn.fetch.read-committed.abort": TXN_FETCH_MARKER,
}
