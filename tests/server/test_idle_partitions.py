"""Many idle partitions cost the wire server nothing per replication round (issue 23, item 1).

Before, every 100 ms round visited every partition and a late timer replayed each round it
missed: 0.3 core per 10,000 idle partitions, a 12 s Metadata answer at 40,000 and a server
deaf to SIGINT.  The CPU figure itself is a benchmark (benchmarks/wire_hardening.py idle);
these tests pin the work counted, which no machine load can change.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import MetadataRequest

import kgroup
from kgroup.server import KafkaServer
from kgroup.testing import MockClock

REPO = Path(kgroup.__file__).resolve().parents[1]


def test_after_creating_20000_partitions_an_idle_server_visits_none_of_them(raw_client):
    clock = MockClock()
    with KafkaServer(brokers=3, clock=clock) as server:
        server.create_topic("a", partitions=10_000)
        server.create_topic("b", partitions=10_000)
        server.advance(1_000)  # followers copy the (empty) logs and learn the HW
        cluster = server.cluster
        assert cluster is not None
        visits = server._call(lambda: cluster.partition_rounds)
        server.advance(60_000)  # 600 replication rounds
        assert server._call(lambda: cluster.partition_rounds) == visits
        assert server._call(cluster.active_partitions) == 0
        # And the server still answers, with every partition led.
        client = raw_client(server.listener(1))
        topic = MetadataRequest.MetadataRequestTopic(version=1, name="b")
        answer = client.request(MetadataRequest(version=1, topics=[topic]))
        assert len(answer.topics[0].partitions) == 10_000
        assert all(p.error_code == 0 and p.leader_id > 0 for p in answer.topics[0].partitions)


def test_serve_with_30000_partitions_stops_on_sigint_within_seconds(raw_client):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen([sys.executable, "-m", "kgroup.server", "--brokers", "3", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        client = raw_client(bootstrap.split(",")[0], timeout_s=60)
        topic_cls = CreateTopicsRequest.CreatableTopic
        for name in ("a", "b", "c"):
            create = CreateTopicsRequest(version=4, timeout_ms=60_000, validate_only=False, topics=[
                topic_cls(version=4, name=name, num_partitions=10_000, replication_factor=3, assignments=[],
                          configs=[])])
            answer = client.request(create, timeout_s=60)
            assert answer.topics[0].error_code == 0
        process.send_signal(signal.SIGINT)
        signalled = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        # Bound: KafkaServer.stop waits at most 10 s for the loop; an idle loop answers at once.
        assert time.monotonic() - signalled < 10
        assert process.returncode == 0 and "stopped" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
