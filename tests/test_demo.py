"""The README's main job: ``python -m kgroup.demo``."""
from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from kgroup import demo

TOTAL = sum(demo.PARTITIONS_PER_TOPIC.values())


@pytest.fixture(scope="module")
def output() -> str:
    out = io.StringIO()
    assert demo.main(out) == 0
    return out.getvalue()


def _section(output: str, strategy: str) -> str:
    match = re.search(rf"^\[{re.escape(strategy)}\] .*?(?=^\[|^partitions per member)", output, re.M | re.S)
    assert match, f"no section for {strategy}"
    return match.group(0)


def _line(section: str, label: str) -> str:
    match = re.search(rf"^  {label}:.*$", section, re.M)
    assert match, f"no {label} line in:\n{section}"
    return match.group(0)


def _int(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in {text!r}"
    return int(match.group(1))


@pytest.mark.parametrize("strategy", demo.STRATEGIES)
def test_every_strategy_reports_fresh_leave_and_join(output, strategy):
    section = _section(output, strategy)
    for label in ("fresh", "leave", "join"):
        line = _line(section, label)
        low, high, balance = (_int(rf"{k} (\d+)", line) for k in ("min", "max", "balance"))
        assert 0 <= low <= high and balance == high - low
        assert _int(r"rack-local (\d+)/", line) <= TOTAL
    held = _int(r"held (\d+)", _line(section, "leave"))
    assert held > 0
    assert _int(r"got (\d+)", _line(section, "join")) > 0


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_strategies_move_only_what_balance_needs(output, strategy):
    section = _section(output, strategy)
    leave = _line(section, "leave")
    assert _int(r"moved (\d+)", leave) <= _int(r"held (\d+)", leave)
    join = _line(section, "join")
    assert _int(r"moved (\d+)", join) <= _int(r"got (\d+)", join)
    # Two auditors can hold up to 18 partitions, so the group can be balanced.
    assert _int(r"balance (\d+)", _line(section, "fresh")) <= 1


def test_cooperative_sticky_shows_both_rounds_of_the_join(output):
    section = _section(output, "cooperative-sticky")
    join_rounds = re.search(
        r"^  join:.*\n    round 1: (\d+) assigned, (\d+) revoked and withheld; round 2: (\d+) assigned",
        section, re.M,
    )
    assert join_rounds, section
    first, revoked, second = map(int, join_rounds.groups())
    assert first + revoked == TOTAL  # round one withholds exactly what it revokes
    assert second == TOTAL
    assert revoked == _int(r"moved (\d+)", _line(section, "join"))


def test_member_table_lists_every_member(output):
    table = output.split("partitions per member")[1]
    for i in range(1, 14):
        assert f"consumer-{i:02d}" in table
    assert re.search(rf"^{demo.LEAVER} .* \d+>->-", table, re.M)  # no count once gone
    assert re.search(rf"^{demo.JOINER} .* ->->\d+", table, re.M)  # a count only after joining


def test_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "kgroup.demo"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert all(f"[{s}]" in result.stdout for s in demo.STRATEGIES)


def test_runs_as_the_kgroup_demo_subcommand(capsys):
    """Issue 13's CLI: ``kgroup demo`` beside simulate, campaign, compare and serve."""
    from kgroup.cli import main

    assert main(["demo"]) == 0
    printed = capsys.readouterr().out
    assert all(f"[{s}]" in printed for s in demo.STRATEGIES) and "[in-memory cluster]" in printed
    with pytest.raises(SystemExit) as help_exit:
        main(["demo", "--help"])
    assert help_exit.value.code == 0
    help_text = capsys.readouterr().out
    # What the demo does, both halves; no "main job for now" (issue 22).
    assert "every strategy, then fail over its coordinator" in help_text and "for now" not in help_text


def test_failover_section_shows_the_group_surviving_its_coordinator(output):
    from kgroup.demo_failover import run_failover

    assert "[in-memory cluster]" in output and "all intact" in output
    figures = run_failover(io.StringIO())
    assert figures["acknowledged"] and figures["offsets_intact"]
    assert figures["old"] != figures["new"]
    # The new coordinator loaded the Stable group: no rebalance, same generation.
    assert figures["generation_after"] == figures["generation_before"]
    assert figures["rebalance_callbacks"] == 0
    assert 0 < figures["failover_ms"] <= 3_000 + 1_000  # next heartbeat + discovery + load
    assert figures["sizes_after_leave"] == [2, 2, 2, 3, 3]
