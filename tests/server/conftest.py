"""Fixtures shared by the wire-server tests (test modules do not import each other).

* ``server`` / ``server1``: a running :class:`KafkaServer` (3 brokers / 1 broker) with the
  coordinator's initial rebalance delay at 0 and a 100 ms minimum session timeout.
* ``raw_client``: opens a :class:`RawClient` (a plain socket speaking kafka-python's request
  and response classes) to a listener, closed after the test.
* ``make_engine``: a sans-I/O :class:`ServerEngine` wrapped in an :class:`EngineHarness`
  (no sockets, no threads, time is whatever the test passes).
* ``valid_requests``: one realistic request of every served API at every served version.

* ``client_matrix``: a 3-broker wire server and group members in child processes.

For the client matrix, every member runs ``server_client_worker.py`` in its own process (any client:
kafka-python, kgroup's ``KafkaConsumer``, confluent-kafka, aiokafka; or ``java/JavaClientWorker.java``,
Apache Kafka's own ``KafkaConsumer``, compiled on first use), so a crash is a real SIGKILL: the
kernel closes its sockets and no LeaveGroup is ever sent.  The worker prints what its
rebalance listener saw, every record it handed out and every commit that succeeded, with
CLOCK_MONOTONIC timestamps (comparable across processes); :class:`Ledger` collects them and
checks the delivery and ownership properties the tests assert.
"""
from __future__ import annotations

import asyncio
import fcntl
import functools
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import pytest
from kafka.protocol.admin import (
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, DescribeGroupsRequest, DescribeTransactionsRequest, ListGroupsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import (
    FetchRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListOffsetsRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest, ProduceRequest,
)
from kafka.protocol.producer import TxnOffsetCommitRequest
from kafka.record.memory_records import MemoryRecordsBuilder

import kgroup
from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.io.clock import MockClock, run_timers_through
from kgroup.server import KafkaServer, ServerConfig
from kgroup.server.data_plane import DataPlane
from kgroup.server.engine import Reply, ServerEngine
from kgroup.server.apis import SUPPORTED_VERSIONS
from .server_transactions import broker_bootstrap  # noqa: F401 (the transaction tests' `bootstrap` fixture)

FAST_GROUPS = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100)


@pytest.fixture
def server():
    with KafkaServer(brokers=3, coordinator=FAST_GROUPS) as running:
        yield running


@pytest.fixture
def server1():
    with KafkaServer(brokers=1, coordinator=FAST_GROUPS) as running:
        yield running


# -- kafka-python request and response classes ----------------------------------------------


def response_class(request: Any) -> Any:
    """The response class of a kafka-python request object (FooRequest -> FooResponse)."""
    module = sys.modules[type(request).__module__]
    return getattr(module, type(request).__name__.replace("Request", "Response"))


def request_frame(request: Any, correlation_id: int, client_id: Optional[str] = "raw") -> bytes:
    """A request frame body (header + body, no size prefix)."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True))


def decode_response(request: Any, data: bytes, version: Optional[int] = None) -> Any:
    """Decode a whole response frame (size prefix included) answering ``request``."""
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4, f"response size prefix {size} but {len(data) - 4} bytes follow"
    at = request.API_VERSION if version is None else version
    return response_class(request).decode(data[4:], version=at, header=True)


def records(count: int = 3, producer_id: int = -1, epoch: int = -1, sequence: int = -1,
            timestamps: Optional[List[int]] = None, value: bytes = b"v") -> bytes:
    """A v2 record batch of ``count`` records (idempotent when ``producer_id`` >= 0)."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    if producer_id >= 0:
        builder.set_producer_state(producer_id, epoch, sequence, False)
    for i in range(count):
        timestamp = timestamps[i] if timestamps else 1_000 + i
        builder.append(timestamp=timestamp, key=b"k%d" % i, value=value + b"%d" % i, headers=[])
    builder.close()
    return bytes(builder.buffer())


@pytest.fixture(scope="session")
def make_records() -> Callable[..., bytes]:
    return records


@pytest.fixture(scope="session")
def kafka_codec():
    """(request_frame, decode_response, response_class) for tests that build frames by hand."""
    return request_frame, decode_response, response_class


# -- raw socket client -------------------------------------------------------------------------


class RawClient:
    """A blocking socket that sends kafka-python request objects and reads whole response frames."""

    def __init__(self, address: str, timeout_s: float = 5.0) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, body: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(body)) + body)

    def send(self, request: Any, client_id: Optional[str] = "raw",
             correlation_id: Optional[int] = None) -> int:
        if correlation_id is None:
            self.correlation_id += 1
            correlation_id = self.correlation_id
        self.send_frame(request_frame(request, correlation_id, client_id))
        return correlation_id

    def _read_exactly(self, count: int) -> Optional[bytes]:
        chunks = []
        while count:
            chunk = self.sock.recv(count)
            if not chunk:
                return None
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def recv_frame(self, timeout_s: Optional[float] = 5.0) -> Optional[bytes]:
        """The next whole response frame (size prefix included); None if the server closed the
        connection; raises ``socket.timeout`` when nothing came within ``timeout_s``."""
        self.sock.settimeout(timeout_s)
        head = self._read_exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        body = self._read_exactly(size)
        if body is None:
            return None
        return head + body

    def request(self, request: Any, client_id: Optional[str] = "raw", timeout_s: float = 5.0) -> Any:
        correlation_id = self.send(request, client_id)
        frame = self.recv_frame(timeout_s)
        assert frame is not None, f"connection closed instead of answering {type(request).__name__}"
        response = decode_response(request, frame)
        assert response.header.correlation_id == correlation_id
        return response

    def is_closed_by_server(self, timeout_s: float = 5.0) -> bool:
        """True once the server closed the connection (EOF or reset) within ``timeout_s``."""
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_client():
    opened: List[RawClient] = []

    def connect(address: str, timeout_s: float = 5.0) -> RawClient:
        client = RawClient(address, timeout_s)
        opened.append(client)
        return client

    yield connect
    for client in opened:
        client.close()


# -- sans-I/O engine ------------------------------------------------------------------------------


class EngineHarness:
    """A ServerEngine without sockets: connections are ids, replies are collected per connection."""

    def __init__(self, config: ServerConfig, now_ms: int = 0) -> None:
        self.config = config
        self.clock = MockClock(now_ms)
        cluster_config = ClusterConfig(
            broker_ids=config.broker_ids,
            default_replication_factor=min(config.default_replication_factor, config.brokers),
            min_insync_replicas=config.min_insync_replicas,
            listeners={b: (config.host, 19_000 + b) for b in config.broker_ids})
        cluster = ClusterStateMachine(cluster_config, now_ms=now_ms)
        self.hosting = GroupHosting(cluster, GroupHostingConfig(
            offsets_topic_partitions=config.offsets_partitions, offsets_topic_replication_factor=3,
            group_load_time_ms=config.group_load_time_ms, coordinator=config.coordinator,
            eager_replication=True), now_ms)
        self.engine = ServerEngine(self.hosting, DataPlane(cluster, config), now_ms)
        self.cluster = cluster
        self._next_connection = 0
        self.replies: Dict[int, List[Reply]] = {}

    def connect(self, node_id: int = 1) -> int:
        self._next_connection += 1
        self.engine.connection_opened(self._next_connection, node_id, "127.0.0.1")
        self.replies[self._next_connection] = []
        return self._next_connection

    def _collect(self, replies: List[Reply]) -> List[Reply]:
        for reply in replies:
            self.replies.setdefault(reply.connection_id, []).append(reply)
        return replies

    def handle(self, connection_id: int, frame: bytes) -> List[Reply]:
        return self._collect(self.engine.handle(connection_id, frame, self.now_ms))

    def send(self, connection_id: int, request: Any, correlation_id: int = 1,
             client_id: Optional[str] = "engine-test") -> List[Reply]:
        return self.handle(connection_id, request_frame(request, correlation_id, client_id))

    @property
    def now_ms(self) -> int:
        return self.clock()

    @now_ms.setter
    def now_ms(self, now_ms: int) -> None:
        self.clock.now_ms = now_ms

    def advance(self, delta_ms: int) -> List[Reply]:
        """Move time forward, handling every deadline on the way at its own time (as KafkaServer.advance)."""
        out: List[Reply] = []
        run_timers_through(self.clock, self.engine, self.clock() + delta_ms,
                           deliver=lambda replies: out.extend(self._collect(replies)))
        return out

    def call(self, request: Any, node_id: Optional[int] = None, correlation_id: int = 1,
             client_id: Optional[str] = "engine-test") -> Any:
        """Send ``request`` on a new connection to ``node_id`` (the partition-0 leader of its topic
        when None and it has one, else broker 1) and decode the immediate answer."""
        connection = self.connect(node_id or 1)
        replies = self.send(connection, request, correlation_id, client_id)
        answers = [r for r in replies if r.connection_id == connection]
        assert len(answers) == 1 and answers[0].data is not None, f"no immediate answer: {answers}"
        return decode_response(request, answers[0].data)

    def answer(self, connection_id: int, request: Any) -> Any:
        """Decode the single data reply a connection has received so far."""
        data = [r for r in self.replies[connection_id] if r.data is not None]
        assert len(data) == 1, f"expected one answer on connection {connection_id}, got {len(data)}"
        return decode_response(request, data[0].data)

    def leader(self, topic: str, partition: int = 0) -> int:
        leader = self.cluster.topics[topic][partition].leader
        assert leader is not None
        return leader


@pytest.fixture(scope="session")
def make_engine() -> Callable[..., EngineHarness]:
    """``make_engine(brokers=3, **ServerConfig fields)`` -> EngineHarness at time 0."""
    def make(brokers: int = 3, **options: Any) -> EngineHarness:
        options.setdefault("coordinator", FAST_GROUPS)
        return EngineHarness(ServerConfig(brokers=brokers, **options))
    return make


# -- a valid request of every API at every served version ------------------------------------------


def _valid_requests(served: bool = True) -> List[Tuple[ApiKey, int, Any]]:
    """Every served version (``served``), or every version kafka-python can encode that the
    server does not serve (those it cannot build with these fields are left out)."""
    out: List[Tuple[ApiKey, int, Any]] = []
    nil = uuid.UUID(int=0)

    def add(api: ApiKey, cls: Any, **fields: Any) -> None:
        low, high = SUPPORTED_VERSIONS[api]
        versions = range(low, high + 1) if served else [
            v for v in range(0, cls.max_version + 1) if not low <= v <= high]
        for v in versions:
            try:
                values = {name: (value(v) if callable(value) else value) for name, value in fields.items()}
                out.append((api, v, cls(version=v, **values)))
            except ValueError:
                if served:
                    raise

    produce_topic = ProduceRequest.TopicProduceData
    add(ApiKey.Produce, ProduceRequest, acks=-1, timeout_ms=1_000, topic_data=lambda v: [
        produce_topic(version=v, name="t", partition_data=[
            produce_topic.PartitionProduceData(version=v, index=0, records=records(2)),
            produce_topic.PartitionProduceData(version=v, index=1, records=records(2, 7, 0, 0))])])
    fetch_topic = FetchRequest.FetchTopic
    add(ApiKey.Fetch, FetchRequest, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        forgotten_topics_data=[], topics=lambda v: [fetch_topic(version=v, topic="t", partitions=[
            fetch_topic.FetchPartition(version=v, partition=i, fetch_offset=0, partition_max_bytes=1 << 20,
                                       current_leader_epoch=-1, log_start_offset=-1)
            for i in range(2)])])
    list_topic = ListOffsetsRequest.ListOffsetsTopic
    add(ApiKey.ListOffsets, ListOffsetsRequest, replica_id=-1, topics=lambda v: [
        list_topic(version=v, name="t", partitions=[
            list_topic.ListOffsetsPartition(version=v, partition_index=0, timestamp=ts,
                                            current_leader_epoch=-1)
            for ts in (-1, -2)])])
    add(ApiKey.Metadata, MetadataRequest, allow_auto_topic_creation=True, topics=lambda v: [
        MetadataRequest.MetadataRequestTopic(version=v, name="t", topic_id=nil)])
    commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
    add(ApiKey.OffsetCommit, OffsetCommitRequest, group_id="g", generation_id_or_member_epoch=-1,
        member_id="", topics=lambda v: [commit_topic(version=v, name="t", partitions=[
            commit_topic.OffsetCommitRequestPartition(version=v, partition_index=0, committed_offset=5,
                                                      committed_metadata="m")])])
    txn_topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    add(ApiKey.TxnOffsetCommit, TxnOffsetCommitRequest, transactional_id="tx", group_id="g", producer_id=3,
        producer_epoch=0, generation_id=-1, member_id="", group_instance_id=None, topics=lambda v: [
            txn_topic(version=v, name="t", partitions=[txn_topic.TxnOffsetCommitRequestPartition(
                version=v, partition_index=i, committed_offset=5, committed_leader_epoch=-1,
                committed_metadata="m") for i in (0, 9)])])
    add(ApiKey.OffsetFetch, OffsetFetchRequest, group_id="g",
        topics=lambda v: [OffsetFetchRequest.OffsetFetchRequestTopic(
            version=v, name="t", partition_indexes=[0, 1])] if v < 8 else None,
        groups=lambda v: [OffsetFetchRequest.OffsetFetchRequestGroup(
            version=v, group_id="g", topics=None)] if v >= 8 else [])
    add(ApiKey.FindCoordinator, FindCoordinatorRequest, key="g", key_type=0, coordinator_keys=["g", "h"])
    add(ApiKey.JoinGroup, JoinGroupRequest, group_id="g", session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000, member_id="", protocol_type="consumer", protocols=lambda v: [
            JoinGroupRequest.JoinGroupRequestProtocol(version=v, name="range", metadata=b"\x00\x01")])
    add(ApiKey.Heartbeat, HeartbeatRequest, group_id="g", generation_id=1, member_id="m")
    add(ApiKey.LeaveGroup, LeaveGroupRequest, group_id="g", member_id="m", members=lambda v: [
        LeaveGroupRequest.MemberIdentity(version=v, member_id="m")] if v >= 3 else [])
    add(ApiKey.SyncGroup, SyncGroupRequest, group_id="g", generation_id=1, member_id="m",
        protocol_type="consumer", protocol_name="range", assignments=lambda v: [
            SyncGroupRequest.SyncGroupRequestAssignment(version=v, member_id="m", assignment=b"\x00")])
    add(ApiKey.DescribeGroups, DescribeGroupsRequest, groups=["g", "h"])
    add(ApiKey.ListGroups, ListGroupsRequest, states_filter=["Stable"])
    add(ApiKey.ApiVersions, ApiVersionsRequest, client_software_name="fuzz", client_software_version="1")
    creatable = CreateTopicsRequest.CreatableTopic
    add(ApiKey.CreateTopics, CreateTopicsRequest, timeout_ms=1_000, topics=lambda v: [
        creatable(version=v, name="new", num_partitions=2, replication_factor=1, assignments=[], configs=[]),
        creatable(version=v, name="t", num_partitions=-1, replication_factor=-1, configs=[], assignments=[
            creatable.CreatableReplicaAssignment(version=v, partition_index=0, broker_ids=[1])])])
    add(ApiKey.DeleteTopics, DeleteTopicsRequest, timeout_ms=1_000, topic_names=["new", "nope"],
        topics=lambda v: [DeleteTopicsRequest.DeleteTopicState(version=v, name="new", topic_id=nil)]
        if v >= 6 else [])
    add(ApiKey.InitProducerId, InitProducerIdRequest, transactional_id=None, transaction_timeout_ms=1_000,
        producer_id=-1, producer_epoch=-1)
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    add(ApiKey.AddPartitionsToTxn, AddPartitionsToTxnRequest, v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=7, v3_and_below_producer_epoch=0, v3_and_below_topics=lambda v: [
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(version=v, name="t", partitions=[0, 1])]
        if v < 4 else [],
        transactions=lambda v: [txn(version=v, transactional_id="tx", producer_id=7, producer_epoch=0,
                                    verify_only=True, topics=[
                                        txn.AddPartitionsToTxnTopic(version=v, name="t", partitions=[0, 1])])]
        if v >= 4 else [])
    add(ApiKey.AddOffsetsToTxn, AddOffsetsToTxnRequest, transactional_id="tx", producer_id=7,
        producer_epoch=0, group_id="g")
    add(ApiKey.EndTxn, EndTxnRequest, transactional_id="tx", producer_id=7, producer_epoch=0, committed=True)
    add(ApiKey.DescribeTransactions, DescribeTransactionsRequest, transactional_ids=["tx", "ty"])
    add(ApiKey.ListTransactions, ListTransactionsRequest, state_filters=["Ongoing", "Nope"],
        producer_id_filters=[7], duration_filter=-1, transactional_id_pattern=None)
    add(ApiKey.CreatePartitions, CreatePartitionsRequest, timeout_ms=1_000, validate_only=False,
        topics=lambda v: [CreatePartitionsRequest.CreatePartitionsTopic(version=v, name="t", count=4,
                                                                        assignments=None)])
    add(ApiKey.DeleteGroups, DeleteGroupsRequest, groups_names=["g", "zz"])
    delete_topic = OffsetDeleteRequest.OffsetDeleteRequestTopic
    add(ApiKey.OffsetDelete, OffsetDeleteRequest, group_id="g", topics=lambda v: [
        delete_topic(version=v, name="t", partitions=[
            delete_topic.OffsetDeleteRequestPartition(version=v, partition_index=i) for i in (0, 9)])])
    epoch_topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    add(ApiKey.OffsetForLeaderEpoch, OffsetForLeaderEpochRequest, replica_id=-1, topics=lambda v: [
        epoch_topic(version=v, topic="t", partitions=[
            epoch_topic.OffsetForLeaderPartition(version=v, partition=i, current_leader_epoch=-1,
                                                 leader_epoch=0)
            for i in range(2)])])
    from kgroup.wire.kafka_python import (
        ConsumerGroupDescribeRequestStruct, ConsumerGroupHeartbeatRequestStruct,
    )
    add(ApiKey.ConsumerGroupHeartbeat, ConsumerGroupHeartbeatRequestStruct, group_id="g", member_id="m-fuzz",
        member_epoch=0, rebalance_timeout_ms=10_000, subscribed_topic_names=["t"], topic_partitions=[])
    add(ApiKey.ConsumerGroupDescribe, ConsumerGroupDescribeRequestStruct, group_ids=["g", "h"],
        include_authorized_operations=False)
    add(ApiKey.DescribeCluster, DescribeClusterRequest, include_cluster_authorized_operations=True,
        endpoint_type=1, include_fenced_brokers=True)
    return out


@pytest.fixture(scope="session")
def valid_requests() -> List[Tuple[ApiKey, int, Any]]:
    """(api, version, kafka-python request) for every served API and version, fields filled in."""
    return _valid_requests()


@pytest.fixture(scope="session")
def unserved_requests() -> List[Tuple[ApiKey, int, Any]]:
    """(api, version, request) at the versions kafka-python encodes and the server does not serve."""
    return _valid_requests(served=False)


@pytest.fixture(scope="session")
def valid_frames(valid_requests) -> List[Tuple[ApiKey, int, bytes]]:
    """(api, version, request frame body) of every request of ``valid_requests``, client id "fuzz"."""
    return [(api, version, request_frame(request, index + 1, "fuzz"))
            for index, (api, version, request) in enumerate(valid_requests)]


WORKER = Path(__file__).with_name("server_client_worker.py")
REPO = Path(kgroup.__file__).resolve().parents[1]
#: The Java twin of server_client_worker.py (Apache Kafka's own KafkaConsumer), compiled at test time.
JAVA_WORKER_SOURCE = Path(__file__).parent / "java" / "JavaClientWorker.java"
#: kafka-clients and its runtime dependencies (compression codecs, SLF4J) among Kafka's fetched jars:
#: the Java worker's classpath, without the broker's jars.
JAVA_CLIENT_JARS = ("kafka-clients-", "zstd-jni-", "lz4-java-", "snappy-java-", "slf4j-api-", "slf4j-simple-")

#: Kafka's group.min.session.timeout.ms (the coordinator enforces it): the crash tests wait this long.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
PARTITIONS = 6
#: Generous bound for anything that should take a second or two on an idle machine.
WAIT_S = 45.0

INF = float("inf")


def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S,
               explain: Optional[Callable[[], str]] = None) -> float:
    """Poll ``predicate`` until it holds; the seconds it took.  Fails the test after ``timeout_s``."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            detail = f"\n{explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{detail}")
        time.sleep(0.02)


# -- records ------------------------------------------------------------------------------------


def record(i: int, source: str) -> Tuple[str, str, List[List[str]]]:
    """The i-th test record: (key, value, headers).  Keys repeat, so several share a partition."""
    return f"key-{i % 40}", f"v{i:04d}", [["seq", str(i)], ["source", source]]


def produce(kind: str, bootstrap: str, topic: str, first: int, count: int) -> None:
    """Produce records ``first .. first+count-1`` with ``kind``'s own producer, acks=all, and wait for them.

    kgroup has no producer of its own: its cells produce with kafka-python's, and so do the java
    cells (their worker is a consumer only: a JVM per produce call would cost seconds).
    """
    records = [record(i, kind) for i in range(first, first + count)]
    if kind in ("kafka-python", "kgroup", "java"):
        import kafka
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        try:
            futures = [producer.send(topic, key=k.encode(), value=v.encode(),
                                     headers=[(n, x.encode()) for n, x in h]) for k, v, h in records]
            producer.flush(30)
            for future in futures:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)
    elif kind == "confluent":
        import confluent_kafka
        errors: list = []
        # murmur2: the partitioner of Java, kafka-python and aiokafka (librdkafka's default is CRC32).
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                             "partitioner": "murmur2_random"})
        for k, v, h in records:
            producer.produce(topic, key=k, value=v, headers=[(n, x.encode()) for n, x in h],
                             on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
            producer.poll(0)
        assert producer.flush(30) == 0, "confluent producer could not deliver every record"
        assert not errors, errors
    elif kind == "aiokafka":
        import aiokafka

        async def run() -> None:
            producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
            await producer.start()
            try:
                futures = [await producer.send(topic, key=k.encode(), value=v.encode(),
                                               headers=[(n, x.encode()) for n, x in h])
                           for k, v, h in records]
                await asyncio.wait_for(asyncio.gather(*futures), 30)
            finally:
                await producer.stop()
        asyncio.run(run())
    else:
        raise ValueError(kind)


def create_topic(kind: str, bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    """CreateTopics through ``kind``'s own admin client (kafka-python's for kgroup and java), RF 3."""
    if kind in ("kafka-python", "kgroup", "java"):
        import kafka
        from kafka.admin import NewTopic
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(topic, partitions, 3)])
        finally:
            admin.close()
    elif kind == "confluent":
        from confluent_kafka.admin import AdminClient, NewTopic as ConfluentNewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
        futures = admin.create_topics(
            [ConfluentNewTopic(topic, num_partitions=partitions, replication_factor=3)])
        futures[topic].result(30)
    elif kind == "aiokafka":
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic as AioNewTopic

        async def run() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                await admin.create_topics([AioNewTopic(topic, partitions, 3)])
            finally:
                await admin.close()
        asyncio.run(run())
    else:
        raise ValueError(kind)


# -- the Java worker -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def java_worker_classpath() -> str:
    """Compile JavaClientWorker.java once per (source, Kafka version); the classpath that runs it.

    The classes go to ``<kgroup cache>/java-client-worker/<version>-<source hash>`` (a fresh machine
    builds them on its first java cell, about 2 s; later sessions reuse them).  Kafka's jars come from
    :func:`kgroup.testing.apache_kafka.kafka_jars` (Maven Central, cached).  A file lock lets several
    pytest processes share the build.
    """
    from kgroup.testing.apache_kafka import KAFKA_VERSION, KafkaUnavailableError, cache_root, kafka_jars

    jars = [jar for jar in kafka_jars(KAFKA_VERSION) if jar.name.startswith(JAVA_CLIENT_JARS)]
    source = JAVA_WORKER_SOURCE.read_bytes()
    digest = hashlib.sha256(source + KAFKA_VERSION.encode()).hexdigest()[:16]
    root = cache_root() / "java-client-worker"
    classes = root / f"{KAFKA_VERSION}-{digest}"
    classpath = os.pathsep.join([str(classes)] + [str(jar) for jar in jars])
    if (classes / "JavaClientWorker.class").exists():
        return classpath
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (classes / "JavaClientWorker.class").exists():
            return classpath
        javac = shutil.which("javac")
        if javac is None:
            raise KafkaUnavailableError("no javac on PATH: the java cells compile their worker (Java 17+)")
        staging = Path(tempfile.mkdtemp(prefix="build-", dir=root))
        built = subprocess.run([javac, "-encoding", "UTF-8", "-Xlint:all", "-Werror", "-d", str(staging),
                                "-cp", os.pathsep.join(str(jar) for jar in jars), str(JAVA_WORKER_SOURCE)],
                               capture_output=True, text=True, timeout=300)
        if built.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise KafkaUnavailableError(f"javac failed on {JAVA_WORKER_SOURCE.name}:\n{built.stderr[-3000:]}")
        staging.rename(classes)
    return classpath


#: MATRIX_WORKER_LOG (a Python level name) as an slf4j-simple level.
_SLF4J_LEVELS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warn", "WARN": "warn", "ERROR": "error"}


def worker_command(kind: str, config: dict) -> List[str]:
    """The command line of one member: server_client_worker.py, or the Java worker for ``java``."""
    if kind != "java":
        return [sys.executable, str(WORKER), json.dumps(config)]
    from kgroup.testing.apache_kafka import java_binary

    level = _SLF4J_LEVELS.get(os.environ.get("MATRIX_WORKER_LOG", "WARNING").upper(), "warn")
    # A small serial-GC heap and C1 only: the JVM starts faster on two busy cores and a member's
    # traffic is light.
    return [java_binary(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}", "-cp", java_worker_classpath(),
            "JavaClientWorker", json.dumps(config)]


# -- what the members saw -------------------------------------------------------------------------


class Ledger:
    """Every event of every member of one test, in arrival order (each carries its own timestamp)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: List[Tuple[str, dict]] = []

    def add(self, member: str, event: dict) -> None:
        with self._lock:
            self._events.append((member, event))

    def events(self, member: Optional[str] = None, kind: Optional[str] = None) -> List[dict]:
        with self._lock:
            return [e for m, e in self._events
                    if (member is None or m == member) and (kind is None or e["e"] == kind)]

    def all_events(self) -> List[Tuple[str, dict]]:
        with self._lock:
            return list(self._events)

    def deliveries(self) -> List[Tuple[float, str, int, int, str, str, list]]:
        """(time, member, partition, offset, key, value, headers) of every record handed out."""
        return [(e["t"], m, p, o, k, v, h) for m, e in self.all_events() if e["e"] == "records"
                for p, o, k, v, h in e["r"]]

    def commits(self) -> List[Tuple[float, str, int, int]]:
        """(time the commit returned, member, partition, committed offset) of every successful commit."""
        return [(e["t"], m, int(p), o) for m, e in self.all_events() if e["e"] == "committed"
                for p, o in e["o"].items()]

    def values(self) -> set:
        return {d[5] for d in self.deliveries()}

    def ownership_intervals(self) -> List[Tuple[str, int, float, float]]:
        """(member, partition, from, to) from the listeners; a crash or close ends what was still owned."""
        opened: Dict[Tuple[str, int], float] = {}
        intervals = []
        for member, e in self.all_events():
            kind = e["e"]
            if kind == "assigned":
                for p in e["p"]:
                    opened.setdefault((member, p), e["t"])
            elif kind in ("revoked", "lost"):
                for p in e["p"]:
                    began = opened.pop((member, p), None)
                    if began is not None:
                        intervals.append((member, p, began, e["t"]))
            elif kind in ("closing", "closed", "killed"):
                for key in [k for k in opened if k[0] == member]:
                    intervals.append((member, key[1], opened.pop(key), e["t"]))
        intervals.extend((m, p, began, INF) for (m, p), began in opened.items())
        return intervals

    # -- the properties every test checks ------------------------------------------------------

    def assert_no_partition_owned_twice(self) -> None:
        """No instant at which two members both held a partition (listener intervals never overlap)."""
        by_partition: Dict[int, list] = {}
        for member, p, began, ended in self.ownership_intervals():
            by_partition.setdefault(p, []).append((began, ended, member))
        for p, spans in by_partition.items():
            spans.sort()
            for (b1, e1, m1), (b2, e2, m2) in zip(spans, spans[1:]):
                assert m1 == m2 or e1 <= b2, (
                    f"partition {p} owned by {m1} ({b1:.3f}..{e1:.3f}) and {m2} ({b2:.3f}..{e2:.3f}) at once")

    def assert_every_record_consumed(self, count: int, topic_sources: Dict[int, str]) -> None:
        """Every value 0..count-1 handed out, each with its own key and headers; one key, one partition."""
        expected = {record(i, topic_sources[i])[1]: record(i, topic_sources[i]) for i in range(count)}
        seen = self.values()
        missing = sorted(set(expected) - seen)
        assert not missing, f"{len(missing)} records never consumed, e.g. {missing[:10]}"
        assert seen <= set(expected), f"unexpected values: {sorted(seen - set(expected))[:10]}"
        partition_of_key: Dict[str, int] = {}
        for _, member, p, o, key, value, headers in self.deliveries():
            want_key, _, want_headers = expected[value]
            assert (key, headers) == (want_key, want_headers), (member, p, o, key, value, headers)
            assert partition_of_key.setdefault(key, p) == p, (
                f"key {key} in partitions {partition_of_key[key]} and {p}")

    def assert_duplicates_only_uncommitted(self) -> int:
        """A record is handed out again only if no commit past it had succeeded before; the duplicates.

        A successful synchronous commit of offset c for partition p means the group will never
        hand out a record of p below c again (the new owner starts from c): a redelivery of an
        offset below a commit acknowledged earlier is lost committed progress.
        """
        acked: Dict[int, List[Tuple[float, int]]] = {}
        for t, _, p, o in self.commits():
            acked.setdefault(p, []).append((t, o))
        first_seen: Dict[Tuple[int, int], Tuple[float, str]] = {}
        duplicates = 0
        for t, member, p, o, *_ in sorted(self.deliveries()):
            if (p, o) not in first_seen:
                first_seen[p, o] = (t, member)
                continue
            duplicates += 1
            committed_before = max((c for tc, c in acked.get(p, []) if tc < t), default=0)
            assert o >= committed_before, (
                f"partition {p} offset {o} handed out again to {member} at {t:.3f} (first to "
                f"{first_seen[p, o][1]} at {first_seen[p, o][0]:.3f}) although offset {committed_before} "
                f"had been committed before")
        return duplicates


class Member:
    """One consumer process; its events go to the shared :class:`Ledger` under ``name``."""

    def __init__(self, ledger: Ledger, name: str, config: dict, log_dir: Path) -> None:
        self.ledger = ledger
        self.name = name
        self.kind = config["kind"]
        self.client_id = config["client_id"]
        self.stderr_path = log_dir / f"{name}.stderr"
        #: Before the process exists: every timestamp it prints must come later (one shared clock).
        self.started_at = time.monotonic()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(worker_command(self.kind, config),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         env=env, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.ledger.add(self.name, event)

    @property
    def owned(self) -> frozenset:
        owned: set = set()
        for e in self.ledger.events(self.name):
            if e["e"] == "assigned":
                owned |= set(e["p"])
            elif e["e"] in ("revoked", "lost"):
                owned -= set(e["p"])
            elif e["e"] in ("closing", "closed", "killed"):
                owned = set()
        return frozenset(owned)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def listener_events(self) -> List[dict]:
        return [e for e in self.ledger.events(self.name) if e["e"] in ("assigned", "revoked", "lost")]

    def close(self, timeout_s: float = 30) -> None:
        """Ask the worker to commit and close its consumer the client's normal way; wait for it to exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        assert self.ledger.events(self.name, "closed"), f"{self.name} did not close cleanly:\n{self.stderr()}"

    def crash(self) -> None:
        """SIGKILL: the kernel closes the sockets; no commit, no LeaveGroup."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        killed_at = time.monotonic()
        self._reader.join(timeout=10)  # what it printed before dying goes in first
        self.ledger.add(self.name, {"e": "killed", "t": killed_at})

    def kill_quietly(self) -> None:
        if self.alive:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def stderr(self, tail: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""


class ClientMatrix:
    """A 3-broker :class:`KafkaServer` plus the members a test starts; everything stopped at teardown."""

    def __init__(self, server: KafkaServer, log_dir: Path) -> None:
        self.server = server
        self.ledger = Ledger()
        self.members: List[Member] = []
        #: Which client produced record i (its headers name it).
        self.sources: Dict[int, str] = {}
        self._log_dir = log_dir

    @property
    def bootstrap(self) -> str:
        # Only the brokers still up: kafka-python 3.0.12 may pick a killed bootstrap address and back
        # off on it beyond its bootstrap timeout (seen once in CI after a coordinator kill).
        return self.server.live_bootstrap_servers

    def create_topic(self, kind: str, topic: str, partitions: int = PARTITIONS) -> None:
        create_topic(kind, self.bootstrap, topic, partitions)

    def produce(self, kind: str, topic: str, first: int, count: int) -> None:
        produce(kind, self.bootstrap, topic, first, count)
        for i in range(first, first + count):
            self.sources[i] = kind

    def assert_every_record_consumed(self) -> None:
        self.ledger.assert_every_record_consumed(len(self.sources), self.sources)

    def assert_one_clock(self) -> None:
        """Every member's timestamps fall between its start and now: the workers (Python's
        time.monotonic(), Java's System.nanoTime()) and the test read the same CLOCK_MONOTONIC,
        which the ownership and commit checks compare across processes."""
        now = time.monotonic()
        for member in self.members:
            times = [e["t"] for e in self.ledger.events(member.name)]
            assert times, f"{member.name} printed nothing"
            assert member.started_at <= min(times) and max(times) <= now, (
                f"{member.name}'s clock is not the test's: started at {member.started_at:.3f}, "
                f"printed {min(times):.3f}..{max(times):.3f}, now {now:.3f}")

    def start(self, kind: str, topic: str, group: str, *, strategy: str = "range",
              instance_id: Optional[str] = None, session_timeout_ms: int = SESSION_TIMEOUT_MS,
              max_records: int = 5, batch_sleep_ms: int = 20, commit_every: int = 3,
              name: Optional[str] = None, group_protocol: str = "classic",
              server_assignor: Optional[str] = None) -> Member:
        """One member of ``kind`` (``kafka-python``, ``kgroup``, ``confluent``, ``aiokafka``, ``java``);
        ``server_assignor`` is KIP-848's ``group.remote.assignor`` (with ``group_protocol="consumer"``)."""
        name = name or f"m{len(self.members)}-{kind}"
        config = dict(kind=kind, bootstrap=self.bootstrap, topic=topic, group=group, client_id=name,
                      strategy=strategy, instance_id=instance_id, session_timeout_ms=session_timeout_ms,
                      heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, max_records=max_records,
                      batch_sleep_ms=batch_sleep_ms, commit_every=commit_every,
                      group_protocol=group_protocol, server_assignor=server_assignor)
        member = Member(self.ledger, name, config, self._log_dir)
        self.members.append(member)
        return member

    def stop_all(self) -> None:
        for member in self.members:
            member.kill_quietly()

    # -- the group as the server sees it ---------------------------------------------------------

    def group(self, group_id: str) -> Optional[dict]:
        """generation, state, leader's instance id and members of the group on its coordinator now."""
        def read() -> Optional[dict]:
            assert self.server.hosting is not None
            coordinator = self.server.hosting.coordinator_for(group_id)
            persisted = None if coordinator is None else coordinator.persisted_view().groups.get(group_id)
            if persisted is None:
                return None
            members = {mid: (r.group_instance_id, r.client_id) for mid, r in persisted.members.items()}
            return {"generation": persisted.header.generation_id, "state": persisted.header.state,
                    "leader": members.get(persisted.header.leader_id or "", (None, None)), "members": members}
        # The coordinator lives on the server's loop thread: read it there (KafkaServer._call).
        return self.server._call(read)

    def generation(self, group_id: str) -> int:
        group = self.group(group_id)
        assert group is not None, f"group {group_id} is not loaded"
        return group["generation"]

    def committed(self, group_id: str, topic: str) -> Dict[int, int]:
        """The group's committed offsets as an OffsetFetch from a stock admin client answers them."""
        import kafka
        admin = kafka.KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            offsets = admin.list_group_offsets(group_id)[group_id]
        finally:
            admin.close()
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}

    def end_offsets(self, topic: str) -> Dict[int, int]:
        def read() -> Dict[int, int]:
            assert self.server.hosting is not None
            cluster = self.server.hosting.cluster
            out = {}
            for p in range(PARTITIONS):
                log = cluster.partition(topic, p).leader_log()
                assert log is not None
                out[p] = log.hw
            return out
        return self.server._call(read)

    # -- waiting ------------------------------------------------------------------------------------

    def settled(self, group_id: str, members: Iterable[Member], partitions: int = PARTITIONS,
                balanced: bool = True) -> bool:
        """Stable on the server, and the members' listeners own every partition exactly once (evenly)."""
        members = list(members)
        owned = [m.owned for m in members]
        union = frozenset().union(*owned)
        if union != frozenset(range(partitions)) or sum(len(o) for o in owned) != partitions:
            return False
        if balanced and max(len(o) for o in owned) - min(len(o) for o in owned) > 1:
            return False
        return self.server.group_state(group_id) == "Stable"

    def wait_settled(self, group_id: str, members: Iterable[Member], what: str = "the group to settle",
                     timeout_s: float = WAIT_S, balanced: bool = True) -> float:
        members = list(members)
        return wait_until(lambda: self.settled(group_id, members, balanced=balanced), what, timeout_s,
                          explain=lambda: self.explain(group_id))

    @staticmethod
    def now() -> float:
        """The clock of every timestamp in the ledger (CLOCK_MONOTONIC, shared with the workers)."""
        return time.monotonic()

    def wait_until(self, predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S,
                   group_id: Optional[str] = None) -> float:
        return wait_until(predicate, what, timeout_s, explain=lambda: self.explain(group_id))

    def wait_quiet(self, group_id: str, quiet_s: float = 1.0, timeout_s: float = WAIT_S) -> int:
        """Until the group has been Stable in one generation for ``quiet_s``; that generation.

        A member can still be finishing a rebalance of its own when the listeners already show a
        settled group (kafka-python's leader rejoins once its metadata snapshot catches up with the
        assignment it made): tests that count generations start from a quiet group.
        """
        seen: List[Tuple[Optional[int], float]] = [(None, time.monotonic())]

        def quiet() -> bool:
            group = self.group(group_id)
            generation = None if group is None or group["state"] != "Stable" else group["generation"]
            if generation is None or generation != seen[0][0]:
                seen[0] = (generation, time.monotonic())
                return False
            return time.monotonic() - seen[0][1] >= quiet_s
        wait_until(quiet, f"group {group_id} to stay Stable for {quiet_s} s", timeout_s,
                   explain=lambda: self.explain(group_id))
        assert seen[0][0] is not None
        return seen[0][0]

    def preempted_syncs(self, since: float) -> int:
        """SyncGroups answered REBALANCE_IN_PROGRESS since ``since``: a member that lost a generation.

        In the classic protocol (Kafka's coordinator as ours) the leader's SyncGroup makes the group
        Stable, so a cooperative leader that must revoke can rejoin before a follower has sent its
        SyncGroup; the new rebalance answers that SyncGroup with REBALANCE_IN_PROGRESS and the
        follower learns what it must revoke one generation late: one more round.
        """
        return sum(1 for e in self.server.trace("SyncGroup")
                   if e.received_ms >= since * 1000 and e.error_code == 27)

    def lost_joins(self, since: float) -> int:
        """Joins kafka-python members threw away after ``since``
        (``server_client_worker._report_lost_joins``)."""
        return sum(1 for e in self.ledger.events(kind="lost_join") if e["t"] > since)

    def wait_consumed(self, values: int, what: str = "every record to be consumed",
                      timeout_s: float = WAIT_S, group_id: Optional[str] = None) -> float:
        expected = {f"v{i:04d}" for i in range(values)}
        return wait_until(lambda: expected <= self.ledger.values(), what, timeout_s,
                          explain=lambda: self.explain(group_id))

    def acked_commits(self) -> Dict[int, int]:
        """The highest offset each partition's commits reached, as the members saw them acknowledged."""
        acked: Dict[int, int] = {}
        for _, _, p, offset in self.ledger.commits():
            acked[p] = max(acked.get(p, 0), offset)
        return acked

    def wait_caught_up(self, topic: str, group_id: str, timeout_s: float = WAIT_S) -> float:
        """Until the members have consumed and committed every partition to its end."""
        end = {p: o for p, o in self.end_offsets(topic).items() if o > 0}
        return wait_until(lambda: all(self.acked_commits().get(p, 0) >= o for p, o in end.items()),
                          "the members to commit every partition to its end", timeout_s,
                          explain=lambda: f"end offsets {end}, acked commits {self.acked_commits()}\n"
                                          + self.explain(group_id))

    def explain(self, group_id: Optional[str] = None) -> str:
        lines = []
        if group_id is not None:
            try:
                lines.append(f"group: {self.group(group_id)}")
            except Exception as error:  # diagnostics only
                lines.append(f"group: unreadable ({error!r})")
        lines.append(f"consumed {len(self.ledger.values())} distinct records")
        reached: Dict[int, int] = {}
        for _, _, p, o, *_ in self.ledger.deliveries():
            reached[p] = max(reached.get(p, 0), o + 1)
        lines.append(f"handed out up to {dict(sorted(reached.items()))}, acked commits "
                     f"{dict(sorted(self.acked_commits().items()))}")
        for m in self.members:
            events = [(e["e"], e.get("p")) for e in m.listener_events()][-6:]
            lines.append(f"{m.name}: alive={m.alive} owned={sorted(m.owned)} last events={events}")
            failed = self.ledger.events(m.name, "commit_failed")[-2:]
            if failed:
                lines.append(f"  commit failures: {[e['err'] for e in failed]}")
            stderr = m.stderr(800)
            if stderr.strip():
                lines.append("  stderr: " + stderr.replace("\n", "\n    "))
        return "\n".join(lines)


@pytest.fixture
def client_matrix(tmp_path):
    """A :class:`ClientMatrix` over a fresh 3-broker server (no initial rebalance delay)."""
    no_delay = GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0)
    with KafkaServer(brokers=3, coordinator=no_delay) as server:
        matrix = ClientMatrix(server, tmp_path)
        try:
            yield matrix
        finally:
            matrix.stop_all()


@pytest.fixture
def broker_client_matrix(kafka_broker, tmp_path):
    """A :class:`ClientMatrix` over the ``kafka_broker`` fixture (configured by its marker)."""
    matrix = ClientMatrix(kafka_broker, tmp_path)
    try:
        yield matrix
    finally:
        matrix.stop_all()


# -- the same members on Apache Kafka itself (the reference tier) ---------------------------------


class ApacheKafkaView:
    """What the client-matrix tests read from the broker, asked of real Kafka over the wire.

    Stands in for the :class:`KafkaServer` a :class:`ClientMatrix` usually inspects: the group's
    state and members come from DescribeGroups on its coordinator (Kafka does not expose a classic
    group's generation, so tests on Kafka count rebalances from the members' listeners), end
    offsets from ListOffsets, the coordinator from FindCoordinator.
    """

    def __init__(self, kafka: Any) -> None:
        self.kafka = kafka

    @property
    def live_bootstrap_servers(self) -> str:
        return ",".join(self.kafka.address(node) for node in self.kafka.alive_node_ids())

    def _ask(self, request: Any, node_id: Optional[int] = None) -> Any:
        from kgroup.testing.raw_kafka_connection import send_raw_request
        nodes = [node_id] if node_id is not None else self.kafka.alive_node_ids()
        last: Optional[Exception] = None
        for node in nodes:
            try:
                return send_raw_request(self.kafka.address(node), request, timeout_s=5.0)
            except OSError as error:
                last = error
        raise AssertionError(f"no Kafka node answered {type(request).__name__}: {last!r}")

    def coordinator_node(self, group_id: str) -> Optional[int]:
        answer = self._ask(FindCoordinatorRequest[4](key_type=0, coordinator_keys=[group_id]))
        coordinator = answer.coordinators[0]
        return None if coordinator.error_code else coordinator.node_id

    def describe(self, group_id: str) -> Optional[Any]:
        node = self.coordinator_node(group_id)
        if node is None or node not in self.kafka.alive_node_ids():
            return None
        try:
            request = DescribeGroupsRequest[5](groups=[group_id], include_authorized_operations=False)
            described = self._ask(request, node).groups[0]
        except AssertionError:
            return None
        return None if described.error_code else described

    def group_state(self, group_id: str) -> Optional[str]:
        """The classic group's state, or the consumer group's (KIP-848: Kafka describes a consumer group
        only through ConsumerGroupDescribe; DescribeGroups answers it as Dead)."""
        described = self.describe(group_id)
        if described is not None and described.group_state != "Dead":
            return described.group_state
        from kgroup.wire.kafka_python import ConsumerGroupDescribeRequestStruct
        node = self.coordinator_node(group_id)
        if node is None or node not in self.kafka.alive_node_ids():
            return None
        try:
            answer = self._ask(ConsumerGroupDescribeRequestStruct[0](group_ids=[group_id],
                                                                     include_authorized_operations=False),
                               node)
        except AssertionError:
            return None
        group = answer.groups[0]
        return None if group.error_code else group.group_state

    def kill_broker(self, node_id: int) -> None:
        self.kafka.kill(node_id)


class ApacheKafkaClientMatrix(ClientMatrix):
    """A :class:`ClientMatrix` whose members run against the session's 3-node Apache Kafka."""

    def __init__(self, kafka: Any, log_dir: Path) -> None:
        super().__init__(ApacheKafkaView(kafka), log_dir)  # type: ignore[arg-type]
        self.kafka = kafka

    def group(self, group_id: str) -> Optional[dict]:
        described = self.server.describe(group_id)  # type: ignore[attr-defined]
        if described is None:
            return None
        members = {m.member_id: (m.group_instance_id, m.client_id) for m in described.members}
        return {"generation": None, "state": described.group_state, "leader": (None, None),
                "members": members}

    def committed(self, group_id: str, topic: str) -> Dict[int, int]:
        """As :meth:`ClientMatrix.committed`, retried while Kafka's coordinator moves or loads the group
        (NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS are retriable: a client retries them)."""
        import kafka.errors
        answer: List[Dict[int, int]] = []

        def read() -> bool:
            try:
                answer.append(ClientMatrix.committed(self, group_id, topic))
                return True
            except (kafka.errors.NotCoordinatorError, kafka.errors.CoordinatorLoadInProgressError,
                    kafka.errors.CoordinatorNotAvailableError):
                return False
        wait_until(read, f"Kafka to answer OffsetFetch for {group_id}")
        return answer[-1]

    def end_offsets(self, topic: str) -> Dict[int, int]:
        import kafka
        consumer = kafka.KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            partitions = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
            return {tp.partition: offset for tp, offset in consumer.end_offsets(partitions).items()}
        finally:
            consumer.close()

    def rounds_since(self, members: Iterable[Member], since: float) -> int:
        """Rebalances the members' listeners took part in since ``since``: the most "assigned" callbacks
        any one member saw (the cooperative listener is called after every rebalance, KIP-429)."""
        return max((sum(1 for e in m.listener_events() if e["e"] == "assigned" and e["t"] > since)
                    for m in members), default=0)


@pytest.fixture
def kafka_client_matrix(apache_kafka, tmp_path):
    """An :class:`ApacheKafkaClientMatrix` on the session's Apache Kafka; every node is up again after."""
    matrix = ApacheKafkaClientMatrix(apache_kafka, tmp_path)
    try:
        yield matrix
    finally:
        matrix.stop_all()
        for node in apache_kafka.node_ids:
            if node not in apache_kafka.alive_node_ids():
                apache_kafka.restart(node)
