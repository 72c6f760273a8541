"""`kgroup serve` / `python -m kgroup.server`: prints the bootstrap string, serves, stops on Ctrl-C; its
errors name the flag and the value."""
from __future__ import annotations

import os
import re
import signal
import socket
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
    assert stderr == f"kgroup: --port {port}: 127.0.0.1:{port} (broker 1's port) is already in use\n"


def test_serve_names_the_broker_whose_port_is_taken():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        first = port - 1  # broker 2 would listen on the taken port
        process = _start("-m", "kgroup.cli", "serve", "--brokers", "3", "--port", str(first))
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2 and len(stderr.splitlines()) == 1, stderr
    match = re.fullmatch(
        rf"kgroup: --port {first}: 127\.0\.0\.1:(\d+) \(broker (\d)'s port\) is already in use\n", stderr)
    assert match, stderr
    # Broker 2, unless another process happened to hold the first port too: the names agree either way.
    assert int(match.group(1)) == first + int(match.group(2)) - 1 <= port


@pytest.mark.parametrize("arguments, error", [
    (["--port", "-1"], "argument --port: must be 0 or more, got -1"),
    (["--port", "65536"], "argument --port: must be a port, 0 to 65535, got 65536"),
    (["--port", "65535", "--brokers", "2"],
     "argument --port: 65535 with --brokers 2: broker 2 would listen on port 65536, past 65535"),
    (["--partitions", "0"], "argument --partitions: must be 1 or more, got 0"),
    (["--brokers", "0"], "argument --brokers: must be 1 or more, got 0"),
    (["--offsets-partitions", "0"], "argument --offsets-partitions: must be 1 or more, got 0"),
    (["--initial-rebalance-delay-ms", "-1"],
     "argument --initial-rebalance-delay-ms: must be 0 or more, got -1"),
    (["--nope"], "unrecognized arguments: --nope"),
    (["--brokers", "2", "--broker-racks", "a"],
     "argument --broker-racks: 1 rack(s) for 2 broker(s); give one per broker"),
    (["--broker-racks", "a,,b"],
     "argument --broker-racks: 'a,,b' has an empty entry (comma-separated names, no spaces needed)"),
    (["--consumer-group-assignors", "uniform,nope"],
     "argument --consumer-group-assignors: unknown nope; known: range, uniform, uniform-rack-aware"),
])
def test_a_bad_serve_argument_names_the_flag_and_the_value_under_serves_usage(arguments, error):
    # A process, with a timeout: a value that slipped through would serve until interrupted.
    process = _start("-m", "kgroup.cli", "serve", *arguments)
    try:
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2
    assert stdout == "" and "Traceback" not in stderr
    assert stderr.startswith("usage: kgroup serve ")
    assert stderr.splitlines()[-1] == f"kgroup serve: error: {error}"


def test_serve_options_set_broker_racks_and_the_server_assignors():
    import argparse

    from kgroup.server.command import add_serve_arguments
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(["--brokers", "3", "--broker-racks", "a,b,c",
                              "--consumer-group-assignors", "uniform-rack-aware,uniform"])
    assert args.check(args) is None
    assert args.broker_racks == ("a", "b", "c")
    assert args.consumer_group_assignors == ("uniform-rack-aware", "uniform")
    defaults = parser.parse_args([])
    assert defaults.broker_racks == () and defaults.consumer_group_assignors == ("uniform", "range")


def test_serve_moves_its_start_up_heap_out_of_the_collectors_sight(monkeypatch, capsys):
    """Issue 28: every full collection walked the ~51,000 objects of the started server (modules,
    classes, the cluster's start state), a 5-17 ms stall of every client.  ``kgroup serve``
    freezes them (gc.freeze) once the brokers listen; an embedding application is left alone."""
    import gc
    import types

    from kgroup.server import command

    freezes = []

    class ReturningEvent:
        """``stop.wait()`` returns at once: serve starts, freezes, prints and stops."""

        def set(self) -> None:
            pass

        def wait(self) -> bool:
            return True

    def freeze() -> None:
        freezes.append(True)

    monkeypatch.setattr(command, "threading", types.SimpleNamespace(Event=ReturningEvent))
    monkeypatch.setattr(command.signal, "signal", lambda *args: None)
    monkeypatch.setattr(gc, "freeze", freeze)
    assert command.main(["--brokers", "1", "--port", "0"]) == 0
    assert freezes == [True]
    assert capsys.readouterr().out.strip().startswith("127.0.0.1:")
