"""Fixtures shared by the wire-server tests (test modules do not import each other).

* ``server`` / ``server1``: a running :class:`KafkaServer` (3 brokers / 1 broker) with the
  coordinator's initial rebalance delay at 0 and a 100 ms minimum session timeout.
* ``raw_client``: opens a :class:`RawClient` (a plain socket speaking kafka-python's request
  and response classes) to a listener, closed after the test.
* ``make_engine``: a sans-I/O :class:`ServerEngine` wrapped in an :class:`EngineHarness`
  (no sockets, no threads, time is whatever the test passes).
* ``valid_requests``: one realistic request of every served API at every served version.
"""
from __future__ import annotations

import socket
import struct
import sys
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from kafka.protocol.admin import (
    CreatePartitionsRequest, CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest,
    DescribeGroupsRequest, ListGroupsRequest,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import (
    FetchRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, ListOffsetsRequest,
    OffsetCommitRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest, SyncGroupRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kgroup.core.cluster.config import ClusterConfig
from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
from kgroup.core.cluster.state_machine import ClusterStateMachine
from kgroup.core.coordinator import GroupCoordinatorConfig
from kgroup.server import KafkaServer, ServerConfig
from kgroup.server.data_plane import DataPlane
from kgroup.server.engine import Reply, ServerEngine
from kgroup.server.versions import SUPPORTED_VERSIONS

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
        self.now_ms = now_ms
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

    def advance(self, delta_ms: int) -> List[Reply]:
        """Move time forward, firing every deadline on the way in order (like KafkaServer.advance)."""
        target = self.now_ms + delta_ms
        out: List[Reply] = []
        while True:
            deadline = self.engine.next_deadline_ms()
            if deadline is None or deadline > target:
                break
            self.now_ms = max(deadline, self.now_ms)
            out.extend(self._collect(self.engine.tick(self.now_ms)))
        self.now_ms = target
        out.extend(self._collect(self.engine.tick(self.now_ms)))
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
    add(ApiKey.CreatePartitions, CreatePartitionsRequest, timeout_ms=1_000, validate_only=False,
        topics=lambda v: [CreatePartitionsRequest.CreatePartitionsTopic(version=v, name="t", count=4,
                                                                        assignments=None)])
    add(ApiKey.DeleteGroups, DeleteGroupsRequest, groups_names=["g", "zz"])
    epoch_topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    add(ApiKey.OffsetForLeaderEpoch, OffsetForLeaderEpochRequest, replica_id=-1, topics=lambda v: [
        epoch_topic(version=v, topic="t", partitions=[
            epoch_topic.OffsetForLeaderPartition(version=v, partition=i, current_leader_epoch=-1,
                                                 leader_epoch=0)
            for i in range(2)])])
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
