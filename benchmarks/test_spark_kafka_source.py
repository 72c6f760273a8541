"""The Spark-Kafka-source benchmark's pure parts: options, the kgroup side's cap, the figures, the table.

No Spark runs here: ``python -m benchmarks.spark_kafka_source`` is the measurement.
"""
from __future__ import annotations

import pytest

from benchmarks import spark_kafka_source as bench
from kgroup_spark.sources.kafka_topic import KafkaTopicSource


def test_defaults_make_several_equal_batches():
    args = bench.parse_args([])
    assert (args.records, args.partitions, args.batches) == (48_000, 4, 4)
    assert (args.rounds, args.warmup_rounds) == (2, 1)
    cap = bench.per_partition_cap(args.records, args.partitions, args.batches)
    assert cap == 3_000 and bench.Setup(args.records, args.partitions, cap).max_offsets_per_trigger == 12_000
    assert bench.per_partition_cap(10, 4, 4) == 1  # 3 per partition over 4 batches: never 0


@pytest.mark.parametrize(
    "argv", [["--rounds", "0"], ["--records", "-1"], ["--readers", "3"], ["--warmup-rounds", "-1"]])
def test_bad_options_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        bench.parse_args(argv)
    assert exited.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_capped_source_plans_at_most_the_cap_per_batch(monkeypatch):
    available = {0: 7, 1: 2}
    monkeypatch.setattr(KafkaTopicSource, "latest_offsets", lambda self: dict(available))
    monkeypatch.setattr(KafkaTopicSource, "earliest_offsets", lambda self: {0: 0, 1: 0})
    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.topic": "t"}
    source = bench.CappedKafkaTopicSource({**options, "source.max.offsets.per.partition": "3"})
    assert [source.latest_offsets() for _ in range(4)] == [
        {0: 3, 1: 2}, {0: 6, 1: 2}, {0: 7, 1: 2}, {0: 7, 1: 2}]
    available[1] = 9  # records appended meanwhile are capped from where the last plan ended
    assert source.latest_offsets() == {0: 7, 1: 5}


def test_progress_batches_keep_batches_with_rows_in_order():
    progress = [
        {"batchId": 1, "numInputRows": 20, "durationMs": {"triggerExecution": 300}},
        {"batchId": 0, "numInputRows": 10, "durationMs": {"triggerExecution": 900}},
        {"batchId": 2, "numInputRows": 0, "durationMs": {"triggerExecution": 5}},
    ]
    assert bench.progress_batches(progress) == ([10, 20], [900, 300])


def test_side_figures_and_table_ratio():
    spark_kafka = [bench.QueryRun("spark-kafka", 0, 2.0, [500, 500], [1000, 500]),
                   bench.QueryRun("spark-kafka", 1, 2.0, [500, 500], [1000, 500])]
    kgroup = [bench.QueryRun("kgroup", 0, 4.0, [500, 500], [2000, 1000]),
              bench.QueryRun("kgroup", 1, 4.0, [500, 500], [2000, 1000])]
    ours, theirs = bench.side_figures(kgroup), bench.side_figures(spark_kafka)
    assert theirs.wall_rows_per_s == 500 and theirs.batch_rows_per_s == pytest.approx(2000 / 3)
    assert (theirs.first_batch_ms, theirs.steady_median_batch_ms, theirs.p95_batch_ms) == (1000, 500, 1000)
    table = bench.report_table([theirs, ours])
    assert table.splitlines()[0] == "| figure | spark-kafka | kgroup | ratio kgroup/spark-kafka |"
    assert "| records/s, start() to all read | 500 | 250 | 0.50 |" in table
    assert "| batch latency median, ms | 750 | 1,500 | 2.00 |" in table
    assert "| measured over | 2 queries, 4 batches | 2 queries, 4 batches |  |" in table


def test_every_side_goes_first_in_turn():
    sides = ["a", "b", "c"]
    order = list(bench.alternate(3, sides))
    assert [side for round_index, side in order if round_index == 1] == ["b", "c", "a"]
    assert {side for _, side in order[::3]} == set(sides)


def test_jar_names_to_artifacts():
    assert bench._artifact_name("kafka-clients-3.9.1.jar") == "kafka-clients"
    assert bench._artifact_name("scala-parallel-collections_2.13-1.2.0.jar") == (
        "scala-parallel-collections_2.13")
    assert bench._artifact_name("spark-sql-kafka-0-10_2.13-4.0.1.jar") == "spark-sql-kafka-0-10_2.13"
    assert bench._artifact_name("zstd-jni-1.5.6-9.jar") == "zstd-jni"
