"""One local SparkSession for every Spark test (Spark 4, Java 17), and a group host per test.

The executors' Python workers import this directory's ``spark_test_sources``
(its path is put on PYTHONPATH before the JVM starts).  ``local[2,4]``: two
task slots, and a failed task is retried up to 4 times as on a cluster.
"""

from __future__ import annotations

import os
import uuid

import pytest

pyspark = pytest.importorskip("pyspark", reason="kgroup[spark] is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    import kgroup_spark

    paths = [HERE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("kgroup-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kgroup_spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def group_host():
    import kgroup_spark

    with kgroup_spark.GroupHost() as host:
        yield host


@pytest.fixture
def queue(tmp_path):
    """A SQLite queue of 12 partitions with 5 records each."""
    from kgroup_spark.sources import SqliteQueue

    queue = SqliteQueue(str(tmp_path / "queue.db")).create(12)
    for partition in range(12):
        queue.append(partition, [f"p{partition}-r{i}" for i in range(5)])
    return queue


@pytest.fixture
def group_name():
    return f"spark-{uuid.uuid4().hex[:8]}"
