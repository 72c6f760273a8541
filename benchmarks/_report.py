"""The side-by-side table, the issue's targets and the time-vs-size plot."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from benchmarks._inputs import TARGET
from benchmarks._measure import SCENARIOS, STRATEGIES, Measurement

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: Targets from the issue, at TARGET size.
SPEEDUP_VS_KAFKA_PYTHON_STICKY = 300.0
MAX_RATIO_TO_OUR_ROUNDROBIN = 2.0


def _index(measurements: Iterable[Measurement]) -> dict:
    return {(m.strategy, m.side, m.scenario, m.size): m for m in measurements}


def _ms(m: Optional[Measurement]) -> str:
    if m is None:
        return "-"
    return f"{m.best_s * 1000:.2f}" if m.best_s < 1 else f"{m.best_s * 1000:.0f}"


def _pair(ours, theirs, attr) -> str:
    def one(m):
        value = None if m is None else getattr(m, attr)
        return "-" if value is None else str(value)

    return f"{one(ours)} / {one(theirs)}"


def table(measurements: Iterable[Measurement]) -> str:
    """One row per strategy, scenario and size: ours next to kafka-python's."""
    measurements = list(measurements)
    index = _index(measurements)
    sizes = sorted({m.size for m in measurements}, key=lambda s: (s.members, s.partitions))
    header = ("strategy", "scenario", "size", "ours ms", "kafka-python ms", "kp/ours", "balance ours/kp", "moved ours/kp", "rounds ours/kp")
    rows = [header]
    for strategy in STRATEGIES:
        for size in sizes:
            for scenario in SCENARIOS:
                ours = index.get((strategy, "kgroup", scenario, size))
                theirs = index.get((strategy, "kafka-python", scenario, size))
                if ours is None and theirs is None:
                    continue
                ratio = f"{theirs.best_s / ours.best_s:.1f}x" if ours and theirs and ours.best_s > 0 else "-"
                rows.append((
                    strategy, scenario, size.label, _ms(ours), _ms(theirs), ratio,
                    _pair(ours, theirs, "balance"), _pair(ours, theirs, "moved"), _pair(ours, theirs, "rounds"),
                ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def targets(measurements: Iterable[Measurement]) -> list[str]:
    """The issue's targets at TARGET size, for whatever of them was measured."""
    index = _index(measurements)
    lines = []
    their_sticky = index.get(("sticky", "kafka-python", "fresh", TARGET))
    for scenario in SCENARIOS:
        roundrobin = index.get(("roundrobin", "kgroup", scenario, TARGET))
        for strategy in ("sticky", "cooperative-sticky"):
            ours = index.get((strategy, "kgroup", scenario, TARGET))
            if ours is None:
                continue
            if scenario == "fresh" and their_sticky is not None:
                speedup = their_sticky.best_s / ours.best_s
                verdict = "met" if speedup >= SPEEDUP_VS_KAFKA_PYTHON_STICKY else "MISSED"
                lines.append(
                    f"{TARGET.label} {strategy} fresh: {speedup:.0f}x faster than kafka-python's sticky "
                    f"({their_sticky.best_s:.1f} s, {their_sticky.rounds} round) "
                    f"[target >= {SPEEDUP_VS_KAFKA_PYTHON_STICKY:.0f}x: {verdict}]"
                )
            if roundrobin is not None:
                ratio = ours.best_s / roundrobin.best_s
                verdict = "met" if ratio <= MAX_RATIO_TO_OUR_ROUNDROBIN else "MISSED"
                lines.append(
                    f"{TARGET.label} {strategy} {scenario}: {ratio:.2f}x our round-robin's time "
                    f"[target <= {MAX_RATIO_TO_OUR_ROUNDROBIN:.0f}x: {verdict}]"
                )
            if scenario == "leave" and ours.moved is not None:
                verdict = "met" if ours.moved == 0 else "MISSED"
                lines.append(
                    f"{TARGET.label} {strategy} leave: {ours.moved} partitions moved besides the leaver's "
                    f"[target 0: {verdict}]"
                )
    return lines


def plot(measurements: Iterable[Measurement], path: Optional[Path] = None) -> Optional[Path]:
    """Time vs group size per strategy, ours vs kafka-python, log-log; returns the PNG path."""
    measurements = list(measurements)
    if not measurements:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on CI or over ssh
    import matplotlib.pyplot as plt

    path = path or RESULTS_DIR / "assign_time_vs_group_size.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    index = _index(measurements)
    sizes = sorted({m.size for m in measurements}, key=lambda s: (s.members, s.partitions))
    figure, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    styles = {("kgroup", "fresh"): "o-", ("kgroup", "leave"): "o--", ("kafka-python", "fresh"): "s-", ("kafka-python", "leave"): "s--"}
    colours = {"kgroup": "tab:blue", "kafka-python": "tab:orange"}
    for ax, strategy in zip(axes.flat, STRATEGIES):
        for (side, scenario), style in styles.items():
            points = [(s.members, index[(strategy, side, scenario, s)].best_s * 1000) for s in sizes if (strategy, side, scenario, s) in index]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, style, color=colours[side], label=f"{side} {scenario}")
        ax.set_title(strategy)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylabel("assign() time, ms")
        ax.legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("members (partitions = 10 x members)")
    figure.suptitle("kgroup vs kafka-python 3.0 assignors (identical subscriptions)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
