"""``python -m kgroup_spark.demo`` (issue 24 item 7), and the same run on ``local-cluster`` with an
executor JVM killed (issue 24's Tests section).

Each runs the demo in its own process (its own SparkSession and JVMs).  Bounds come from the
demo's session timeout: the batch holding the failure completes within it plus 15 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from kgroup_spark.demo import SESSION_TIMEOUT_MS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MARGIN_S = 15


def _run_demo(*args: str, timeout_s: float) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "kgroup_spark.demo", *args],
        capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    return done.stdout


def _percent(line: str, what: str) -> int:
    return int(re.search(rf"per {what} (\d+)%", line).group(1))


def _check_takeover(out: str) -> None:
    print(out)
    assert "killing the" in out
    takeover_s = float(re.search(r"completed ([\d.]+) s after the kill", out).group(1))
    assert takeover_s < SESSION_TIMEOUT_MS / 1000 + MARGIN_S
    assert "query active to the end: True" in out
    assert "at most once each: True" in out
    assert "partitions ever held by two members at once: 0" in out


def test_the_demo_shows_batches_owners_and_a_killed_readers_takeover():
    out = _run_demo(timeout_s=300)
    _check_takeover(out)
    assert re.search(r"batch 1:\s+24 rows  reader-\d@driver: ", out)
    steady = next(line for line in out.splitlines() if line.startswith("steady state"))
    assert _percent(steady, "executor") >= 95


@pytest.mark.slow
def test_local_cluster_executor_jvm_killed_costs_at_most_a_session_timeout():
    out = _run_demo("--master", "local-cluster[2,1,1024]", "--kill", "executor", timeout_s=600)
    _check_takeover(out)
    assert "killing the executor JVM" in out
    steady = next(line for line in out.splitlines() if line.startswith("steady state"))
    assert _percent(steady, "executor") >= 95
