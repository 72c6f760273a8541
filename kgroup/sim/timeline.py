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
from typing import Dict, List, Optional, Tuple

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


#: Points: every text of the picture is at least this big (issue 22: the legend was 6 pt).
FONT_PT = 8
#: The figure's resolution; the fault labels are laid out in its pixels, so the PNG is saved at it.
DPI = 100
#: Height of one lane of fault labels, in inches (an 8 pt line and its spacing).
LANE_IN = 0.2
#: Pixels kept free between two labels in one lane.
LABEL_GAP_PX = 6


def _lanes(spans: List[Tuple[float, float]], gap: float) -> List[int]:
    """Greedy interval colouring: each ``(left, right)`` span gets the lowest lane whose last span ends
    ``gap`` before it starts, so no two spans of one lane overlap."""
    lane_ends: List[float] = []
    lanes = [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda i: spans[i]):
        left, right = spans[index]
        lane = next((n for n, end in enumerate(lane_ends) if end + gap <= left), len(lane_ends))
        if lane == len(lane_ends):
            lane_ends.append(right)
        else:
            lane_ends[lane] = right
        lanes[index] = lane
    return lanes


def _place_fault_labels(figure, fault_axes, labels) -> int:
    """Put each fault label in the lowest lane where it overlaps no other, starting at its fault's line
    (ending there when it would run past the right edge); return the number of lanes."""
    renderer = figure.canvas.get_renderer()
    box = fault_axes.get_window_extent(renderer)
    spans = []
    for text in labels:
        x_px = fault_axes.transData.transform((text.get_position()[0], 0))[0]
        width = text.get_window_extent(renderer).width
        if x_px + width > box.x1:
            text.set_horizontalalignment("right")
            spans.append((x_px - width, x_px))
        else:
            text.set_horizontalalignment("left")
            spans.append((x_px, x_px + width))
    lanes = _lanes(spans, LABEL_GAP_PX)
    for text, lane in zip(labels, lanes):
        text.set_y(lane + 0.5)
    count = max(lanes, default=-1) + 1
    fault_axes.set_ylim(0, max(1, count))
    return count


def timeline_figure(history: History, end_ms: Optional[int] = None, title: str = ""):
    """The timeline as a matplotlib figure (the caller closes it).

    Fault labels sit in lanes above the rows, each starting at its fault's line, laid out in the
    figure's pixels so that none overlaps another label, a tick label, the title or the axis title
    (tests/sim/test_timeline.py compares the boxes matplotlib reports)."""
    plt = pyplot()
    owners = ownership_intervals(history, end_ms)
    states = member_states(history, end_ms)
    partitions = sorted({i.row for i in owners}, key=_partition_key)
    members = sorted({i.row for i in states})
    rows = partitions + [f"state {m}" for m in members]
    palette = plt.get_cmap("tab10")
    colour: Dict[str, object] = {m: palette(i % 10) for i, m in enumerate(members)}
    rows_in = 0.35 * len(rows) + 0.4
    figure = plt.figure(figsize=(12, rows_in + LANE_IN + 1.6), dpi=DPI)
    grid = figure.add_gridspec(2, 1, height_ratios=[LANE_IN, rows_in], hspace=0.0)
    fault_axes = figure.add_subplot(grid[0])
    axes = figure.add_subplot(grid[1], sharex=fault_axes)
    y = {row: len(rows) - 1 - i for i, row in enumerate(rows)}
    generation_labels = []
    for start, stop, generation in stable_intervals(history, end_ms):
        axes.axvspan(start / 1000, stop / 1000, color="#e3f2fd", zorder=0)
        generation_labels.append(axes.text((start + stop) / 2000, len(rows) - 0.45, f"g{generation}",
                                           ha="center", va="center", fontsize=FONT_PT, color="#1565c0"))
    for interval in owners:
        axes.broken_barh([(interval.start_ms / 1000, (interval.end_ms - interval.start_ms) / 1000)],
                         (y[interval.row] - 0.35, 0.7), color=colour.get(interval.label, "grey"), zorder=2)
    for interval in states:
        axes.broken_barh([(interval.start_ms / 1000, (interval.end_ms - interval.start_ms) / 1000)],
                         (y[f"state {interval.row}"] - 0.35, 0.7),
                         color=_STATE_COLOURS.get(interval.label, "#9e9e9e"), zorder=2)
    fault_labels = []
    for fault in history.of(FaultApplied):
        heal = fault.fault.startswith("heal ")
        for axis in (axes, fault_axes):
            axis.axvline(fault.at_ms / 1000, color="#2e7d32" if heal else "#c62828",
                         linestyle=":" if heal else "-", linewidth=0.8, zorder=3)
        if not heal:
            fault_labels.append(fault_axes.text(fault.at_ms / 1000, 0.5, " " + fault.fault.split(" for ")[0],
                                                fontsize=FONT_PT, color="#c62828", va="center",
                                                bbox={"facecolor": "white", "edgecolor": "none",
                                                      "pad": 0.5}, zorder=4))
    fault_axes.set_yticks([])
    fault_axes.tick_params(axis="x", bottom=False, labelbottom=False)
    for side in ("top", "right", "left"):
        fault_axes.spines[side].set_visible(False)
    axes.set_yticks([y[r] for r in rows])
    axes.set_yticklabels(rows, fontsize=FONT_PT)
    axes.tick_params(axis="x", labelsize=FONT_PT)
    axes.set_ylim(-0.6, len(rows))
    axes.set_xlabel("simulated seconds (blue bands: Stable, by generation; red lines: faults; "
                    "green dotted: heals)", fontsize=FONT_PT + 1)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[m]) for m in members]
    handles += [plt.Rectangle((0, 0), 1, 1, color=c) for c in _STATE_COLOURS.values()]
    axes.legend(handles, [f"owner {m}" for m in members] + list(_STATE_COLOURS), fontsize=FONT_PT,
                loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fault_axes.set_title(title, fontsize=FONT_PT + 2)
    # The lanes depend on the axes' width in pixels, which the layout fixes; the figure's height then
    # grows by the lanes, which moves nothing sideways.
    figure.tight_layout()
    lanes = _place_fault_labels(figure, fault_axes, fault_labels)
    lanes_in = LANE_IN * max(1, lanes)
    grid.set_height_ratios([lanes_in, rows_in])
    figure.set_size_inches(12, rows_in + lanes_in + 1.6)
    figure.tight_layout()
    _place_fault_labels(figure, fault_axes, fault_labels)
    _drop_crowded(figure, generation_labels)
    return figure


def _drop_crowded(figure, labels) -> None:
    """Hide each generation label that would touch the one before it (short Stable bands): the band is
    still drawn."""
    renderer = figure.canvas.get_renderer()
    last_right = float("-inf")
    for text in sorted(labels, key=lambda t: t.get_position()[0]):
        box = text.get_window_extent(renderer)
        if box.x0 < last_right + LABEL_GAP_PX:
            text.set_visible(False)
        else:
            last_right = box.x1


def _png(history: History, end_ms: Optional[int], title: str) -> bytes:
    plt = pyplot()
    figure = timeline_figure(history, end_ms, title)
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI)
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
