"""Every documented option works when Spark hands it over, and the host and workers start right.

Issue 24: Spark lower-cases a Python data source's option keys (``startingOffsets`` arrives as
``startingoffsets``), so a test that calls the parser directly cannot see what a query sees; these
read through a real local SparkSession.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.protocol.admin import ListGroupsRequest

from kgroup.testing.raw_kafka_connection import send_raw_request
from kgroup_spark.options import parse_options

DOCS = Path(__file__).resolve().parents[2] / "docs" / "guide" / "spark.md"


def _documented_options() -> list:
    """The option names of the guide's option table (first column), as the user spells them."""
    names = []
    for line in DOCS.read_text().splitlines():
        cell = line.split("|")[1].strip() if line.startswith("| `") else ""
        names += [n for n in re.findall(r"`([^`*]+)`", cell) if not n.endswith(".")]
    return names


def test_the_guide_documents_the_options_the_parser_knows():
    documented = set(_documented_options())
    assert {"startingOffsets", "bootstrap.servers", "session.timeout.ms", "static"} <= documented


def test_option_keys_are_case_insensitive_in_the_parser():
    options = parse_options({"SOURCE": "sqlite", "Bootstrap.Servers": "h:1", "startingoffsets": "latest",
                             "SQLITE.PATH": "q.db", "Static": "false"})
    assert (options.starting_offsets, options.static) == ("latest", False)
    assert options.source_options["sqlite.path"] == "q.db"
    with pytest.raises(Exception, match="given twice"):
        parse_options({"source": "sqlite", "bootstrap.servers": "h:1", "readers": "1", "READERS": "2"})


@pytest.mark.parametrize("starting, expected", [("earliest", 60), ("latest", 0), ("committed", 60)])
def test_every_documented_option_through_a_spark_read(
        spark, group_host, queue, group_name, starting, expected):
    """A batch read with every documented option spelled as the guide spells it (camel case too)."""
    values = {
        "source": "sqlite", "bootstrap.servers": group_host.bootstrap_servers, "group.id": group_name,
        "readers": "2", "assignor": "range", "static": "true", "session.timeout.ms": "10000",
        "heartbeat.interval.ms": "1000", "max.poll.interval.ms": "300000", "batch.timeout.ms": "120000",
        "connect.timeout.ms": "10000", "startingOffsets": starting, "sqlite.path": queue.path,
    }
    documented = set(_documented_options())
    assert set(values) - {"sqlite.path"} <= documented, "every option given here is in the guide"
    reader = spark.read.format("kgroup")
    for key, value in values.items():
        reader = reader.option(key, value)
    rows = reader.load().collect()
    assert len(rows) == expected


def test_group_host_answers_group_requests_when_start_returns():
    """``GroupHost().start()`` returns only once its coordinators have loaded (was: the first ListGroups
    got COORDINATOR_LOAD_IN_PROGRESS, 14)."""
    import kgroup_spark

    for _ in range(3):
        with kgroup_spark.GroupHost() as host:
            for address in host.bootstrap_servers.split(","):
                answer = send_raw_request(address, ListGroupsRequest[4](states_filter=[]))
                assert answer.error_code == 0


WORKER_PYTHON_SCRIPT = """
import sys
from pyspark.sql import SparkSession
import kgroup_spark
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .getOrCreate())
kgroup_spark.register(spark)
worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()[0]
print("DRIVER", sys.executable)
print("WORKER", worker)
spark.stop()
"""


def test_workers_run_the_drivers_python_from_a_non_activated_venv(tmp_path):
    """From a virtual environment that is not activated, Spark's workers use the driver's interpreter
    (was: ``python3`` from PATH, which lacks the venv's packages: ``No module named 'kafka'``)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    script = tmp_path / "worker_python.py"
    script.write_text(WORKER_PYTHON_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                                                            "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([str(python), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                 if line.startswith(("DRIVER", "WORKER")))
    assert lines["DRIVER"] == str(python)
    assert lines["WORKER"] == lines["DRIVER"]
