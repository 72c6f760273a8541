"""The wire server under a careless or hostile client (issue 23, items 1-6): prints figures.

    python benchmarks/wire_hardening.py idle [--topics 10 --partitions 10000]
    python benchmarks/wire_hardening.py fetch-flood [--requests 300]
    python benchmarks/wire_hardening.py big-metadata [--names 300000]
    python benchmarks/wire_hardening.py trace [--requests 1000000]
    python benchmarks/wire_hardening.py answers

Every server runs as its own process (``python -m kgroup.server``, what ``kgroup serve`` runs),
except ``trace``, which drives the engine in this process.  ``KGROUP_BENCH_SERVER_PYTHONPATH``
points the server process at another checkout (how before/after figures are taken).

- ``idle``: creates ``--topics`` topics of ``--partitions`` partitions on 3 brokers, then reads
  the server's CPU time (utime+stime, /proc/<pid>/stat) over 10 idle seconds, times a Metadata
  request for one topic and an ApiVersions ping, and times SIGINT to exit.
  Goal: < 5 % of a core and < 100 ms at 100,000 partitions; SIGINT exits within a few seconds.
- ``fetch-flood``: one connection sends ``--requests`` Fetch requests of 1 MB each for a partition
  holding ~1 MB and never reads; prints the server's resident memory (VmRSS) before and after.
  Goal: growth about one response, not one per request.
- ``big-metadata``: a Metadata request naming ``--names`` topics (about 2.9 MB at 300,000) on
  broker 1 while a second client pings ApiVersions on broker 2 every 5 ms; prints the longest
  ping and the server's peak memory growth.  Goal: no ping above ~200 ms.
- ``trace``: ``--requests`` ApiVersions requests through a ServerEngine with the trace as
  ``kgroup serve`` sets it up; prints traced memory (tracemalloc) at checkpoints.  Goal: flat.
- ``answers``: the error codes a Produce to ``__consumer_offsets`` and two corrupt record
  batches get (Kafka: 17; 2 / 87 per LogValidator), and whether anything was appended.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._wire import _server_env, _server_path, cpu_s, first_metadata, rss_kb  # noqa: E402


# -- a server process ---------------------------------------------------------------------------

def start_server(brokers: int, extra: Optional[List[str]] = None) -> tuple:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgroup.server", "--brokers", str(brokers), "--port", "0", *(extra or [])],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=_server_env(), cwd=_server_path())
    bootstrap = (proc.stdout.readline() if proc.stdout else "").strip()
    if not bootstrap:
        raise RuntimeError(f"server exited ({proc.wait(timeout=10)}) before listening")
    first_metadata(bootstrap, brokers, 30.0, proc)
    return proc, [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in bootstrap.split(","))]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def connect(address: tuple, timeout_s: float = 120.0) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(min(size - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def call(sock: socket.socket, request: Any, correlation_id: int = 1) -> Any:
    request.with_header(correlation_id=correlation_id, client_id="wire-hardening")
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    from kafka.protocol.api_header import ResponseClassRegistry

    response_class = ResponseClassRegistry.get_response_class(request.header)
    return response_class.decode(recv_exactly(sock, size), version=request.API_VERSION, header=True)


def create_topics(address: tuple, names: List[str], partitions: int, replication_factor: int = 3) -> None:
    from kafka.protocol.admin import CreateTopicsRequest

    topic_cls = CreateTopicsRequest.CreatableTopic
    with connect(address) as sock:
        for name in names:
            request = CreateTopicsRequest(version=4, timeout_ms=60_000, validate_only=False, topics=[
                topic_cls(version=4, name=name, num_partitions=partitions,
                          replication_factor=replication_factor, assignments=[], configs=[])])
            answer = call(sock, request)
            codes = [t.error_code for t in answer.topics]
            if codes != [0]:
                raise RuntimeError(f"CreateTopics {name}: {codes}")


def ping(sock: socket.socket, correlation_id: int) -> float:
    from kafka.protocol.metadata import ApiVersionsRequest

    started = time.perf_counter()
    call(sock, ApiVersionsRequest(version=0), correlation_id)
    return time.perf_counter() - started


def metadata_timed(address: tuple, topic: str) -> tuple:
    """(seconds until the answer is decoded, seconds until the server had answered it in full):
    the second is the server's share, the rest kafka-python's decoding of the answer."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    with connect(address) as sock:
        asked = [MetadataRequest.MetadataRequestTopic(version=1, name=topic)]
        request = MetadataRequest(version=1, topics=asked)
        request.with_header(correlation_id=1, client_id="wire-hardening")
        started = time.perf_counter()
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        frame = recv_exactly(sock, size)
        received = time.perf_counter()
        MetadataResponse.decode(frame, version=1, header=True)
        return time.perf_counter() - started, received - started


# -- idle ----------------------------------------------------------------------------------------------

def idle(args: argparse.Namespace) -> None:
    proc, addresses = start_server(3)
    try:
        started = time.perf_counter()
        names = [f"idle-{i}" for i in range(args.topics)]
        create_topics(addresses[0], names, args.partitions)
        print(f"created {args.topics} x {args.partitions} partitions (rf 3) in "
              f"{time.perf_counter() - started:.1f} s")
        time.sleep(2)
        before = cpu_s(proc.pid)
        time.sleep(args.seconds)
        used = cpu_s(proc.pid) - before
        print(f"idle CPU over {args.seconds:.0f} s: {100 * used / args.seconds:.1f} % of a core")
        timed = [metadata_timed(addresses[0], names[0]) for _ in range(5)]
        times = [total for total, _ in timed]
        print(f"Metadata for one {args.partitions}-partition topic: first {1000 * times[0]:.0f} ms "
              f"(server {1000 * timed[0][1]:.0f} ms), best {1000 * min(times):.0f} ms, "
              f"worst {1000 * max(times):.0f} ms; server's share (answer received) best "
              f"{1000 * min(received for _, received in timed):.0f} ms, worst "
              f"{1000 * max(received for _, received in timed):.0f} ms")
        with connect(addresses[1]) as sock:
            pings = [ping(sock, i) for i in range(20)]
        print(f"ApiVersions ping: worst {1000 * max(pings):.1f} ms")
        print(f"server RSS {rss_kb(proc.pid) / 1024:.0f} MB")
        signalled = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
            print(f"SIGINT -> exit in {time.perf_counter() - signalled:.2f} s")
        except subprocess.TimeoutExpired:
            print("SIGINT -> still running after 30 s")
    finally:
        stop(proc)


# -- fetch flood -----------------------------------------------------------------------------------

def _produce_megabyte(address: tuple, topic: str) -> None:
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=2 << 20)
    value = os.urandom(1000)
    for i in range(1000):
        builder.append(timestamp=int(time.time() * 1000), key=None, value=value)
    builder.close()
    records = builder.buffer()
    topic_cls = ProduceRequest.TopicProduceData
    request = ProduceRequest(version=7, transactional_id=None, acks=1, timeout_ms=10_000, topic_data=[
        topic_cls(version=7, name=topic, partition_data=[
            topic_cls.PartitionProduceData(version=7, index=0, records=bytes(records))])])
    with connect(address) as sock:
        answer = call(sock, request)
    code = answer.responses[0].partition_responses[0].error_code
    if code != 0:
        raise RuntimeError(f"produce answered {code}")


def fetch_request(topic: str, max_bytes: int = 1 << 20) -> Any:
    from kafka.protocol.consumer import FetchRequest

    topic_cls = FetchRequest.FetchTopic
    return FetchRequest(version=4, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes,
                        isolation_level=0, topics=[topic_cls(version=4, topic=topic, partitions=[
                            topic_cls.FetchPartition(version=4, partition=0, fetch_offset=0,
                                                     partition_max_bytes=max_bytes)])])


def fetch_flood(args: argparse.Namespace) -> None:
    proc, addresses = start_server(1)
    try:
        create_topics(addresses[0], ["flood"], 1, 1)
        _produce_megabyte(addresses[0], "flood")
        time.sleep(1)
        rss_before = rss_kb(proc.pid)
        sock = connect(addresses[0])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        frames = b""
        for i in range(args.requests):
            request = fetch_request("flood")
            request.with_header(correlation_id=i, client_id="never-reads")
            frames += bytes(request.encode(header=True, framed=True))
        sock.setblocking(False)
        sent = 0
        deadline = time.monotonic() + 10
        while sent < len(frames) and time.monotonic() < deadline:
            try:
                sent += sock.send(frames[sent:sent + 65536])
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(args.settle)
        rss_after = rss_kb(proc.pid)
        print(f"{args.requests} unread 1 MB fetches ({100 * sent // len(frames)} % of the request bytes "
              f"accepted by the server): server RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MB "
              f"(+{(rss_after - rss_before) / 1024:.0f} MB)")
        with connect(addresses[0]) as other:
            print(f"another client's ping meanwhile: {1000 * ping(other, 1):.1f} ms")
        sock.close()
    finally:
        stop(proc)


# -- big metadata ----------------------------------------------------------------------------------

def big_metadata(args: argparse.Namespace) -> None:
    from kafka.protocol.metadata import MetadataRequest

    proc, addresses = start_server(3)
    try:
        topic_cls = MetadataRequest.MetadataRequestTopic
        request = MetadataRequest(version=4, allow_auto_topic_creation=False, topics=[
            topic_cls(version=4, name=f"t{i:06d}") for i in range(args.names)])
        request.with_header(correlation_id=7, client_id="big-metadata")
        frame = bytes(request.encode(header=True, framed=True))
        pinger = connect(addresses[1])
        ping(pinger, 0)
        rss_before = rss_kb(proc.pid)
        worst: List[float] = []
        done = threading.Event()

        def pings() -> None:
            i = 1
            while not done.is_set():
                worst.append(ping(pinger, i))
                i += 1
                time.sleep(0.005)

        thread = threading.Thread(target=pings, daemon=True)
        thread.start()
        time.sleep(3)  # a baseline: how long pings take on this machine with no big request
        baseline = list(worst)
        worst.clear()
        with connect(addresses[0]) as big:
            started = time.perf_counter()
            big.sendall(frame)
            (size,) = struct.unpack(">i", recv_exactly(big, 4))
            recv_exactly(big, size)
            took = time.perf_counter() - started
        time.sleep(0.2)
        done.set()
        thread.join(timeout=60)
        pinger.close()
        print(f"Metadata naming {args.names} topics ({len(frame) / 1e6:.1f} MB): answered in {took:.2f} s "
              f"({size / 1e6:.1f} MB)")
        print(f"ApiVersions pings on broker 2 meanwhile: {len(worst)}, worst {1000 * max(worst):.0f} ms "
              f"(3 s before it: {len(baseline)} pings, worst {1000 * max(baseline):.0f} ms)")
        print(f"server peak RSS growth: +{(_peak_kb(proc.pid) - rss_before) / 1024:.0f} MB")
    finally:
        stop(proc)


def _peak_kb(pid: int) -> int:
    from benchmarks._wire import peak_rss_kb
    return peak_rss_kb(pid)


# -- trace -------------------------------------------------------------------------------------------

def trace(args: argparse.Namespace) -> None:
    import tracemalloc

    from kafka.protocol.metadata import ApiVersionsRequest

    engine = _engine(**_serve_trace_options())
    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="trace")
    frame = bytes(request.encode(header=True, framed=False))
    engine.connection_opened(1, 1, "127.0.0.1")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    checkpoints = {args.requests // 4 * k for k in (1, 2, 3, 4)}
    for i in range(1, args.requests + 1):
        engine.handle(1, frame, i)
        if i in checkpoints:
            grown = (tracemalloc.get_traced_memory()[0] - base) / 1e6
            print(f"after {i:>9,} requests: traced memory +{grown:.1f} MB, "
                  f"{len(engine.trace)} trace entries", flush=True)
    tracemalloc.stop()


def _engine(**options: Any) -> Any:
    """A ServerEngine on a one-broker cluster, as KafkaServer.start builds it, with no sockets."""
    from kgroup.core.cluster.config import ClusterConfig
    from kgroup.core.cluster.group_hosting import GroupHosting, GroupHostingConfig
    from kgroup.core.cluster.state_machine import ClusterStateMachine
    from kgroup.server.config import ServerConfig
    from kgroup.server.data_plane import DataPlane
    from kgroup.server.engine import ServerEngine

    config = ServerConfig(**options)
    cluster_config = ClusterConfig(broker_ids=config.broker_ids, default_replication_factor=1)
    cluster = ClusterStateMachine(cluster_config, 0)
    hosting = GroupHosting(cluster, GroupHostingConfig(offsets_topic_partitions=config.offsets_partitions,
                                                       eager_replication=True), 0)
    return ServerEngine(hosting, DataPlane(cluster, config), 0)


def _serve_trace_options() -> dict:
    """The trace settings ``kgroup serve`` uses (the ServerConfig default when there are none)."""
    return {}


# -- answers -----------------------------------------------------------------------------------------

def answers(args: argparse.Namespace) -> None:
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    from kgroup.server.crc32c import crc32c

    proc, addresses = start_server(1)
    try:
        create_topics(addresses[0], ["plain"], 1, 1)
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
        builder.append(timestamp=int(time.time() * 1000), key=None, value=b"one record")
        builder.close()
        good = bytearray(builder.buffer())

        def with_crc(batch: bytearray) -> bytes:
            struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
            return bytes(batch)

        claims_1000 = bytearray(good)
        struct.pack_into(">i", claims_1000, 57, 1000)          # records count
        struct.pack_into(">i", claims_1000, 23, 999)           # last offset delta, to agree
        garbage = bytearray(good[:61]) + bytearray(b"\x00not gzip at all" * 4)
        struct.pack_into(">i", garbage, 8, len(garbage) - 12)  # batch length
        struct.pack_into(">h", garbage, 21, 1)                 # attributes: gzip
        cases = [("__consumer_offsets", 0, bytes(good)), ("plain", 0, with_crc(claims_1000)),
                 ("plain", 0, with_crc(garbage))]
        labels = ["Produce to __consumer_offsets", "batch claiming 1,000 records holding 1",
                  "gzip-flagged batch, garbage payload, correct CRC"]
        topic_cls = ProduceRequest.TopicProduceData
        with connect(addresses[0]) as sock:
            for (topic, partition, records), label in zip(cases, labels):
                request = ProduceRequest(version=7, transactional_id=None, acks=1, timeout_ms=10_000,
                                         topic_data=[topic_cls(version=7, name=topic, partition_data=[
                                             topic_cls.PartitionProduceData(version=7, index=partition,
                                                                            records=records)])])
                answer = call(sock, request)
                part = answer.responses[0].partition_responses[0]
                print(f"{label}: error {part.error_code}, base offset {part.base_offset}")
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("idle")
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--partitions", type=int, default=10_000)
    p.add_argument("--seconds", type=float, default=10.0)
    p.set_defaults(run=idle)
    p = commands.add_parser("fetch-flood")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--settle", type=float, default=5.0)
    p.set_defaults(run=fetch_flood)
    p = commands.add_parser("big-metadata")
    p.add_argument("--names", type=int, default=300_000)
    p.set_defaults(run=big_metadata)
    p = commands.add_parser("trace")
    p.add_argument("--requests", type=int, default=1_000_000)
    p.set_defaults(run=trace)
    p = commands.add_parser("answers")
    p.set_defaults(run=answers)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
