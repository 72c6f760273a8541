"""What ``kgroup serve`` loads before its first answers (issue 28: start -> first Metadata under 0.5 s).

Most of a serving process's start is imports.  These tests pin the module set, not a time: a
fresh interpreter parses and checks the serve options as ``kgroup serve`` does, starts the
3-broker server, answers ApiVersions and Metadata on a plain socket, then lists ``sys.modules``.
kafka-python's clients (its package ``__init__``), the simulator, Spark and plotting must not be
among them, and checking the built-in server assignors reads no installed package's entry points.
And the deferred ``kafka`` package (:mod:`kgroup.server.kafka_package`) still behaves as
kafka-python for code that uses it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kgroup

REPO = Path(kgroup.__file__).resolve().parents[1]

_SERVE_AND_LIST_MODULES = r"""
import json, socket, struct, sys
from kgroup.server.command import _check_serve, add_serve_arguments, new_server
import argparse

parser = argparse.ArgumentParser()
add_serve_arguments(parser)
args = parser.parse_args(["--brokers", "3", "--port", "0"])
assert _check_serve(args) is None
server = new_server(args).start()

def call(sock, api_key, api_version, correlation_id, body):
    client_id = b"probe"
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id
    sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    answer = sock.recv(size, socket.MSG_WAITALL)
    assert len(answer) == size and struct.unpack(">i", answer[:4])[0] == correlation_id
    return answer

host, port = server.bootstrap_servers.split(",")[0].rsplit(":", 1)
try:
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        call(sock, 18, 0, 1, b"")  # ApiVersions v0, as a client's first request
        metadata = call(sock, 3, 1, 2, struct.pack(">i", -1))  # Metadata v1, every topic
        assert struct.unpack(">i", metadata[4:8])[0] == 3  # three brokers listed
finally:
    server.stop()
print(json.dumps(sorted(sys.modules)))
"""

#: Loaded by ``import kafka`` (kafka-python's clients) or by other kgroup commands, never by serving.
NOT_NEEDED_TO_SERVE = (
    "kafka.admin", "kafka.consumer", "kafka.producer", "kafka.client_async", "kafka.net",
    "kgroup.sim", "kgroup.io.kafka_python", "kgroup.io.group_consumer", "kgroup_spark", "pyspark",
    "matplotlib", "numpy", "tqdm",
)


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_serving_a_first_metadata_loads_no_client_simulator_or_plotting_module():
    loaded = json.loads(_python(_SERVE_AND_LIST_MODULES))
    assert "kafka.protocol.metadata" in loaded and "kgroup.server.engine" in loaded  # it did serve
    unneeded = [name for name in loaded
                if any(name == prefix or name.startswith(prefix + ".") for prefix in NOT_NEEDED_TO_SERVE)]
    assert unneeded == []


def test_the_deferred_kafka_package_is_kafka_python_on_first_use():
    answer = _python(r"""
import json, importlib.metadata
import kgroup.server
from kgroup.server import KafkaServer  # loads kafka.protocol and kafka.record
import kafka
deferred = "__getattr__" in vars(kafka) and "KafkaProducer" not in vars(kafka)
from kafka import KafkaConsumer
from kafka.consumer.group import KafkaConsumer as defined
try:
    kafka.no_such_name
    missing = "no error"
except AttributeError as error:
    missing = str(error)
print(json.dumps({
    "deferred": deferred, "same_class": KafkaConsumer is defined,
    "producer": kafka.KafkaProducer.__module__, "version": kafka.__version__,
    "installed": importlib.metadata.version("kafka-python"), "all": sorted(kafka.__all__)[:2],
    "hook_left": "__getattr__" in vars(kafka), "missing": missing,
}))
""")
    facts = json.loads(answer)
    assert facts["deferred"] and facts["same_class"]
    assert facts["producer"] == "kafka.producer.kafka"
    assert facts["version"] == facts["installed"]
    assert facts["all"] == ["AsyncConsumerRebalanceListener", "ConsumerGroupMetadata"]
    assert not facts["hook_left"]
    assert facts["missing"] == "module 'kafka' has no attribute 'no_such_name'"


def test_kafka_imported_first_is_left_as_it_is():
    answer = _python(r"""
import json, kafka
before = kafka
import kgroup.server
from kgroup.server import KafkaServer
import kafka
print(json.dumps({"same": kafka is before, "hook": "__getattr__" in vars(kafka)}))
""")
    assert json.loads(answer) == {"same": True, "hook": False}


def test_checking_built_in_server_assignors_reads_no_entry_points(monkeypatch):
    import kgroup.assignors as assignors

    def no_scan(group):
        raise AssertionError(f"entry points of {group} read for built-in names")

    monkeypatch.setattr(assignors, "_plugin_entry_points", no_scan)
    assert assignors.unknown_server_assignors(["uniform", "range", "uniform-rack-aware"]) == []


def test_an_unknown_server_assignor_is_still_found_unknown():
    from kgroup.assignors import unknown_server_assignors

    assert unknown_server_assignors(["range", "no-such-assignor", "also-missing"]) == [
        "also-missing", "no-such-assignor"]


def test_threads_first_using_the_deferred_package_together_all_get_kafka_python():
    """Every thread waits for the one running kafka/__init__.py: none sees a half-run package."""
    answer = _python(r"""
import json, threading
from kgroup.server import KafkaServer  # noqa: F401  (registers the deferred package)
import kafka
barrier = threading.Barrier(8)
found, errors = [], []

def use():
    barrier.wait()
    try:
        found.append((kafka.KafkaProducer.__module__, kafka.KafkaAdminClient.__module__, kafka.__version__))
    except Exception as error:
        errors.append(repr(error))

threads = [threading.Thread(target=use) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
print(json.dumps({"distinct": sorted(set(map(tuple, found))), "count": len(found), "errors": errors}))
""")
    facts = json.loads(answer)
    assert facts["errors"] == [] and facts["count"] == 8
    assert len(facts["distinct"]) == 1 and facts["distinct"][0][:2] == [
        "kafka.producer.kafka", "kafka.admin.client"]
