"""`kgroup serve` / `python -m kgroup.server`: prints the bootstrap string, serves, stops on Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import kafka
import pytest

import kgroup
from kgroup.server import KafkaServer

REPO = Path(kgroup.__file__).resolve().parents[1]


def _start(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.mark.parametrize("command", [("-m", "kgroup.server"), ("-m", "kgroup.cli", "serve")])
def test_serve_prints_the_bootstrap_servers_and_stops_cleanly_on_ctrl_c(command):
    process = _start(*command, "--brokers", "2", "--port", "0")
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        hosts = bootstrap.split(",")
        assert len(hosts) == 2 and all(h.startswith("127.0.0.1:") for h in hosts)
        admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            assert sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == [1, 2]
        finally:
            admin.close()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0
        assert "stopped" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_serve_reports_a_taken_port_in_one_line_with_exit_code_2():
    with KafkaServer() as running:
        port = running.bootstrap_servers.rsplit(":", 1)[1]
        process = _start("-m", "kgroup.server", "--port", port)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert stderr.startswith("kgroup: ") and len(stderr.strip().splitlines()) == 1
