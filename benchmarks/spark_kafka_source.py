"""Spark's own Kafka source against format("kgroup"): the same topic on kgroup's broker, side by side.

    python -m benchmarks.spark_kafka_source [--records 48000] [--partitions 4] [--rounds 2]
                                            [--warmup-rounds 1] [--batches 4] [--record-bytes 100]
                                            [--readers 2] [--apache-kafka]

One kgroup broker (a driver-hosted ``kgroup_spark.GroupHost``: kgroup's
``KafkaServer`` in this process) holds a topic of ``--partitions`` partitions
pre-filled with ``--records`` records of ``--record-bytes`` bytes (kafka-python
producer).  A local[2,4] SparkSession then reads that topic from the earliest
offset, again and again, alternating:

- **spark-kafka**: ``readStream.format("kafka")`` (org.apache.spark:spark-sql-kafka-0-10
  for the installed Spark, the Java consumer on executors), ``subscribe`` and
  ``maxOffsetsPerTrigger`` = records / batches;
- **kgroup**: ``readStream.format("kgroup")`` with ``source=kafka`` on the same
  broker (kafka-python in Python workers, partitions owned through the group
  protocol, ``--readers`` readers).  kgroup_spark has no ``maxOffsetsPerTrigger``, so the
  source is :class:`CappedKafkaTopicSource`, which plans at most the same
  records per partition per batch.

Both write to the ``noop`` sink, a fresh query and checkpoint per round; the
order of the sides rotates by one each round, so with ``--rounds`` a multiple
of the sides each goes first equally often.  The first ``--warmup-rounds``
rounds are printed but left out of the figures: the session's first queries
pay for the JVM's class loading and JIT and for starting Python workers (a
first batch of 11-15 s where later ones take 1-4 s).  Figures come from
``StreamingQuery.recentProgress`` (``numInputRows`` and
``durationMs.triggerExecution`` of every batch with rows) and a wall clock from
``start()`` to ``processAllAvailable()``.  With ``--apache-kafka`` a third
column reads the same records from Apache Kafka itself (one KRaft node, the
jars of ``kgroup.testing.apache_kafka``) with Spark's Kafka source.

The spark-sql-kafka jars are fetched once with Maven (``mvn
dependency:copy-dependencies``, as ``kgroup/testing/apache_kafka.py`` does for
Kafka's jars) into ``~/.cache/kgroup/spark-sql-kafka/<spark version>/lib`` and
passed as ``spark.jars``.  Chosen over ``spark.jars.packages`` because after the
first run nothing is resolved (Ivy resolves the coordinates again at every
SparkSession start), so the benchmark runs offline; because the jars Spark
already ships (lz4, snappy, slf4j, hadoop-client, scala-library) are dropped
rather than put on the classpath a second time in another version; and because
a dependency missing from Maven Central can be pinned in the generated pom
(spark-token-provider-kafka 4.0.1 is: see ``_fetch_jars``).  Without Java,
Maven or the jars the run ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from kgroup_spark.sources.kafka_topic import KafkaTopicSource

REPO_ROOT = Path(__file__).resolve().parent.parent
SPARK_KAFKA_GROUP = "org.apache.spark"
SPARK_KAFKA_ARTIFACT = "spark-sql-kafka-0-10_2.13"
TOKEN_PROVIDER_ARTIFACT = "spark-token-provider-kafka-0-10_2.13"
#: How long Maven may take for the first fetch (spark-sql-kafka, kafka-clients, a few small jars).
FETCH_BUDGET_S = 600.0
#: Spark logs a progress entry per batch; keep them all for one query (default 100).
PROGRESS_ENTRIES = 1000
SIDES = ("spark-kafka", "kgroup")
APACHE_SIDE = "spark-kafka on Apache Kafka"
#: The one column kgroup is compared with.
BASELINE = "spark-kafka"


class BenchmarkUnavailableError(Exception):
    """Something this benchmark needs is missing (Java, Maven, the jars, PySpark): one line to say so."""


# -- options -------------------------------------------------------------------------------------


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.spark_kafka_source",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=48_000, help="records in the topic (default 48000)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="measured queries per side, alternating (default 2)")
    parser.add_argument("--warmup-rounds", type=int, default=1,
                        help="rounds run first and left out of the figures (default 1)")
    parser.add_argument("--batches", type=int, default=4, help="micro-batches per query (default 4)")
    parser.add_argument("--record-bytes", type=int, default=100, help="value size in bytes (default 100)")
    parser.add_argument("--readers", type=int, default=2, help="kgroup readers (<= 2 task slots; default 2)")
    parser.add_argument(
        "--apache-kafka", action="store_true",
        help="also read the records from Apache Kafka (one KRaft node) with Spark's Kafka source",
    )
    args = parser.parse_args(argv)
    for name in ("records", "partitions", "rounds", "batches", "record_bytes", "readers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.warmup_rounds < 0:
        parser.error(f"--warmup-rounds must be >= 0, got {args.warmup_rounds}")
    if args.readers > 2:
        parser.error("--readers must be <= 2: the session has 2 task slots and a batch's readers run at once")
    return args


def per_partition_cap(records: int, partitions: int, batches: int) -> int:
    """Records per partition per batch so that an evenly filled topic takes ``batches`` batches."""
    return max(1, math.ceil(math.ceil(records / partitions) / batches))


# -- the kgroup side's rate limit ---------------------------------------------------------------


class CappedKafkaTopicSource(KafkaTopicSource):
    """``KafkaTopicSource`` planning at most ``source.max.offsets.per.partition`` records per partition
    per batch, the per-partition share of Spark's ``maxOffsetsPerTrigger`` on an evenly filled topic.

    The planner's source lives in the driver's long-lived data source worker for the whole query, so
    the end it last planned is remembered here; a query starts from the earliest offsets.
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        self.max_offsets_per_partition = int(self.options.get("source.max.offsets.per.partition", "0"))
        self._planned_end: Optional[dict[int, int]] = None

    def latest_offsets(self) -> dict[int, int]:
        available = super().latest_offsets()
        if self.max_offsets_per_partition < 1:
            return available
        if self._planned_end is None:
            self._planned_end = self.earliest_offsets()
        self._planned_end = {
            partition: min(end, self._planned_end.get(partition, 0) + self.max_offsets_per_partition)
            for partition, end in available.items()
        }
        return dict(self._planned_end)


# -- jars and Java ------------------------------------------------------------------------------


def _artifact_name(jar_name: str) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``: the version is the first ``-<digit>...`` tail
    with no ``_`` (``spark-sql-kafka-0-10_2.13-4.0.1.jar``: ``-0-10_2.13`` is part of the name)."""
    return re.sub(r"-\d[^_]*\.jar$", "", jar_name)


def _pom(spark_version: str, token_provider_version: Optional[str] = None) -> str:
    pin = "" if token_provider_version is None else f"""
  <dependencyManagement><dependencies>
    <dependency><groupId>{SPARK_KAFKA_GROUP}</groupId><artifactId>{TOKEN_PROVIDER_ARTIFACT}</artifactId>
      <version>{token_provider_version}</version></dependency>
  </dependencies></dependencyManagement>"""
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kgroup.benchmarks</groupId><artifactId>spark-sql-kafka-jars</artifactId><version>1</version>
  <packaging>pom</packaging>{pin}
  <dependencies>
    <dependency><groupId>{SPARK_KAFKA_GROUP}</groupId><artifactId>{SPARK_KAFKA_ARTIFACT}</artifactId>
      <version>{spark_version}</version></dependency>
  </dependencies>
</project>
"""


def _spark_jars_folder() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def spark_kafka_jars(spark_version: str) -> list[Path]:
    """spark-sql-kafka for ``spark_version`` and what it needs beyond Spark's own jars; fetched once."""
    from kgroup.testing.apache_kafka import cache_root, jars_fetched_once

    library = cache_root() / "spark-sql-kafka" / spark_version / "lib"
    jars = jars_fetched_once(library, lambda: _fetch_jars(spark_version, library))
    if not any(jar.name == f"{SPARK_KAFKA_ARTIFACT}-{spark_version}.jar" for jar in jars):
        raise BenchmarkUnavailableError(
            f"the jar cache {library} has no {SPARK_KAFKA_ARTIFACT}-{spark_version}.jar; delete it and retry")
    return jars


def _maven_error(output: str) -> str:
    """The first ``[ERROR]`` line of Maven's output, without colour codes (the rest is Maven's advice)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line for line in lines if line.startswith("[ERROR]") and len(line) > len("[ERROR] ")]
    return (errors or [line for line in lines if line] or ["no output"])[0][:400]


def _copy_dependencies(pom: str, staging: Path, coordinates: str) -> Optional[str]:
    """Run Maven on ``pom``; None when the jars are in ``staging``, else Maven's error line."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BenchmarkUnavailableError(
            f"Maven (mvn) is not on PATH; it fetches {coordinates} from Maven Central")
    work = staging.parent
    Path(work, "pom.xml").write_text(pom)
    try:
        done = subprocess.run(
            [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
            cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=FETCH_BUDGET_S)
    except subprocess.TimeoutExpired:
        raise BenchmarkUnavailableError(
            f"Maven did not fetch {coordinates} within {FETCH_BUDGET_S:.0f} s") from None
    return None if done.returncode == 0 else _maven_error(done.stdout + done.stderr)


def _fetch_jars(spark_version: str, library: Path) -> None:
    coordinates = f"{SPARK_KAFKA_GROUP}:{SPARK_KAFKA_ARTIFACT}:{spark_version}"
    with tempfile.TemporaryDirectory(prefix="kgroup-spark-kafka-pom-") as work:
        staging = Path(work, "lib")
        error = _copy_dependencies(_pom(spark_version), staging, coordinates)
        if error is not None and TOKEN_PROVIDER_ARTIFACT in error:
            # spark-token-provider-kafka-0-10_2.13:4.0.1 answers 404 on Maven Central from the
            # project's machine (2026-11; spark-sql-kafka 4.0.1 itself is there).  The x.y.0 release
            # of the same line has the classes spark-sql-kafka calls (KafkaConfigUpdater,
            # KafkaTokenUtil); they only add delegation tokens, and there are none here.
            first_of_line = ".".join(spark_version.split(".")[:2] + ["0"])
            error = _copy_dependencies(_pom(spark_version, first_of_line), staging, coordinates)
        if error is not None:
            raise BenchmarkUnavailableError(f"Maven could not fetch {coordinates}: {error}")
        shipped = {_artifact_name(jar.name) for jar in _spark_jars_folder().glob("*.jar")}
        for jar in staging.glob("*.jar"):
            if _artifact_name(jar.name) in shipped:
                jar.unlink()  # Spark's own version of it is already on the classpath
        if library.exists():
            shutil.rmtree(library)
        shutil.move(str(staging), str(library))
    (library / ".complete").write_text(spark_version + "\n")


def check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").exists():
        return
    if shutil.which("java") is None:
        raise BenchmarkUnavailableError(
            "Java is missing (no java on PATH, no JAVA_HOME): Spark needs Java 17")


# -- the topic ----------------------------------------------------------------------------------


def fill_topic(bootstrap: str, topic: str, records: int, partitions: int, record_bytes: int) -> None:
    """``records`` values of ``record_bytes`` bytes, spread evenly over the partitions, acknowledged."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=256 * 1024,
                             client_id="kgroup-bench-producer")
    try:
        value = b"v" * record_bytes
        futures = [producer.send(topic, value=value, partition=i % partitions) for i in range(records)]
        producer.flush()
        for future in futures[-partitions:]:
            future.get(timeout=30)
    finally:
        producer.close()


def create_topic_with_admin(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kgroup-bench-admin")
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


# -- one query ----------------------------------------------------------------------------------


@dataclasses.dataclass
class QueryRun:
    side: str
    round_index: int
    wall_s: float
    batch_rows: list[int]
    batch_ms: list[int]

    @property
    def rows(self) -> int:
        return sum(self.batch_rows)


def progress_batches(progress: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[int]]:
    """(rows, triggerExecution ms) of every batch that read rows, in batch order, from recentProgress."""
    by_batch: dict[int, tuple[int, int]] = {}
    for entry in progress:
        rows = int(entry.get("numInputRows", 0))
        if rows > 0:
            by_batch[int(entry["batchId"])] = (rows, int(entry["durationMs"]["triggerExecution"]))
    ordered = [by_batch[batch] for batch in sorted(by_batch)]
    return [rows for rows, _ in ordered], [ms for _, ms in ordered]


def run_query(frame: Any, side: str, round_index: int, checkpoint: str, expected_rows: int) -> QueryRun:
    started = time.perf_counter()
    query = frame.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    try:
        query.processAllAvailable()
        wall_s = time.perf_counter() - started
        batch_rows, batch_ms = progress_batches(query.recentProgress)
    finally:
        query.stop()
    run = QueryRun(side, round_index, wall_s, batch_rows, batch_ms)
    if run.rows != expected_rows:
        raise RuntimeError(f"{side} round {round_index}: read {run.rows} rows, expected {expected_rows}")
    return run


def spark_kafka_frame(spark: Any, bootstrap: str, topic: str, max_offsets_per_trigger: int) -> Any:
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
    )


def kgroup_frame(spark: Any, bootstrap: str, topic: str, cap_per_partition: int, readers: int) -> Any:
    return (
        spark.readStream.format("kgroup")
        .option("source", "benchmarks.spark_kafka_source:CappedKafkaTopicSource")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.topic", topic)
        .option("source.max.offsets.per.partition", str(cap_per_partition))
        .option("bootstrap.servers", bootstrap)
        .option("group.id", f"bench-{uuid.uuid4().hex[:8]}")  # a fresh group: no committed offsets
        .option("readers", str(readers))
        .option("startingOffsets", "earliest")
        .load()
    )


# -- report -------------------------------------------------------------------------------------


@dataclasses.dataclass
class SideFigures:
    side: str
    queries: int
    rows: int
    batches: int
    wall_rows_per_s: float
    batch_rows_per_s: float
    median_batch_ms: float
    p95_batch_ms: float
    first_batch_ms: float
    steady_median_batch_ms: Optional[float]


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p95 of 8 batches is the largest: there is no sample above it)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[rank - 1])


def side_figures(runs: Sequence[QueryRun]) -> SideFigures:
    rows = sum(run.rows for run in runs)
    all_ms = [ms for run in runs for ms in run.batch_ms]
    steady_ms = [ms for run in runs for ms in run.batch_ms[1:]]
    return SideFigures(
        side=runs[0].side,
        queries=len(runs),
        rows=rows,
        batches=len(all_ms),
        wall_rows_per_s=rows / sum(run.wall_s for run in runs),
        batch_rows_per_s=rows / (sum(all_ms) / 1000),
        median_batch_ms=statistics.median(all_ms),
        p95_batch_ms=percentile(all_ms, 0.95),
        first_batch_ms=statistics.median(run.batch_ms[0] for run in runs),
        steady_median_batch_ms=statistics.median(steady_ms) if steady_ms else None,
    )


#: (label, attribute, is a time: a lower figure is better)
FIGURES = (
    ("records/s, start() to all read", "wall_rows_per_s", False),
    ("records/s, sum of batch durations", "batch_rows_per_s", False),
    ("batch latency median, ms", "median_batch_ms", True),
    ("batch latency p95, ms", "p95_batch_ms", True),
    ("first batch, ms (median over queries)", "first_batch_ms", True),
    ("later batches median, ms", "steady_median_batch_ms", True),
)


def _cell(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def report_table(figures: Sequence[SideFigures]) -> str:
    """A markdown table: one row per figure, one column per side, and kgroup / spark-kafka."""
    by_side = {f.side: f for f in figures}
    columns = [f.side for f in figures]
    header = ["figure", *columns, "ratio kgroup/spark-kafka"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for label, attribute, _ in FIGURES:
        values = [getattr(by_side[side], attribute) for side in columns]
        ours = getattr(by_side["kgroup"], attribute) if "kgroup" in by_side else None
        theirs = getattr(by_side[BASELINE], attribute) if BASELINE in by_side else None
        ratio = f"{ours / theirs:.2f}" if ours is not None and theirs else "-"
        lines.append("| " + " | ".join([label, *(_cell(v) for v in values), ratio]) + " |")
    counts = [f"{by_side[side].queries} queries, {by_side[side].batches} batches" for side in columns]
    lines.append("| " + " | ".join(["measured over", *counts, ""]) + " |")
    return "\n".join(lines)


# -- the run ------------------------------------------------------------------------------------


def _spark_session(jars: Sequence[Path]) -> Any:
    from pyspark.sql import SparkSession

    import kgroup_spark
    from benchmarks.spark_measure import local_spark_builder

    spark = (
        local_spark_builder("kgroup-bench-spark-kafka-source")
        .config("spark.jars", ",".join(str(jar) for jar in jars))
        .config("spark.sql.streaming.numRecentProgressUpdates", str(PROGRESS_ENTRIES))
        .getOrCreate()
    )
    assert isinstance(spark, SparkSession)
    spark.sparkContext.setLogLevel("ERROR")
    kgroup_spark.register(spark)
    return spark


@dataclasses.dataclass
class Setup:
    records: int
    partitions: int
    cap_per_partition: int

    @property
    def max_offsets_per_trigger(self) -> int:
        return self.cap_per_partition * self.partitions


def alternate(rounds: int, sides: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(round, side), the order rotated by one each round: every side goes first as often as the others."""
    for round_index in range(rounds):
        shift = round_index % len(sides)
        for side in [*sides[shift:], *sides[:shift]]:
            yield round_index, side


def measure(args: argparse.Namespace) -> tuple[list[SideFigures], list[QueryRun], str]:
    import pyspark

    import kgroup_spark

    check_java()
    jars = spark_kafka_jars(pyspark.__version__)
    cap = per_partition_cap(args.records, args.partitions, args.batches)
    setup = Setup(args.records, args.partitions, cap)
    # Executors' Python workers import this module (the kgroup side's source class).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    load_before = os.getloadavg()[0]  # the machine is shared: say how busy it was
    sides = [*SIDES, APACHE_SIDE] if args.apache_kafka else list(SIDES)
    runs: list[QueryRun] = []
    with contextlib.ExitStack() as stack:
        folder = tempfile.mkdtemp(prefix="kgroup-bench-spark-kafka-")
        stack.callback(shutil.rmtree, folder, True)
        host = stack.enter_context(kgroup_spark.GroupHost())
        host.server.create_topic(topic, partitions=args.partitions)
        bootstrap = {"spark-kafka": host.bootstrap_servers, "kgroup": host.bootstrap_servers}
        if args.apache_kafka:
            from kgroup.testing.apache_kafka import ApacheKafkaCluster

            kafka = stack.enter_context(ApacheKafkaCluster(nodes=1))
            create_topic_with_admin(kafka.bootstrap_servers, topic, args.partitions)
            bootstrap[APACHE_SIDE] = kafka.bootstrap_servers
        for address in sorted(set(bootstrap.values())):
            fill_topic(address, topic, args.records, args.partitions, args.record_bytes)
        spark = _spark_session(jars)
        stack.callback(spark.stop)
        for round_index, side in alternate(args.warmup_rounds + args.rounds, sides):
            if side == "kgroup":
                frame = kgroup_frame(spark, bootstrap[side], topic, setup.cap_per_partition, args.readers)
            else:
                frame = spark_kafka_frame(spark, bootstrap[side], topic, setup.max_offsets_per_trigger)
            checkpoint = os.path.join(folder, f"{sides.index(side)}-{round_index}")
            run = run_query(frame, side, round_index, checkpoint, args.records)
            warmup = round_index < args.warmup_rounds
            if not warmup:
                runs.append(run)
            print(f"  round {round_index}{' (warm-up)' if warmup else ''} {side}: {run.wall_s:.1f} s, "
                  f"batch ms {run.batch_ms}", flush=True)
    figures = [side_figures([run for run in runs if run.side == side]) for side in sides]
    context = (
        f"{args.records:,} records of {args.record_bytes} B in {args.partitions} partitions; "
        f"maxOffsetsPerTrigger {setup.max_offsets_per_trigger} (kgroup: {setup.cap_per_partition} per "
        f"partition); {args.readers} kgroup readers; local[2,4]; PySpark {pyspark.__version__}; "
        f"{args.warmup_rounds} warm-up round(s) left out; "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    return figures, runs, context


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        figures, _, context = measure(args)
    except ImportError as error:
        print(f"spark_kafka_source: {error} (pip install 'kgroup[spark]')", file=sys.stderr)
        return 2
    except BenchmarkUnavailableError as error:
        print(f"spark_kafka_source: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a JVM that did not start, an Apache Kafka node that did not start
        from kgroup.testing.apache_kafka import KafkaUnavailableError

        if isinstance(error, KafkaUnavailableError) or type(error).__name__ == "PySparkRuntimeError":
            print(f"spark_kafka_source: {str(error).splitlines()[0]}", file=sys.stderr)
            return 2
        raise
    print(context)
    print(report_table(figures))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
