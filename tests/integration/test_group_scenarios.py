"""kgroup's drop-in KafkaConsumer in real groups on a real broker (Tansu)."""
from __future__ import annotations

import pytest

from harness import SESSION_TIMEOUT_MS
from scenario import PARTITIONS, run_group_scenario

pytestmark = pytest.mark.broker


def _report(label: str, figures: dict) -> None:
    shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in figures.items() if k not in ("owned", "overlaps")}
    print(f"\n{label}: {shown}")


def test_eager_group_balances_takes_over_and_keeps_offsets(tansu_bootstrap, unique_name):
    figures = run_group_scenario(
        tansu_bootstrap, unique_name("eager"), unique_name("g"), ["kgroup"] * 3, "kgroup", "sticky"
    )
    _report("kgroup sticky (eager)", figures)
    assert sorted(len(tps) for tps in figures["owned"].values()) == [3, 3]
    # A clean close leaves the group at once: no session timeout to wait out.
    assert figures["close_takeover_s"] < SESSION_TIMEOUT_MS / 1000
    # A killed member is only noticed when its session expires.
    assert figures["kill_takeover_s"] >= SESSION_TIMEOUT_MS / 1000 * 0.75
    assert figures["kill_takeover_s"] < SESSION_TIMEOUT_MS / 1000 + 15


def test_cooperative_kgroup_group_never_double_owns_a_partition(tansu_bootstrap, unique_name):
    figures = run_group_scenario(
        tansu_bootstrap, unique_name("coop"), unique_name("g"), ["kgroup"] * 3, "kgroup", "cooperative-sticky"
    )
    _report("kgroup cooperative-sticky", figures)
    assert figures["overlaps"] == [], figures["overlaps"]
    assert sum(len(tps) for tps in figures["owned"].values()) == PARTITIONS


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_mixed_group_of_kgroup_and_stock_consumers(tansu_bootstrap, unique_name, strategy):
    figures = run_group_scenario(
        tansu_bootstrap, unique_name("mixed"), unique_name("g"), ["kgroup", "stock", "kgroup"], "stock", strategy
    )
    _report(f"mixed {strategy}", figures)
    assert figures["overlaps"] == [], figures["overlaps"]
    # KIP-429 needs 2 generations; on Tansu even all-stock groups sometimes
    # take 3 (docs/kafka_python.md, known gaps), so 3 is the bound asserted.
    assert 1 <= figures["join_rounds"] <= (3 if strategy == "cooperative-sticky" else 1)
    assert sorted(len(tps) for tps in figures["owned"].values()) == [3, 3]
