"""Measure kgroup_spark on this machine: batch latency and handover after a killed reader.

    python -m benchmarks.spark_measure [--records-per-partition 2000] [--batches 3]

A local[2,4] SparkSession, a driver-hosted GroupHost, a SQLite queue of 12
partitions and two readers.  Prints the median wall time of a streaming
micro-batch in steady state (records appended, then ``processAllAvailable``),
its rows/s, and the time from SIGKILL of the Python worker reading partition 0
to the coordinator handing partition 0 to another member.  There is no peer
in this run: ``python -m benchmarks.spark_kafka_source`` reads one Kafka topic
with Spark's own Kafka source and with format("kgroup"), side by side.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_SOURCES = os.path.join(os.path.dirname(HERE), "tests", "spark")
PARTITIONS = 12


def _wait_for(path: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.05)
    with open(path) as handle:
        return handle.read()


def local_spark_builder(app_name: str) -> Any:
    """The measurements' SparkSession builder: local[2,4] (two task slots, a failed task retried up
    to 4 times as on a cluster), on loopback, no UI, no progress bar."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2,4]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records-per-partition", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ["PYTHONPATH"] = os.pathsep.join([TEST_SOURCES, os.environ.get("PYTHONPATH", "")])
    import kgroup_spark
    from kgroup_spark.sources import SqliteQueue

    spark = local_spark_builder("kgroup-spark-measure").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    kgroup_spark.register(spark)
    folder = tempfile.mkdtemp()
    queue = SqliteQueue(os.path.join(folder, "queue.db")).create(PARTITIONS)
    pause_dir = os.path.join(folder, "pause")
    os.mkdir(pause_dir)
    counted = []
    with kgroup_spark.GroupHost() as host:
        frame = (
            spark.readStream.format("kgroup")
            .option("source", "spark_test_sources:PausingQueueSource")
            .option("sqlite.path", queue.path)
            .option("sqlite.pause_dir", pause_dir)
            .option("bootstrap.servers", host.bootstrap_servers)
            .option("group.id", "measure")
            .option("readers", "2")
            .option("session.timeout.ms", "6000")
            .load()
        )
        query = (
            frame.writeStream.foreachBatch(lambda df, _: counted.append(df.count()))
            .option("checkpointLocation", os.path.join(folder, "checkpoint"))
            .start()
        )
        try:
            open(os.path.join(pause_dir, "claimed"), "w").close()  # no pause while timing batches
            query.processAllAvailable()
            times = []
            for _ in range(args.batches + 1):
                for partition in range(PARTITIONS):
                    queue.append(partition, ["x" * 32] * args.records_per_partition)
                started = time.perf_counter()
                query.processAllAvailable()
                times.append(time.perf_counter() - started)
            steady = times[1:]  # the first timed batch also forms the group
            rows = PARTITIONS * args.records_per_partition
            median = statistics.median(steady)
            print(
                f"steady-state micro-batch of {rows} rows, 2 readers: median {median:.2f} s "
                f"({rows / median:,.0f} rows/s) over {len(steady)} batches; first batch {times[0]:.2f} s"
            )

            os.remove(os.path.join(pause_dir, "claimed"))
            queue.append(0, ["a", "b", "c"])
            pid = int(_wait_for(os.path.join(pause_dir, "reader.pid"), timeout_s=120))
            holder = next(
                i for i in host.ownership("measure") if i.partition.partition == 0 and i.end_ms is None
            )
            killed_ms = time.monotonic_ns() // 1_000_000
            os.kill(pid, signal.SIGKILL)
            open(os.path.join(pause_dir, "release"), "w").close()
            query.processAllAvailable()
            moved = next(
                i
                for i in host.ownership("measure")
                if i.partition.partition == 0 and i.start_ms >= killed_ms and i.member_id != holder.member_id
            )
            print(
                f"killed reader of partition 0: another member owned it {moved.start_ms - killed_ms} ms "
                "later "
                f"(session timeout 6000 ms); overlaps: {len(host.ownership_overlaps('measure'))}"
            )
        finally:
            query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
