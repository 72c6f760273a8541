"""``kgroup compare``: the same schedules for every variant, the aggregation on known inputs, the report."""
import os
import shlex
import subprocess
import sys

import pytest

from kgroup.cli import main
from kgroup.sim import SimConfig
from kgroup.sim.campaign import CampaignResult, SeedOutcome
from kgroup.sim.compare import (
    SCENARIOS, Comparison, Variant, default_variants, expectations, jobs, summarise, variant_config,
)
from kgroup.sim.metrics import RunMetrics

import sim_planted_bugs as planted_bugs

TINY = ["--members", "3", "--partitions", "4", "--duration-ms", "5000", "--max-faults", "3"]
MIXED, BOUNCES = SCENARIOS
BASE = SimConfig(members=3, partitions=6, duration_ms=10_000, max_faults=5)


def _outcome(seed, rebalances, unowned_ms, twice, recovery, violations=()):
    metrics = RunMetrics(rebalances=rebalances, unowned_partition_ms=unowned_ms,
                         records_processed_twice=twice, recovery_ms=tuple(recovery), faults=len(recovery),
                         end_ms=10_000)
    return SeedOutcome(seed, "range", len(recovery), tuple(violations),
                       ("duplicate",) if violations else (), (), BASE, metrics)


def test_every_variant_of_a_seed_replays_one_schedule():
    planned = jobs(range(3), SCENARIOS, default_variants(), BASE)
    assert len(planned) == 3 * len(SCENARIOS) * 10
    for scenario in SCENARIOS:
        for seed in range(3):
            schedules = {job[0] for s, _v, job in planned if s is scenario and job[0].seed == seed}
            assert len(schedules) == 1  # one schedule, whatever the assignor or the membership
    bounce = [job[0] for s, _v, job in planned if s is BOUNCES]
    assert all(f.kind == "bounce" for schedule in bounce for f in schedule.faults)
    # The dynamic variants replay the bounces as plain restarts: nothing makes them static.
    dynamic = variant_config(BASE, BOUNCES, Variant("range", False))
    assert not dynamic.static and dynamic.faults != "static-bounce" and dynamic.assignor == "range"
    assert variant_config(BASE, BOUNCES, Variant("sticky", True)).faults == "static-bounce"


def test_summarise_sums_means_and_percentiles_of_known_runs():
    outcomes = [_outcome(0, 3, 1_500, 4, [0, 100, 900]),
                _outcome(1, 5, 2_500, 0, [200]),
                _outcome(2, 2, 0, 7, [300, 400, 5_000, 600], violations=("[duplicate] 1 ms: x",))]
    summary = summarise("range dynamic", outcomes)
    assert (summary.seeds, summary.violated_seeds, summary.faults) == (3, 1, 8)
    assert summary.unowned_partition_seconds == 4.0
    assert summary.per_seed(summary.unowned_partition_seconds) == 4 / 3
    assert (summary.records_processed_twice, summary.rebalances, summary.recoveries) == (11, 10, 8)
    # Nearest rank over 0, 100, 200, 300, 400, 600, 900, 5000: p50 the 4th, p99 the 8th.
    assert summary.recovery_p50_ms == 300 and summary.recovery_p99_ms == 5_000
    empty = summarise("nothing", [_outcome(3, 2, 0, 0, [])])
    assert empty.recovery_p50_ms is None and empty.recoveries == 0


def _comparison(static_rebalances, cooperative_unowned_ms):
    eager, cooperative = Variant("range", False), Variant("cooperative-sticky", False)
    static = Variant("range", True)
    runs = {eager: (_outcome(0, 4, 2_000, 0, [500]),),
            cooperative: (_outcome(0, 4, cooperative_unowned_ms, 0, [500]),),
            static: (_outcome(0, static_rebalances, 2_000, 0, [0]),)}
    outcomes = {"bounces": runs}
    return Comparison(BASE, (0,), outcomes, (BOUNCES,), (eager, cooperative, static),
                      CampaignResult((), 1.0, 1))


def test_pooled_rows_and_expectations_follow_the_numbers():
    good = _comparison(static_rebalances=2, cooperative_unowned_ms=1_000)
    pooled = {s.label: s for s in good.pooled("bounces")}
    assert pooled["eager, dynamic"].seeds == 1 and pooled["dynamic, every assignor"].seeds == 2
    assert pooled["dynamic, every assignor"].rebalances == 8
    assert pooled["static, every assignor"].rebalances == 2
    assert [held for _text, held in expectations(good)] == [True, True]
    bad = _comparison(static_rebalances=6, cooperative_unowned_ms=3_000)
    assert [held for _text, held in expectations(bad)] == [False, False]


def test_compare_writes_the_report_with_tables_and_plots(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["compare", "--seeds", "2", "--workers", "2", "--out", str(out), *TINY]) == 0
    text = (out / "README.md").read_text()
    assert "kgroup compare --seeds 2 --workers 2 --out" in text.splitlines()[5]
    for variant in default_variants():
        assert text.count(f"| {variant.name} | 2 | 0 |") == 2  # one row per scenario, no violation
    assert "![mixed](mixed.png)" in text and "## Violations\n\nNone." in text
    for name in ("mixed.png", "bounces.png"):
        assert (out / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "40 runs (2 seeds x 2 scenario(s) x 10 variants)" in capsys.readouterr().out


def test_the_reports_command_regenerates_it_in_the_reports_folder_wherever_it_was_run_from(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "notes.md").write_text("Measured on a laptop.\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["compare", "--seeds", "1", "--workers", "1", "--scenarios", "bounces",
                 "--out=../reports/first", "--notes", "../notes.md", *TINY]) == 0
    report = tmp_path / "reports" / "first" / "README.md"
    lines = report.read_text().splitlines()
    assert lines[2] == "Regenerate (in this report's folder):"
    command = lines[5]
    assert command.startswith("kgroup compare --seeds 1 --workers 1 --scenarios bounces --out=. "
                              "--notes ../../notes.md ")
    # Run as the report says, in its folder: the same report comes out.
    monkeypatch.chdir(report.parent)
    report.unlink()
    assert main(shlex.split(command)[1:]) == 0
    assert report.read_text().splitlines()[5] == command and "Measured on a laptop." in report.read_text()
    capsys.readouterr()


def test_compare_exits_1_when_a_variant_violates_an_invariant(tmp_path, capsys):
    with planted_bugs.assignor_double_assigns():  # range only; workers 1 so the patch is in effect
        code = main(["compare", "--seeds", "1", "--workers", "1", "--scenarios", "bounces",
                     "--out", str(tmp_path), *TINY])
    assert code == 1
    text = (tmp_path / "README.md").read_text()
    violations = text.split("## Violations")[1].strip().splitlines()
    assert [line.split(":")[0] for line in violations] == ["- bounces / range dynamic / seed 0",
                                                           "- bounces / range static / seed 0"]
    assert all("same-generation-owners" in line for line in violations)
    assert "same-generation-owners" in capsys.readouterr().out


def test_help_and_a_bad_scenario():
    out = subprocess.run([sys.executable, "-m", "kgroup.cli", "compare", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--out" in out and "--workers" in out and "exit code 1" in out.lower().replace("\n", " ")
    with pytest.raises(SystemExit):
        main(["compare", "--scenarios", "storms"])
    with pytest.raises(SystemExit) as exit_info:  # at parse time, naming the option; no report
        main(["compare", "--seeds", "0", "--out", "unused"])
    assert exit_info.value.code == 2 and not os.path.exists("unused")
