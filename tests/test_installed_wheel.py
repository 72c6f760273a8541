"""kgroup installed the ordinary way: a wheel, not editable, in a fresh virtual environment (issue 22).

Every other test imports kgroup from the checkout, where files the wheel leaves out (the JSON schemas
of ``kgroup/server/schemas``) are still found.  Here the wheel is built from a copy of the sources,
installed into a new venv with ``--no-deps`` (``--system-site-packages`` lends it kafka-python,
pyspark and pytest, so nothing is downloaded), and used from a folder outside the repository with
``PYTHONPATH`` unset, through the venv's own ``kgroup`` script and interpreter, as a user would.
"""
from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Dict, List

import kafka
import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("kgroup", "kgroup_spark")
#: What a wheel is built from; the copy keeps the checkout free of build/ and *.egg-info, and a
#: stale build/lib of an earlier build cannot slip files into the wheel.
SOURCES = ("pyproject.toml", "setup.cfg", "README.md", *PACKAGES)
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def _data_files(root: Path) -> List[str]:
    """Every file of the packages that is not Python source, as a path inside the wheel."""
    return sorted(path.relative_to(root).as_posix() for package in PACKAGES
                  for path in (root / package).rglob("*")
                  if path.is_file() and path.suffix not in (".py", ".pyc")
                  and "__pycache__" not in path.parts)


def _user_environment(venv: Path) -> Dict[str, str]:
    """The environment of a user who installed kgroup into ``venv``: no PYTHONPATH pointing at a
    checkout, the venv's scripts first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = str(venv / "bin") + os.pathsep + env.get("PATH", "")
    return env


def _builds_offline() -> bool:
    """setuptools 70.1+ builds wheels itself; older ones need the ``wheel`` package."""
    probe = ("import importlib.util, sys; sys.exit(not (importlib.util.find_spec('wheel') "
             "or importlib.util.find_spec('setuptools.command.bdist_wheel')))")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, wheel, user's folder): kgroup's wheel installed into a fresh venv."""
    base = tmp_path_factory.mktemp("installed")
    source = base / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=JUNK)
        else:
            shutil.copy2(REPO / name, source / name)
    wheels = base / "wheels"
    # --no-build-isolation builds with this interpreter's setuptools (the test extra pins one that
    # needs nothing else), so the test needs no package index; without it pip fetches the build
    # requirements.
    isolation = ["--no-build-isolation"] if _builds_offline() else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(wheels),
                    str(source)], check=True, capture_output=True, timeout=300)
    [wheel] = wheels.glob("kgroup-*.whl")
    venv = base / "venv"
    # pip comes from the system site-packages too (--without-pip saves ensurepip's seconds).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    # --force-reinstall: the outer environment's editable kgroup must not count as installed.
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--force-reinstall", str(wheel)], check=True, capture_output=True,
                   env=_user_environment(venv), timeout=300)
    user_folder = base / "user"
    user_folder.mkdir()
    return venv, wheel, user_folder


def test_the_wheel_ships_every_data_file_of_the_packages(installed):
    _venv, wheel, _user = installed
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    data = _data_files(REPO)
    assert "kgroup/wire/schemas/ConsumerGroupHeartbeatRequestStruct.json" in data
    assert [name for name in data if name not in shipped] == []


def test_the_installed_packages_import_from_the_venv_not_the_checkout(installed):
    venv, _wheel, user = installed
    probe = ("import kgroup, kgroup.server, kgroup_spark\n"
             "print(kgroup.__file__); print(kgroup_spark.__file__)")
    completed = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=user, capture_output=True,
                               text=True, env=_user_environment(venv), timeout=120)
    assert completed.returncode == 0, completed.stderr
    for path in completed.stdout.split():
        assert Path(path).resolve().is_relative_to(venv.resolve()), path


def _first_line(process: subprocess.Popen, timeout_s: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout_s), f"no bootstrap line within {timeout_s} s"
    return process.stdout.readline().strip()


@pytest.mark.parametrize("command", [("kgroup", "serve"), ("python", "-m", "kgroup.server")])
def test_installed_kgroup_serve_round_trips_records_with_kafka_python(installed, command):
    venv, _wheel, user = installed
    process = subprocess.Popen([str(venv / "bin" / command[0]), *command[1:], "--port", "0",
                                "--initial-rebalance-delay-ms", "0"],
                               cwd=user, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_user_environment(venv))
    try:
        bootstrap = _first_line(process, 60)
        assert bootstrap.startswith("127.0.0.1:"), process.communicate(timeout=30)[1]
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(5):
            producer.send("installed", value=b"record-%d" % i)
        producer.flush(timeout=30)
        producer.close()
        consumer = kafka.KafkaConsumer("installed", bootstrap_servers=bootstrap, group_id="reader",
                                       auto_offset_reset="earliest", consumer_timeout_ms=20_000)
        try:
            values = []
            for message in consumer:
                values.append(message.value)
                if len(values) == 5:
                    break
        finally:
            consumer.close()
        assert values == [b"record-%d" % i for i in range(5)]
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


_FIXTURE_TESTS = '''
import sys
import time
from pathlib import Path

import kafka
import pytest

import kgroup
from kgroup import GroupCoordinatorConfig


def test_kgroup_is_the_installed_one():
    assert Path(kgroup.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


@pytest.mark.kafka_broker(brokers=2)
def test_kafka_broker(kafka_broker):
    kafka_broker.create_topic("orders", partitions=2)
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    for i in range(4):
        producer.send("orders", value=b"order-%d" % i)
    producer.flush(timeout=30)
    producer.close()
    consumer = kafka.KafkaConsumer("orders", bootstrap_servers=kafka_broker.bootstrap_servers,
                                   group_id="billing", auto_offset_reset="earliest",
                                   consumer_timeout_ms=20_000)
    values = set()
    for message in consumer:
        values.add(message.value)
        if len(values) == 4:
            break
    consumer.close()
    assert values == {b"order-%d" % i for i in range(4)}


FAST = GroupCoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)


@pytest.mark.kgroup_cluster(brokers=2, offsets_partitions=3, coordinator_config=FAST)
def test_kgroup_cluster(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 4)
    consumers = [kgroup_cluster.consumer("billing", ["orders"], session_timeout_ms=1500,
                                         heartbeat_interval_ms=100) for _ in range(2)]
    deadline = time.monotonic() + 30
    while not kgroup_cluster.group_settled("billing"):
        assert time.monotonic() < deadline, "the group did not settle in 30 s"
        for consumer in consumers:
            consumer.poll(20)
    assert sorted(len(c.assignment()) for c in consumers) == [2, 2]
'''


def test_installed_pytest_plugin_gives_the_kafka_broker_and_kgroup_cluster_fixtures(installed):
    venv, _wheel, user = installed
    (user / "test_installed_fixtures.py").write_text(textwrap.dedent(_FIXTURE_TESTS))
    completed = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                "test_installed_fixtures.py"], cwd=user, capture_output=True, text=True,
                               env=_user_environment(venv), timeout=180)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "3 passed" in completed.stdout, completed.stdout
