"""Timelines of one run: a PNG (matplotlib, Agg backend) and a self-contained HTML page.

One row per partition showing which member owned it over time (gaps: nobody owned it, so nobody
consumed it), the generations the group was Stable in as bands, faults as markers, and one row per
member with its state.  The only writers of :mod:`kgroup.sim` besides :mod:`kgroup.sim.compare`;
everything is computed from the history by :mod:`kgroup.sim.metrics`.
"""
from __future__ import annotations

import base64
import html
import io
from typing import Dict, List, Optional

from kgroup.sim.history import FaultApplied, History
from kgroup.sim.metrics import member_states, ownership_intervals, run_metrics, stable_intervals

__all__ = ["pyplot", "timeline_figure", "write_timeline"]

_STATE_COLOURS = {"STABLE": "#c8e6c9", "COMPLETING_REBALANCE": "#fff59d", "PREPARING_REBALANCE": "#ffccbc",
                  "UNJOINED": "#eeeeee", "STOPPED": "#424242"}


def _partition_key(row: str) -> tuple:
    topic, _, index = row.rpartition("-")
    return (topic, int(index))


def _row(kind: str, name: str, spans: List[str]) -> str:
    cells = f"<td>{html.escape(name)}</td><td>{html.escape(', '.join(spans))}</td>"
    return f'<tr class="{kind}">{cells}</tr>'


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def timeline_figure(history: History, end_ms: Optional[int] = None, title: str = ""):
    """The timeline as a matplotlib figure (the caller closes it)."""
    plt = pyplot()
    owners = ownership_intervals(history, end_ms)
    states = member_states(history, end_ms)
    partitions = sorted({i.row for i in owners}, key=_partition_key)
    members = sorted({i.row for i in states})
    rows = partitions + [f"state {m}" for m in members]
    palette = plt.get_cmap("tab10")
    colour: Dict[str, object] = {m: palette(i % 10) for i, m in enumerate(members)}
    figure, axes = plt.subplots(figsize=(12, 0.35 * len(rows) + 1.8))
    y = {row: len(rows) - 1 - i for i, row in enumerate(rows)}
    for start, stop, generation in stable_intervals(history, end_ms):
        axes.axvspan(start / 1000, stop / 1000, color="#e3f2fd", zorder=0)
        axes.text((start + stop) / 2000, len(rows) - 0.4, f"g{generation}", ha="center", va="bottom",
                  fontsize=7, color="#1565c0")
    for interval in owners:
        axes.broken_barh([(interval.start_ms / 1000, (interval.end_ms - interval.start_ms) / 1000)],
                         (y[interval.row] - 0.35, 0.7), color=colour.get(interval.label, "grey"), zorder=2)
    for interval in states:
        axes.broken_barh([(interval.start_ms / 1000, (interval.end_ms - interval.start_ms) / 1000)],
                         (y[f"state {interval.row}"] - 0.35, 0.7),
                         color=_STATE_COLOURS.get(interval.label, "#9e9e9e"), zorder=2)
    for fault in history.of(FaultApplied):
        heal = fault.fault.startswith("heal ")
        axes.axvline(fault.at_ms / 1000, color="#2e7d32" if heal else "#c62828",
                     linestyle=":" if heal else "-", linewidth=0.8, zorder=3)
        if not heal:
            axes.text(fault.at_ms / 1000, -0.9, fault.fault.split(" for ")[0], rotation=30, fontsize=6,
                      color="#c62828", ha="left", va="top")
    axes.set_yticks([y[r] for r in rows])
    axes.set_yticklabels(rows, fontsize=7)
    axes.set_ylim(-1, len(rows) + 0.2)
    axes.set_xlabel("simulated seconds (blue bands: Stable, by generation; red lines: faults; "
                    "green dotted: heals)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[m]) for m in members]
    handles += [plt.Rectangle((0, 0), 1, 1, color=c) for c in _STATE_COLOURS.values()]
    axes.legend(handles, [f"owner {m}" for m in members] + list(_STATE_COLOURS), fontsize=6,
                loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    return figure


def _png(history: History, end_ms: Optional[int], title: str) -> bytes:
    plt = pyplot()
    figure = timeline_figure(history, end_ms, title)
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()
    finally:
        plt.close(figure)


def _html(history: History, end_ms: Optional[int], title: str) -> str:
    png = base64.b64encode(_png(history, end_ms, title)).decode("ascii")
    owners = ownership_intervals(history, end_ms)
    by_row: Dict[str, List[str]] = {}
    for interval in owners:
        by_row.setdefault(interval.row, []).append(f"{interval.label} {interval.start_ms}-{interval.end_ms}")
    metrics = run_metrics(history, end_ms)
    rows = "\n".join(_row("partition", row, spans)
                     for row, spans in sorted(by_row.items(), key=lambda item: _partition_key(item[0])))
    states: Dict[str, List[str]] = {}
    for interval in member_states(history, end_ms):
        states.setdefault(interval.row, []).append(f"{interval.label} {interval.start_ms}-{interval.end_ms}")
    member_rows = "\n".join(_row("member", m, s) for m, s in sorted(states.items()))
    faults = "\n".join(f"<li>{f.at_ms} ms: {html.escape(f.fault)}</li>" for f in history.of(FaultApplied))
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title or 'kgroup timeline')}</title>
<style>body{{font-family:sans-serif;font-size:13px}} td{{padding:2px 8px;vertical-align:top}}
table{{border-collapse:collapse}} tr:nth-child(even){{background:#f5f5f5}}</style></head>
<body><h1>{html.escape(title or 'kgroup timeline')}</h1>
<p>rebalances {metrics.rebalances};
partition-seconds without an owner {metrics.unowned_partition_seconds:.1f};
records processed twice {metrics.records_processed_twice}; time to Stable after each fault (ms)
{list(metrics.recovery_ms)}</p>
<img alt="timeline" src="data:image/png;base64,{png}">
<h2>Owners by partition (member start-end ms)</h2><table>
{rows}
</table>
<h2>Member states</h2><table>
{member_rows}
</table>
<h2>Faults</h2><ul>
{faults}
</ul></body></html>
"""


def write_timeline(history: History, path: str, end_ms: Optional[int] = None, title: str = "") -> None:
    """Write the timeline to ``path``: ``.png`` a picture, ``.html``/``.htm`` a self-contained page."""
    lower = path.lower()
    if lower.endswith(".png"):
        data = _png(history, end_ms, title)
        with open(path, "wb") as file:
            file.write(data)
    elif lower.endswith((".html", ".htm")):
        text = _html(history, end_ms, title)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    else:
        raise ValueError(f"timeline {path!r}: the name must end in .png or .html")
