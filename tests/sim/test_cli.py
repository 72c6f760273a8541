"""``kgroup simulate`` and ``kgroup campaign``: verdicts, exit codes, help, impossible values."""
import subprocess
import sys

import pytest

from kgroup.cli import main

import sim_planted_bugs as planted_bugs

QUICK = ["--members", "3", "--partitions", "6", "--duration-ms", "6000", "--max-faults", "3"]


def test_simulate_prints_the_verdict_schedule_and_coverage(capsys):
    assert main(["simulate", "--seed", "2", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "seed 2:" in out and "OK" in out and "# seed 2" in out and "coverage:" in out


def test_simulate_exits_1_on_a_violation_and_prints_the_shrunk_schedule(capsys):
    with planted_bugs.new_owner_starts_from_the_beginning():
        assert main(["simulate", "--seed", "0", *QUICK]) == 1
    out = capsys.readouterr().out
    assert "[duplicate]" in out and "shrunk" in out


def test_simulate_replays_a_schedule_file(tmp_path, capsys):
    schedule = tmp_path / "faults.txt"
    schedule.write_text("# seed 4\n 2500 ms  crash m1 for 700 ms\n 3000 ms  partition m0-* for 400 ms\n")
    assert main(["simulate", "--schedule", str(schedule), *QUICK]) == 0
    out = capsys.readouterr().out
    assert "seed 4:" in out and "crash m1 for 700 ms" in out and "partition m0-* for 400 ms" in out


def test_campaign_runs_seeds_in_processes_and_summarises(capsys):
    assert main(["campaign", "--seeds", "4", "--workers", "2", *QUICK]) == 0
    captured = capsys.readouterr()
    assert "4 seeds in" in captured.out and "coverage:" in captured.out
    assert captured.err == ""  # no progress when stderr is not a terminal (tests/sim/test_cli_processes.py)


@pytest.mark.parametrize("command", ["simulate", "campaign"])
def test_help(command):
    out = subprocess.run([sys.executable, "-m", "kgroup.cli", command, "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--seed" in out and "--assignor" in out and "exit code 1" in out.lower().replace("\n", " ")


@pytest.mark.parametrize("arguments, option, value", [
    (["simulate", "--members", "0"], "--members", "0"),
    (["simulate", "--partitions", "0"], "--partitions", "0"),
    (["simulate", "--max-faults", "-1"], "--max-faults", "-1"),
    (["simulate", "--duration-ms", "-5"], "--duration-ms", "-5"),
    (["simulate", "--duration-ms", "0"], "--duration-ms", "0"),
    (["simulate", "--processing-ms", "-1"], "--processing-ms", "-1"),
    (["campaign", "--seeds", "0"], "--seeds", "0"),
    (["campaign", "--seeds", "-3"], "--seeds", "-3"),
    (["campaign", "--workers", "0"], "--workers", "0"),
    (["campaign", "--show", "-1"], "--show", "-1"),
    (["campaign", "--members", "two"], "--members", "two"),
    (["compare", "--seeds", "0"], "--seeds", "0"),
    (["compare", "--workers", "-2"], "--workers", "-2"),
    (["compare", "--partitions", "0"], "--partitions", "0"),
])
def test_an_impossible_value_fails_at_parse_time_naming_the_option_and_the_value(
        capsys, arguments, option, value):
    # Small runs before the value under test: were it accepted, the command would end soon, and fail here.
    small = QUICK + (["--seeds", "1", "--workers", "1"] if arguments[0] != "simulate" else [])
    with pytest.raises(SystemExit) as exit_info:
        main([arguments[0], *small, *arguments[1:]])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith(f"kgroup {arguments[0]}: error: argument {option}: ") and value in error
    assert "Traceback" not in captured.err and captured.err.startswith(f"usage: kgroup {arguments[0]}")


def test_zero_faults_and_zero_processing_time_are_possible(capsys):
    assert main(["simulate", "--seed", "1", *QUICK, "--max-faults", "0", "--processing-ms", "0"]) == 0
    out = capsys.readouterr().out
    assert ", 0 faults," in out and "OK" in out


def test_the_library_rejects_the_same_values_with_a_typed_error():
    from kgroup.errors import ConfigError
    from kgroup.sim import SimConfig
    from kgroup.sim.campaign import run_jobs

    for field, value in [("members", 0), ("partitions", 0), ("max_faults", -1), ("duration_ms", -5),
                         ("processing_ms_per_record", -1), ("brokers", 0)]:
        with pytest.raises(ConfigError, match=f"{field} must be >= "):
            SimConfig(**{field: value})
    with pytest.raises(ConfigError, match="workers must be >= 1, got 0"):
        run_jobs([], workers=0)


def test_campaign_defaults_to_the_fault_dense_shape_and_reports_faults_per_cpu_second(capsys):
    """Issue 28: a campaign's default shape is chosen for faults a CPU-second (``simulate`` keeps the
    issue's shape), and the summary says how many faults a CPU-second it covered and the shape."""
    from kgroup.cli import _parser
    from kgroup.sim.simulator import CAMPAIGN_SHAPE

    campaign = _parser().parse_args(["campaign"])
    assert {key: getattr(campaign, key) for key in CAMPAIGN_SHAPE} == CAMPAIGN_SHAPE == {
        "members": 3, "partitions": 6, "duration_ms": 10_000, "max_faults": 5}
    simulate = _parser().parse_args(["simulate"])
    shape = (simulate.members, simulate.partitions, simulate.duration_ms, simulate.max_faults)
    assert shape == (5, 12, 60_000, 8)
    assert main(["campaign", "--seeds", "2", "--workers", "1", "--duration-ms", "6000"]) == 0
    out = capsys.readouterr().out
    assert "faults per CPU-second" in out and "seeds per CPU-second" in out
    assert "shape: --members 3 --partitions 6 --duration-ms 6000 --max-faults 5" in out
