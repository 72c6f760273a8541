"""``kgroup campaign --spark`` (issue 28): seeds on Spark executors give what a local campaign gives.

Checked on the session's ``local[2,4]`` SparkSession and through the CLI (its own Spark, ``local[2]``;
``local-cluster`` in the slow suite): every seed's whole-run digest equals a local run's, and the
summary (per-assignor seeds, faults, violations; coverage) equals a local campaign's of the same seeds.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kgroup.sim.campaign import CampaignSummary, run_campaign
from kgroup.sim.simulator import CAMPAIGN_SHAPE, SimConfig, run

#: The campaign's default shape (3 members, 6 partitions, 10 simulated seconds): about 0.1 s a seed.
CONFIG = SimConfig(members=CAMPAIGN_SHAPE["members"], partitions=CAMPAIGN_SHAPE["partitions"],
                   duration_ms=CAMPAIGN_SHAPE["duration_ms"])
SEEDS = range(3, 9)


def _local_summary(seeds: range) -> CampaignSummary:
    return CampaignSummary.of(run_campaign(seeds, CONFIG, workers=1))


def test_spark_rows_match_local_runs_and_the_summary_matches_a_local_campaign(spark, tmp_path):
    from kgroup_spark.campaign import run_campaign_on_spark

    seen = []
    campaign = run_campaign_on_spark(spark, SEEDS, CONFIG, str(tmp_path / "rows.parquet"),
                                     progress=lambda done, total, failed: seen.append((done, total)))
    rows = {row["seed"]: row for row in spark.read.parquet(campaign.parquet_path).collect()}
    assert sorted(rows) == list(SEEDS)
    for seed in SEEDS:
        verdict = run(seed, CONFIG)
        assert rows[seed]["digest"] == verdict.digest(), seed
        assert rows[seed]["faults"] == len(verdict.schedule.faults)
        assert rows[seed]["assignor"] == verdict.assignor
    local = _local_summary(SEEDS)
    assert campaign.summary.per_assignor == local.per_assignor
    assert campaign.summary.coverage == local.coverage
    assert campaign.summary.violated == 0 and campaign.failed == ()
    assert seen[0] == (0, len(SEEDS)) and seen[-1] == (len(SEEDS), len(SEEDS))


def _table(output: str) -> list:
    """The summary's lines that do not depend on timing or on where the seeds ran."""
    return [line for line in output.splitlines()
            if re.match(r"^(\S+\s+\d+\s+\d+\s+\d+$|shape: |coverage: )", line)]


def _cli(*arguments: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgroup.cli", "campaign", *arguments], capture_output=True,
                          text=True, timeout=timeout_s)


def _spark_cli_matches_local(master: str, tmp_path) -> None:
    seeds = ["--seeds", "4", "--first-seed", "20"]
    on_spark = _cli("--spark", "--master", master, "--spark-out", str(tmp_path / "rows.parquet"), *seeds)
    assert on_spark.returncode == 0, on_spark.stderr[-2000:]
    local = _cli("--workers", "1", *seeds)
    assert local.returncode == 0, local.stderr[-2000:]
    assert _table(on_spark.stdout) == _table(local.stdout) and _table(local.stdout)
    assert "Spark task slot(s)" in on_spark.stdout
    assert (tmp_path / "rows.parquet").is_dir()


def test_the_cli_on_local_spark_prints_the_local_summary(tmp_path):
    _spark_cli_matches_local("local[2]", tmp_path)


@pytest.mark.slow
def test_the_cli_on_a_local_cluster_prints_the_local_summary(tmp_path):
    _spark_cli_matches_local("local-cluster[2,1,1024]", tmp_path)


def test_a_bad_master_is_one_line(tmp_path):
    failed = _cli("--spark", "--master", "nonsense://x", "--seeds", "1", "--spark-out", str(tmp_path / "r"),
                  timeout_s=300)
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert failed.stderr.strip().splitlines()[-1].startswith("kgroup: Spark did not start on nonsense://x")


@pytest.mark.parametrize("whole_group", [True, False], ids=["terminal-ctrl-c", "sigint-to-kgroup"])
def test_ctrl_c_cancels_the_spark_job_with_one_line(tmp_path, whole_group):
    """Ctrl-C at a terminal reaches Spark's JVM too (one process group); either way one line, exit 130."""
    import os
    import signal
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "kgroup.cli", "campaign", "--spark", "--master", "local[2]", "--seeds", "400",
         "--spark-out", str(tmp_path / "rows.parquet")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        started = ""
        deadline = time.monotonic() + 300
        while "up after" not in started and time.monotonic() < deadline and process.poll() is None:
            started += process.stderr.readline()  # type: ignore[union-attr]
        assert "up after" in started, started
        time.sleep(1)  # the job is running
        if whole_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("kgroup: interrupted; the Spark job was cancelled")
