"""kgroup_spark in under a minute: Spark executors owning a queue's partitions through a group.

Run ``python -m kgroup_spark.demo``.  A local Spark (``--master``, default ``local[2,4]``),
a group coordinator hosted in this process (``GroupHost``), a SQLite queue of eight
partitions and a streaming query of two readers.  Each batch prints its rows and which
reader (member identity @ executor) read which partitions, from the coordinator's
accepted commits.  In batch ``--kill-batch`` the Python worker reading partition 0 is
killed with SIGKILL in the middle of its read (``--kill executor``: the executor JVM
running it, for ``local-cluster`` masters): the batch is retried, the partition is taken
over, and the demo prints how long that took and who owns partition 0 now.  At the end:
stickiness per member and per executor, the group's committed offsets as a stock Kafka
admin client sees them, and the queue's acknowledgements (each record at most once).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from typing import Iterator, Optional, Sequence, TextIO

from kgroup_spark.sources.sqlite_queue import SqliteQueueSource

PARTITIONS = 8
RECORDS_PER_BATCH = 3
SESSION_TIMEOUT_MS = 6_000
PAUSE_LIMIT_S = 120


class DemoQueueSource(SqliteQueueSource):
    """The SQLite queue that stops once in the middle of partition 0 at ``source.pause_at``.

    It writes its process id to ``<source.pause_dir>/reader.pid`` and waits for
    ``<source.pause_dir>/release``, so the demo kills exactly the reader holding partition 0.
    """

    def read(self, partition: int, start_offset: int, end_offset: int) -> Iterator[tuple]:
        pause_dir = self.options.get("source.pause_dir")
        pause_at = int(self.options.get("source.pause_at", "-1"))
        for offset, row in super().read(partition, start_offset, end_offset):
            if pause_dir and partition == 0 and offset == pause_at + 1 and _first_here(pause_dir):
                _wait_for(os.path.join(pause_dir, "release"), PAUSE_LIMIT_S)
            yield offset, row


def _first_here(pause_dir: str) -> bool:
    try:
        os.close(os.open(os.path.join(pause_dir, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    with open(os.path.join(pause_dir, "reader.pid.tmp"), "w") as out:
        out.write(str(os.getpid()))
    os.replace(os.path.join(pause_dir, "reader.pid.tmp"), os.path.join(pause_dir, "reader.pid"))
    return True


def _wait_for(path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.05)


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _executor_jvm_of(worker_pid: int) -> int:
    """The JVM above a Python worker (worker -> pyspark daemon -> executor JVM)."""
    pid = worker_pid
    for _ in range(4):
        pid = _parent_of(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"java" in cmdline.read().split(b"\0")[0]:
                return pid
    raise RuntimeError(f"no JVM above Python worker {worker_pid}")


def main(argv: Optional[Sequence[str]] = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kgroup_spark.demo", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--master", default="local[2,4]", help="Spark master (default local[2,4])")
    parser.add_argument("--batches", type=int, default=6, help="batches after the first (default 6)")
    parser.add_argument("--kill-batch", type=int, default=3, help="batch whose reader is killed (0: none)")
    parser.add_argument("--kill", choices=("worker", "executor"), default="worker",
                        help="kill the Python worker (default) or its executor JVM")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    began = time.monotonic()
    from pyspark.sql import SparkSession

    import kgroup_spark
    from kgroup_spark.sources import SqliteQueue
    from kgroup_spark.stickiness import describe_batch, stickiness_of

    folder = tempfile.mkdtemp(prefix="kgroup-spark-demo-")
    queue = SqliteQueue(os.path.join(folder, "queue.db")).create(PARTITIONS)
    pause_dir = os.path.join(folder, "pause")
    os.mkdir(pause_dir)

    def feed(batch: int) -> None:
        queue.append_all({
            p: [f"order-{p}-{batch}-{i}" for i in range(RECORDS_PER_BATCH)] for p in range(PARTITIONS)
        })

    spark = (
        SparkSession.builder.master(args.master).appName("kgroup-spark-demo")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    kgroup_spark.register(spark)
    say(f"Spark {spark.version} on {args.master} up after {time.monotonic() - began:.1f} s")
    with kgroup_spark.GroupHost() as host:
        group = "demo-orders"
        say(f"group coordinator (kgroup's wire server) at {host.bootstrap_servers}; group {group!r}; "
            f"a SQLite queue of {PARTITIONS} partitions; 2 readers; session timeout {SESSION_TIMEOUT_MS} ms")
        kill_at = (args.kill_batch * RECORDS_PER_BATCH) if args.kill_batch else -1

        def show(frame, batch_id: int) -> None:  # foreachBatch: runs after the batch was read
            rows = frame.count()
            reads = host.batch_reads(group)
            owners = describe_batch(reads[-1]) if reads and rows else "-"
            say(f"batch {batch_id}: {rows:3d} rows  {owners}")

        frame = (
            spark.readStream.format("kgroup")
            .option("source", "kgroup_spark.demo:DemoQueueSource").option("sqlite.path", queue.path)
            .option("source.pause_dir", pause_dir).option("source.pause_at", str(kill_at))
            .option("bootstrap.servers", host.bootstrap_servers).option("group.id", group)
            .option("readers", "2").option("session.timeout.ms", str(SESSION_TIMEOUT_MS))
            .load()
        )
        query = (frame.writeStream.foreachBatch(show)
                 .option("checkpointLocation", os.path.join(folder, "checkpoint")).start())
        took_over_s: Optional[float] = None
        try:
            feed(0)
            query.processAllAvailable()
            for batch in range(1, args.batches + 1):
                feed(batch)
                if batch != args.kill_batch:
                    query.processAllAvailable()
                    continue
                pid_path = os.path.join(pause_dir, "reader.pid")
                _wait_for(pid_path, PAUSE_LIMIT_S)
                with open(pid_path) as handle:
                    worker = int(handle.read())
                victim = _executor_jvm_of(worker) if args.kill == "executor" else worker
                holder = [i for i in host.ownership(group) if i.partition.partition == 0 and i.end_ms is None]
                what = "executor JVM" if args.kill == "executor" else "Python worker"
                say(f"batch {batch}: killing the {what} (pid {victim}) reading partition 0 "
                    f"(member {holder[0].member_id if holder else '?'})")
                killed_at = time.monotonic()
                os.kill(victim, signal.SIGKILL)
                open(os.path.join(pause_dir, "release"), "w").close()
                query.processAllAvailable()
                took_over_s = time.monotonic() - killed_at
                now = [i for i in host.ownership(group) if i.partition.partition == 0 and i.end_ms is None]
                say(f"batch {batch}: completed {took_over_s:.1f} s after the kill; partition 0 now owned "
                    f"by member {now[0].member_id if now else '?'}")
            failed = query.exception()
        finally:
            query.stop()
        say(f"query active to the end: {failed is None}")
        reads = host.batch_reads(group)
        # Steady state: after the group formed (batch 0), before the kill's batch.
        steady = reads[1:args.kill_batch] if args.kill_batch else reads[1:]
        say(f"steady state ({len(steady)} batches): {stickiness_of(steady)}")
        say(f"all batches: {host.stickiness(group)}")
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=host.bootstrap_servers, client_id="demo-admin")
        try:
            offsets = admin.list_group_offsets({group: None}).get(group, {})
        finally:
            admin.close()
        committed = {tp.partition: meta.offset for tp, meta in sorted(offsets.items())}
        say(f"committed offsets (kafka-python's admin client): {committed}")
        acks = queue.ack_counts()
        say(f"acknowledged records: {sum(1 for c in acks.values() if c)} of {len(acks)}, "
            f"at most once each: {max(acks.values()) <= 1} (the last batch is acknowledged by the next run)")
        say(f"partitions ever held by two members at once: {len(host.ownership_overlaps(group))}")
        if took_over_s is not None:
            say(f"takeover: {took_over_s:.1f} s from the kill to the batch's completion")
    spark.stop()
    say(f"done in {time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
