"""Start Apache Kafka itself (KRaft, 1 or 3 combined broker+controller nodes) for the reference tier.

Kafka's behaviour is kgroup's spec, so the test suite runs kgroup's consumers and its conformance
scenarios against the real broker.  The jars come from Maven Central only (no distribution
tarball): ``mvn dependency:copy-dependencies`` of ``org.apache.kafka:kafka_2.13`` into a user
cache folder, once per version.  Each node is one JVM running ``kafka.Kafka`` on loopback ports
with the test settings of :func:`node_properties` (each one says why it differs from Kafka's
default); storage is formatted with Kafka's own ``StorageTool``.

    with ApacheKafkaCluster(nodes=3) as kafka:
        consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, ...)
        kafka.kill(kafka.node_ids[0])      # SIGKILL: no controlled shutdown
        kafka.restart(kafka.node_ids[0])

The pinned version is :data:`KAFKA_VERSION`; every recorded result names it.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from kgroup.errors import KGroupError
from kgroup.testing.raw_kafka_connection import send_raw_request

#: The one place the reference Kafka version is pinned (resolved from Maven Central on 2026-11-25).
KAFKA_VERSION = "4.4.0"
#: Kafka 4.x logs through SLF4J 1.7 (slf4j-api 1.7.36 in its dependency tree): the simple binding
#: of the same line writes WARN and above to the node's log file.
_SLF4J_SIMPLE_VERSION = "1.7.36"
#: How long one node may take from JVM start to answering Metadata (a few seconds on 2 idle cores).
STARTUP_BUDGET_S = 120.0
#: How long ``mvn`` may take to resolve Kafka's jars on the first run (about 45 s seen here).
FETCH_BUDGET_S = 900.0


class KafkaUnavailableError(KGroupError):
    """Apache Kafka could not be fetched or started (no Java, no Maven, no network, a node died)."""


def cache_root() -> Path:
    """Where fetched jars and nothing else live: ``$KGROUP_CACHE_DIR`` or the user cache folder."""
    explicit = os.environ.get("KGROUP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgroup"


def _pom(version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgroup.reference</groupId><artifactId>apache-kafka-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>
      <version>{_SLF4J_SIMPLE_VERSION}</version></dependency>
  </dependencies>
</project>
"""


def kafka_jars(version: str = KAFKA_VERSION) -> List[Path]:
    """The jars that run Kafka ``version`` (broker, client, their dependencies); fetched once.

    Concurrent callers (several pytest processes) take a file lock, so only one runs Maven.
    """
    library = cache_root() / "apache-kafka" / version / "lib"
    jars = jars_fetched_once(library, lambda: _fetch_jars(version, library))
    if not any(jar.name == f"kafka_2.13-{version}.jar" for jar in jars):
        raise KafkaUnavailableError(
            f"the jar cache {library} has no kafka_2.13-{version}.jar; delete it and retry")
    return jars


def jars_fetched_once(library: Path, fetch: Callable[[], None]) -> List[Path]:
    """The jars in ``library``, running ``fetch`` first unless a finished fetch left its ``.complete``
    marker there.  Concurrent callers (several pytest processes) take a file lock, so one fetches."""
    marker = library / ".complete"
    if not marker.exists():
        library.parent.mkdir(parents=True, exist_ok=True)
        with open(library.parent / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not marker.exists():
                fetch()
    return sorted(library.glob("*.jar"))


def _fetch_jars(version: str, library: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailableError("Maven (mvn) is not on PATH; it fetches Kafka's jars from Maven Central")
    with tempfile.TemporaryDirectory(prefix="kgroup-kafka-pom-") as work:
        Path(work, "pom.xml").write_text(_pom(version))
        staging = Path(work, "lib")
        try:
            done = subprocess.run(
                [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
                cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=FETCH_BUDGET_S)
        except subprocess.TimeoutExpired as exc:
            raise KafkaUnavailableError(
                f"Maven did not fetch Kafka {version} within {FETCH_BUDGET_S:.0f} s") from exc
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise KafkaUnavailableError(f"Maven could not fetch Kafka {version}: " + " | ".join(tail))
        if library.exists():
            shutil.rmtree(library)
        shutil.move(str(staging), str(library))
    (library / ".complete").write_text(version + "\n")


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home, "bin", "java") if home else None
    if candidate is not None and candidate.is_file():
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise KafkaUnavailableError("no java on PATH (Kafka 4.x needs Java 17 or newer)")
    return found


def _free_ports(count: int) -> List[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def cluster_id() -> str:
    """A Kafka cluster id as ``Uuid.randomUuid()`` makes one: 16 random bytes in URL-safe base64 without
    padding, never starting with ``-`` (Kafka draws again: such an id reads as an option on a command
    line, and StorageTool's ``-t`` refused one, 1 start in 64)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not candidate.startswith("-"):
            return candidate


def node_properties(node_id: int, broker_port: int, controller_port: int, voters: str, node_count: int,
                    log_dir: Path, overrides: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """server.properties of one combined broker+controller node, every test setting explained."""
    replicas = str(min(3, node_count))
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,  # a static quorum: no dynamic voter bootstrap needed
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        # A new group forms at once (Kafka: 3 s), as in Kafka's own integration tests.
        "group.initial.rebalance.delay.ms": "0",
        # Short classic sessions allowed (Kafka: 6 s minimum), as kgroup's fast tests use.
        "group.min.session.timeout.ms": "100",
        # KIP-848 sessions and heartbeats (Kafka: 45 s minimum session, 5 s heartbeat, 5 s minimum).
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "500",
        # KIP-848 target assignments computed at once, on the coordinator thread, as in Kafka 4.0
        # (Kafka 4.4: batched at most once a second and offloaded to another thread), so that a
        # heartbeat's answer does not depend on when it arrives; the conformance suite's recorded
        # answers need that.
        "group.consumer.assignment.interval.ms": "0",
        "group.consumer.assignor.offload.enable": "false",
        # Internal topics replicated over every node up to 3, with few partitions so that the first
        # FindCoordinator does not wait for 50 partitions to be created (Kafka: 50, RF 3).
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": str(min(2, node_count)),
        "transaction.state.log.num.partitions": "5",
        "default.replication.factor": replicas,
        "min.insync.replicas": "1",
        # A killed node is fenced within ~3 s (Kafka: 9 s session, 2 s heartbeats), so failover tests
        # finish quickly; a follower that lost its leader catches up well within the lag bound.
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "5000",
        # Two cores run up to three JVMs: fewer threads per node than Kafka's defaults (3 / 8 / 10).
        "num.network.threads": "1",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.replica.fetchers": "1",
    }
    properties.update(overrides or {})
    return properties


class _Node:
    def __init__(self, node_id: int, broker_port: int, controller_port: int, folder: Path) -> None:
        self.node_id = node_id
        self.broker_port = broker_port
        self.controller_port = controller_port
        self.folder = folder
        self.process: Optional[subprocess.Popen] = None

    @property
    def properties_path(self) -> Path:
        return self.folder / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.folder / "kafka.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class ApacheKafkaCluster:
    """Apache Kafka ``version`` as ``nodes`` JVMs on loopback; ``start()`` returns when Metadata answers.

    ``overrides`` replace any of :func:`node_properties`' settings on every node.  ``kill()`` is a
    SIGKILL (no controlled shutdown, as a crash), ``stop()`` a clean shutdown, ``restart()``
    starts a stopped or killed node on the same ports and storage.
    """

    def __init__(self, nodes: int = 1, version: str = KAFKA_VERSION,
                 overrides: Optional[Mapping[str, str]] = None, work_dir: Optional[Path] = None,
                 heap_mb: int = 512, ready_poll_s: float = 0.2) -> None:
        if nodes < 1:
            raise KafkaUnavailableError(f"an Apache Kafka cluster needs at least 1 node, not {nodes}")
        self.version = version
        self.overrides = dict(overrides or {})
        self.heap_mb = heap_mb
        #: How often start-up asks for Metadata: the resolution of :attr:`start_time_s` (a benchmark
        #: timing the start asks every millisecond).
        self.ready_poll_s = ready_poll_s
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="kgroup-apache-kafka-"))
        ports = _free_ports(2 * nodes)
        self._nodes = [_Node(index + 1, ports[2 * index], ports[2 * index + 1],
                             self.work_dir / f"node-{index + 1}") for index in range(nodes)]
        #: Seconds from the JVMs' launch to every node answering Metadata (the figure reported).
        self.start_time_s: Optional[float] = None
        #: The same plus fetching jars (when not cached) and formatting the storage.
        self.total_start_time_s: Optional[float] = None
        self._classpath = ""

    # -- facts ------------------------------------------------------------------------------

    @property
    def node_ids(self) -> List[int]:
        return [node.node_id for node in self._nodes]

    @property
    def bootstrap_servers(self) -> str:
        """Every node's listener (a client uses whichever answers)."""
        return ",".join(node.address for node in self._nodes)

    def address(self, node_id: int) -> str:
        return self._node(node_id).address

    def alive_node_ids(self) -> List[int]:
        return [node.node_id for node in self._nodes if node.alive()]

    def node_process(self, node_id: int) -> Optional[subprocess.Popen]:
        """The node's JVM process while it runs (benchmarks read its pid for CPU and memory)."""
        return self._node(node_id).process

    def log_tail(self, node_id: int, lines: int = 20) -> str:
        path = self._node(node_id).log_path
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> "ApacheKafkaCluster":
        """Fetch the jars if needed, format every node's storage, start the JVMs, wait for Metadata."""
        began = time.monotonic()
        self._classpath = os.pathsep.join(str(jar) for jar in kafka_jars(self.version))
        voters = ",".join(f"{node.node_id}@127.0.0.1:{node.controller_port}" for node in self._nodes)
        new_cluster_id = cluster_id()
        for node in self._nodes:
            node.folder.mkdir(parents=True, exist_ok=True)
            properties = node_properties(node.node_id, node.broker_port, node.controller_port, voters,
                                         len(self._nodes), node.folder / "data", self.overrides)
            node.properties_path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        self._format(self._nodes, new_cluster_id)
        jvm_started = time.monotonic()
        try:
            for node in self._nodes:
                self._launch(node)
            self.wait_ready(self.node_ids)
        except BaseException:
            self.close()
            raise
        self.start_time_s = time.monotonic() - jvm_started
        self.total_start_time_s = time.monotonic() - began
        return self

    def _java(self, main_class: str, *arguments: str) -> List[str]:
        # Serial GC and a small heap: several JVMs share two cores and a test's traffic is light.
        return [java_binary(), f"-Xmx{self.heap_mb}m", "-Xms64m", "-XX:+UseSerialGC",
                "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", self._classpath, main_class, *arguments]

    def _format(self, nodes: Sequence[_Node], new_cluster_id: str) -> None:
        """Kafka's StorageTool on every node at once (one JVM start each, about a second)."""
        formatting = [(node, subprocess.Popen(
            self._java("kafka.tools.StorageTool", "format", "-t", new_cluster_id,
                       "-c", str(node.properties_path), "--ignore-formatted"),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            for node in nodes]
        for node, process in formatting:
            try:
                output, _ = process.communicate(timeout=STARTUP_BUDGET_S)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
            if process.returncode != 0:
                raise KafkaUnavailableError(
                    f"formatting node {node.node_id}'s storage failed: {output.strip()[-500:]}")

    def _launch(self, node: _Node) -> None:
        with open(node.log_path, "ab") as log:
            node.process = subprocess.Popen(
                self._java("kafka.Kafka", str(node.properties_path)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)  # a Ctrl-C in the terminal reaches pytest, which stops us

    def wait_ready(self, node_ids: Sequence[int], budget_s: float = STARTUP_BUDGET_S) -> None:
        """Return once every node of ``node_ids`` answers Metadata listing all of them as brokers."""
        deadline = time.monotonic() + budget_s
        wanted = set(node_ids)
        last_error = "no answer yet"
        while True:
            for node_id in wanted:
                node = self._node(node_id)
                if not node.alive():
                    raise KafkaUnavailableError(
                        f"Kafka node {node_id} exited during start-up; its log ends:\n"
                        + self.log_tail(node_id))
            try:
                if all(wanted <= set(_metadata_broker_ids(self._node(i).broker_port)) for i in wanted):
                    return
                last_error = "not every node is registered yet"
            except OSError as exc:
                last_error = str(exc)
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"Kafka nodes {sorted(wanted)} did not answer Metadata within {budget_s:.0f} s "
                    f"({last_error})")
            time.sleep(self.ready_poll_s)

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: sockets close, no controlled shutdown, as a machine crash."""
        node = self._node(node_id)
        if node.alive():
            assert node.process is not None
            node.process.send_signal(signal.SIGKILL)
            node.process.wait(timeout=30)

    def stop(self, node_id: int, timeout_s: float = 60.0) -> None:
        """Clean shutdown of one node (SIGTERM: controlled shutdown, leaderships moved first)."""
        node = self._node(node_id)
        if node.alive():
            assert node.process is not None
            node.process.terminate()
            try:
                node.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(timeout=30)

    def restart(self, node_id: int) -> None:
        """Start a stopped or killed node again on its ports and storage; return when it answers."""
        node = self._node(node_id)
        if node.alive():
            self.stop(node_id)
        self._launch(node)
        self.wait_ready([node_id])

    def close(self) -> None:
        """Stop every node (SIGKILL: nothing is kept) and delete the storage this cluster made."""
        for node in self._nodes:
            if node.alive():
                assert node.process is not None
                node.process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(timeout=30)
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> "ApacheKafkaCluster":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _node(self, node_id: int) -> _Node:
        for node in self._nodes:
            if node.node_id == node_id:
                return node
        raise KafkaUnavailableError(f"no Kafka node {node_id} (nodes: {self.node_ids})")


def _metadata_broker_ids(port: int) -> List[int]:
    """The broker ids one node's Metadata v12 answer lists (raw socket: no client threads to leak)."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest[12](topics=[], allow_auto_topic_creation=False)
    response = send_raw_request(("127.0.0.1", port), request, timeout_s=2.0)
    return [broker[0] for broker in response.brokers]


@contextlib.contextmanager
def running_apache_kafka(nodes: int = 1, **options: object) -> Iterator[ApacheKafkaCluster]:
    cluster = ApacheKafkaCluster(nodes=nodes, **options)  # type: ignore[arg-type]
    with cluster:
        yield cluster
