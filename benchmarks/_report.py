"""The side-by-side table, the issue's targets and the time-vs-size plot."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from benchmarks._inputs import TARGET
from benchmarks._measure import SCENARIOS, STRATEGIES, Measurement

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PLOT_NAME = "assignor_times.png"
MARKDOWN_NAME = "assignors.md"

#: Targets from the issue, at TARGET size.
SPEEDUP_VS_KAFKA_PYTHON_STICKY = 300.0
MAX_RATIO_TO_OUR_ROUNDROBIN = 2.0


def _index(measurements: Iterable[Measurement]) -> dict:
    return {(m.strategy, m.side, m.scenario, m.size): m for m in measurements}


def _ms(m: Optional[Measurement]) -> str:
    if m is None:
        return "-"
    ms = m.best_s * 1000
    if ms < 1:
        return f"{ms:.3f}"
    return f"{ms:.2f}" if ms < 1000 else f"{ms:.0f}"


def _value(m: Optional[Measurement], attr: str) -> str:
    value = None if m is None else getattr(m, attr)
    return "-" if value is None else str(value)


def ratio(ours: Optional[Measurement], theirs: Optional[Measurement]) -> Optional[float]:
    """kgroup's time / kafka-python's, both from this run on the same input (None if either is missing)."""
    if ours is None or theirs is None or theirs.best_s <= 0:
        return None
    return ours.best_s / theirs.best_s


def _ratio_cell(r: Optional[float]) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}" if r >= 0.1 else f"{r:#.2g}"


def _speedup_cell(r: Optional[float]) -> str:
    if r is None or r <= 0:
        return "-"
    return f"{1 / r:.0f}x" if 1 / r >= 10 else f"{1 / r:.1f}x"


HEADER = (
    "strategy", "scenario", "size", "kgroup ms", "kafka-python ms", "ratio kgroup/kp", "speedup kp/kgroup",
    "balance kgroup", "balance kp", "moved kgroup", "moved kp", "rounds kgroup/kp",
)


def rows(measurements: Iterable[Measurement]) -> list[tuple[str, ...]]:
    """One row per strategy, size and scenario: ours next to kafka-python's (no header)."""
    measurements = list(measurements)
    index = _index(measurements)
    sizes = sorted({m.size for m in measurements}, key=lambda s: (s.members, s.partitions))
    out = []
    for strategy in STRATEGIES:
        for size in sizes:
            for scenario in SCENARIOS:
                ours = index.get((strategy, "kgroup", scenario, size))
                theirs = index.get((strategy, "kafka-python", scenario, size))
                if ours is None and theirs is None:
                    continue
                r = ratio(ours, theirs)
                out.append((
                    strategy, scenario, size.label, _ms(ours), _ms(theirs), _ratio_cell(r), _speedup_cell(r),
                    _value(ours, "balance"), _value(theirs, "balance"),
                    _value(ours, "moved"), _value(theirs, "moved"),
                    f"{_value(ours, 'rounds')}/{_value(theirs, 'rounds')}",
                ))
    return out


def table(measurements: Iterable[Measurement]) -> str:
    """The comparison as fixed-width text, for the terminal."""
    body = rows(measurements)
    all_rows = [HEADER, *body]
    widths = [max(len(row[i]) for row in all_rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in all_rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(measurements: Iterable[Measurement]) -> str:
    """The comparison as a Markdown table (numbers right-aligned)."""
    numeric = [False, False, False] + [True] * (len(HEADER) - 3)
    lines = [
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows(measurements)]
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
                    f"({ours.best_s * 1000:.2f} ms vs {their_sticky.best_s:.1f} s, "
                    f"best of {ours.rounds} / {their_sticky.rounds} rounds) "
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


#: One colour per assignor, one line style and marker per library.
_COLOURS = {"range": "tab:blue", "roundrobin": "tab:green", "sticky": "tab:red",
            "cooperative-sticky": "tab:purple"}
_STYLES = {"kgroup": dict(linestyle="-", marker="o"), "kafka-python": dict(linestyle="--", marker="s")}


def _time_label(ms: float, _position=None) -> str:
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{ms:g} ms" if ms >= 1 else f"{ms * 1000:g} µs"


def plot(measurements: Iterable[Measurement], path: Optional[Path] = None) -> Optional[Path]:
    """Time vs group size, one line per (library, assignor), a panel per scenario; returns the PNG path.

    Both axes are logarithmic: the libraries are three orders of magnitude
    apart at the target size.
    """
    measurements = list(measurements)
    if not measurements:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on CI or over ssh
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullLocator

    path = path or RESULTS_DIR / PLOT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    index = _index(measurements)
    sizes = sorted({m.size for m in measurements}, key=lambda s: (s.members, s.partitions))
    scenarios = [sc for sc in SCENARIOS if any(m.scenario == sc for m in measurements)]
    figure, axes = plt.subplots(1, len(scenarios), figsize=(7 * len(scenarios), 7.5), sharey=True,
                                squeeze=False)
    titles = {"fresh": "fresh assignment", "leave": "after one member leaves"}
    for ax, scenario in zip(axes[0], scenarios):
        for side, style in _STYLES.items():
            for strategy in STRATEGIES:
                points = [
                    (s.members, index[(strategy, side, scenario, s)].best_s * 1000)
                    for s in sizes
                    if (strategy, side, scenario, s) in index
                ]
                if points:
                    xs, ys = zip(*points)
                    ax.plot(xs, ys, color=_COLOURS[strategy], label=f"{side} {strategy}", linewidth=1.8,
                            **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([s.members for s in sizes])
        ax.set_xticklabels([f"{s.members:,}\n({s.partitions:,} p)" for s in sizes])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", axis="y", alpha=0.15)
        ax.set_title(titles.get(scenario, scenario))
        ax.set_xlabel("group size: members (partitions)")
        ax.yaxis.set_major_formatter(FuncFormatter(_time_label))
    axes[0][0].set_ylabel("assign() time (best of rounds, log scale)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    figure.suptitle("kgroup vs kafka-python 3.0 assignors: same input, same run "
                    "(solid: kgroup, dashed: kafka-python)")
    figure.tight_layout(rect=(0, 0.13, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def save(measurements: Iterable[Measurement],
         directory: Optional[Path] = None) -> tuple[Path, Optional[Path]]:
    """Write the Markdown table and targets, and the plot, to ``directory``; returns both paths."""
    measurements = list(measurements)
    directory = directory or RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    markdown = directory / MARKDOWN_NAME
    lines = [markdown_table(measurements), ""]
    lines += [f"- {line}" for line in targets(measurements)]
    markdown.write_text("\n".join(lines) + "\n")
    return markdown, plot(measurements, directory / PLOT_NAME)


def server_assignor_table(times: dict) -> list[str]:
    """Markdown rows: per size and scenario, uniform's and sticky's best ms and uniform / sticky."""
    lines = ["| size | scenario | uniform ms | sticky ms | uniform / sticky | rounds |",
             "|---|---|---|---|---|---|"]
    keys = sorted({(label, scenario) for _, scenario, label in times},
                  key=lambda key: (int(key[0].split("x")[1]), key[1]))
    for label, scenario in keys:
        uniform = times.get(("uniform", scenario, label))
        sticky = times.get(("sticky", scenario, label))
        ratio = f"{uniform[0] / sticky[0]:.3f}" if uniform and sticky else "-"
        cells = [f"{t[0] * 1000:.1f}" if t else "-" for t in (uniform, sticky)]
        rounds = "/".join(str(t[1]) for t in (uniform, sticky) if t)
        lines.append(f"| {label} | {scenario} | {cells[0]} | {cells[1]} | {ratio} | {rounds} |")
    return lines
