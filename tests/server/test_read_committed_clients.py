"""Real read_committed consumers against the wire server (issue 26, KIP-98), over loopback sockets.

Transactions are written as a transactional producer's broker-side traffic looks: Produce requests
with a transactional id and transactional batches, then the transaction coordinator's markers
through ``DataPlane.write_txn_marker`` on the server's loop (the coordinator itself is built
elsewhere, so the leader's KIP-890 verification, which would ask it, is off here).  kafka-python
3.0's and confluent-kafka's read_committed consumers must see only the committed records, and stop
at the last stable offset while a transaction is open.
"""
from __future__ import annotations

import time
from typing import Any, Callable, List

import pytest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.core.error_codes import ErrorCode
from kgroup.core.transaction_markers import MarkerAppend, TxnMarker
from kgroup.server import KafkaServer

TOPIC = "txn"
ABORTED_PID = 9_000
COMMITTED_PID = 9_001
#: Every wait below is bounded by this; a consumer's fetches on loopback take milliseconds.
DEADLINE_S = 20.0


@pytest.fixture
def server():
    """Three brokers appending transactional batches without asking a transaction coordinator."""
    config = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100)
    with KafkaServer(brokers=3, coordinator=config,
                     transaction_partition_verification_enable=False) as running:
        yield running


def _batch(values: List[bytes], producer_id: int = -1, sequence: int = -1,
           transactional: bool = True) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(builder.build())


def _produce(raw_client: Callable[..., Any], server: Any, records: bytes, transactional_id: Any) -> int:
    topic_cls = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=9, transactional_id=transactional_id, acks=-1, timeout_ms=5_000,
                             topic_data=[topic_cls(version=9, name=TOPIC, partition_data=[
                                 topic_cls.PartitionProduceData(version=9, index=0, records=records)])])
    client = raw_client(server.listener(server.partition_leader(TOPIC, 0)))
    (topic,) = client.request(request).responses
    (answer,) = topic.partition_responses
    assert answer.error_code == ErrorCode.NONE, answer
    return answer.base_offset


def _marker(server: Any, producer_id: int, commit: bool) -> MarkerAppend:
    """Write a marker on the server's loop as the transaction coordinator would, then let the
    engine settle (answering fetches parked on the partition)."""
    written: List[Any] = []

    def action(engine: Any, now_ms: int) -> List[Any]:
        written.append(engine.data.write_txn_marker(TxnMarker(TOPIC, 0, producer_id, 0, commit, 0), now_ms))
        return engine.handle_timer(now_ms)
    server._engine_call(action)  # the server's own run-on-the-loop step (tests only)
    (result,) = written
    assert isinstance(result, MarkerAppend), result
    return result


def _write_transactions(server: Any, raw_client: Callable[..., Any]) -> None:
    """Offsets 0-1 aborted, 2 its marker, 3-4 committed, 5 its marker, 6 an open transaction,
    7 a plain record after it."""
    server.create_topic(TOPIC, 1, 3)
    assert _produce(raw_client, server, _batch([b"aborted-0", b"aborted-1"], ABORTED_PID, 0), "tx-a") == 0
    assert _marker(server, ABORTED_PID, commit=False).offset == 2
    committed = _batch([b"committed-0", b"committed-1"], COMMITTED_PID, 0)
    assert _produce(raw_client, server, committed, "tx-c") == 3
    assert _marker(server, COMMITTED_PID, commit=True).offset == 5
    assert _produce(raw_client, server, _batch([b"open-0"], ABORTED_PID, 2), "tx-a") == 6
    assert _produce(raw_client, server, _batch([b"plain-0"], transactional=False), None) == 7


def _poll_until(poll: Callable[[], List[bytes]], seen: List[bytes], count: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while len(seen) < count and time.monotonic() < deadline:
        seen.extend(poll())


def test_kafka_python_read_committed_consumer_sees_only_committed_records(server, raw_client):
    import kafka
    from kafka.structs import TopicPartition

    _write_transactions(server, raw_client)
    partition = TopicPartition(TOPIC, 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=server.bootstrap_servers,
                                   isolation_level="read_committed", auto_offset_reset="earliest",
                                   enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        consumer.assign([partition])
        assert consumer.end_offsets([partition])[partition] == 6   # ListOffsets read_committed: the LSO
        seen: List[bytes] = []

        def poll() -> List[bytes]:
            return [r.value for rs in consumer.poll(timeout_ms=200).values() for r in rs]
        _poll_until(poll, seen, 2)
        for _ in range(3):   # more polls find nothing: the open transaction holds the LSO at 6
            seen.extend(poll())
        assert seen == [b"committed-0", b"committed-1"]
        assert consumer.position(partition) == 6
        _marker(server, ABORTED_PID, commit=True)
        _poll_until(poll, seen, 4)
        assert seen == [b"committed-0", b"committed-1", b"open-0", b"plain-0"]
        assert consumer.end_offsets([partition])[partition] == 9
    finally:
        consumer.close()


def test_confluent_kafka_read_committed_consumer_sees_only_committed_records(server, raw_client):
    confluent_kafka = pytest.importorskip("confluent_kafka")

    _write_transactions(server, raw_client)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": server.bootstrap_servers, "group.id": "read-committed",
        "isolation.level": "read_committed", "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
        low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(TOPIC, 0), timeout=10)
        assert (low, high) == (0, 6)   # librdkafka asks ListOffsets read_committed: the LSO
        seen: List[bytes] = []

        def poll() -> List[bytes]:
            message = consumer.poll(0.2)
            if message is None or message.error():
                return []
            return [message.value()]
        _poll_until(poll, seen, 2)
        for _ in range(3):
            seen.extend(poll())
        assert seen == [b"committed-0", b"committed-1"]
        _marker(server, ABORTED_PID, commit=True)
        _poll_until(poll, seen, 4)
        assert seen == [b"committed-0", b"committed-1", b"open-0", b"plain-0"]
    finally:
        consumer.close()
