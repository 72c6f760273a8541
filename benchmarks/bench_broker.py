"""Group timings against a real broker (Tansu): kgroup vs stock kafka-python.

Runs the integration scenario (tests/integration/integration_scenario.py) once per
consumer kind and strategy, same broker, same run, and prints:
start → first balanced assignment, close → takeover, SIGKILL → takeover,
join → balanced, and the rebalance rounds a join took.

    python benchmarks/bench_broker.py            # prints a table
    python -m pytest benchmarks/bench_broker.py -m slow -s   # same, as a test

Marked ``slow`` (minutes of wall clock), so the default test run skips it.
"""
from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

from kgroup.testing.tansu import running_tansu  # noqa: E402
from integration_scenario import run_group_scenario  # noqa: E402

KINDS = ("stock", "kgroup")
STRATEGIES = ("sticky", "cooperative-sticky")
COLUMNS = ("first_balanced_s", "close_takeover_s", "join_rebalance_s", "join_rounds", "kill_takeover_s")


def measure(bootstrap: str) -> list[dict]:
    rows = []
    for strategy in STRATEGIES:
        for kind in KINDS:
            tag = uuid.uuid4().hex[:8]
            figures = run_group_scenario(
                bootstrap, f"bench-{tag}", f"bench-g-{tag}", [kind] * 3, kind, strategy
            )
            assert not figures["overlaps"], figures["overlaps"]
            rows.append({"kind": kind, "strategy": strategy, **{c: figures[c] for c in COLUMNS}})
    return rows


IDLE_WINDOW_S = 10.0


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(bootstrap: str, kind: str) -> float:
    """CPU share of one joined consumer whose app polls an empty topic."""
    from kgroup.testing.tansu import create_topic
    from integration_harness import OwnershipLog, wait_for
    from integration_scenario import MemberProcess

    tag = uuid.uuid4().hex[:8]
    topic = f"idle-{tag}"
    create_topic(bootstrap, topic, 1)
    log = OwnershipLog()
    member = MemberProcess("idle", kind, bootstrap, topic, f"idle-g-{tag}", "sticky", log)
    try:
        wait_for(lambda: member.owned(), 30, "the idle member's assignment")
        start = _cpu_seconds(member.proc.pid)
        time.sleep(IDLE_WINDOW_S)
        return (_cpu_seconds(member.proc.pid) - start) / IDLE_WINDOW_S
    finally:
        member.stop()


def render(rows: list[dict]) -> str:
    header = f"{'strategy':<20}{'kind':<8}" + "".join(f"{c:>18}" for c in COLUMNS)
    lines = [header]
    for row in rows:
        cells = "".join(
            f"{row[c]:>18.2f}" if isinstance(row[c], float) else f"{row[c]:>18}" for c in COLUMNS
        )
        lines.append(f"{row['strategy']:<20}{row['kind']:<8}{cells}")
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.broker
def test_group_timings_kgroup_vs_stock():
    with running_tansu() as bootstrap:
        print("\n" + report(bootstrap))


def report(bootstrap: str) -> str:
    lines = [render(measure(bootstrap)), ""]
    for kind in KINDS:
        lines.append(f"idle CPU, one joined {kind} consumer polling every 100 ms: "
                     f"{idle_cpu(bootstrap, kind):.1%} of a core")
    return "\n".join(lines)


if __name__ == "__main__":
    with running_tansu() as bootstrap:
        print(report(bootstrap))
