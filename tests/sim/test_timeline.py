"""Timelines: a PNG and a self-contained HTML page, one row per partition."""
import pytest

from kgroup.cli import main
from kgroup.sim.history import FaultApplied, History, OwnershipChanged
from kgroup.sim.timeline import pyplot, timeline_figure, write_timeline
from kgroup.values import TopicPartition

from sim_histories import hand_made_history as _history


def test_png_and_html_are_written_and_well_formed(tmp_path):
    png, page = tmp_path / "run.png", tmp_path / "run.html"
    write_timeline(_history(), str(png), 2_000, "hand-made")
    write_timeline(_history(), str(page), 2_000, "hand-made")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
    assert text.count('<tr class="partition">') == 2 and text.count('<tr class="member">') == 2
    assert "src=\"http" not in text and "<link" not in text  # no external assets
    with pytest.raises(ValueError):
        write_timeline(_history(), str(tmp_path / "run.svg"))


def test_simulate_writes_the_timeline(tmp_path, capsys):
    page = tmp_path / "seed2.html"
    quick = ["--members", "2", "--partitions", "3", "--duration-ms", "4000", "--faults", "none"]
    assert main(["simulate", "--seed", "2", *quick, "--timeline", str(page)]) == 0
    assert page.read_text().count('<tr class="partition">') == 3
    assert f"timeline: {page}" in capsys.readouterr().out


QUICK = ["--members", "2", "--partitions", "3", "--duration-ms", "4000", "--faults", "none"]


def test_simulate_says_that_no_timeline_was_written_and_how_to_get_one(capsys):
    assert main(["simulate", "--seed", "2", *QUICK]) == 0
    assert "timeline: none written (--timeline run.png draws one, --timeline run.html a page)" in (
        capsys.readouterr().out)


@pytest.mark.parametrize("where, problem", [
    ("missing/run.png", "no folder"), ("file/run.png", "no folder"), ("run.svg", "must end in .png or .html"),
    ("folder.png", "is a folder")])
def test_the_timeline_path_is_checked_before_the_run(tmp_path, capsys, where, problem):
    (tmp_path / "file").write_text("not a folder")
    (tmp_path / "folder.png").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--seed", "2", *QUICK, "--timeline", str(tmp_path / where)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert f"error: argument --timeline: {tmp_path / where}" in captured.err and problem in captured.err


@pytest.mark.parametrize("where", ["file", "file/report"])
def test_the_comparison_folder_is_checked_before_the_runs(tmp_path, capsys, where):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "--seeds", "1", "--out", str(tmp_path / where)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "error: argument --out: " in captured.err
    assert f"{tmp_path / 'file'} is a file, not a folder" in captured.err


def _crowded_history(partitions=12, members=5, faults=8):
    """The default group (12 partitions, 5 members) with 8 faults, six of them within 1.5 s: the worst
    case for their labels."""
    history = History()
    tps = [TopicPartition("events", p) for p in range(partitions)]
    names = [f"m{i}" for i in range(members)]
    for index, name in enumerate(names):
        history.record(OwnershipChanged(100, name, f"{name}-id", 1, "STABLE",
                                        frozenset(tps[index::members]), True))
    times = [2_000, 2_200, 2_450, 2_700, 3_000, 3_300, 30_000, 59_800][:faults]
    kinds = ["partition m0-b1 for 900 ms", "crash m1 for 700 ms", "kill_broker b2 for 800 ms",
             "slow_follower b3 for 1000 ms", "move_coordinator group for 2000 ms", "leave m2 for 500 ms",
             "lossy m3-b1 for 300 ms value 60", "resubscribe m4 for 400 ms"]
    for at_ms, fault in zip(times, kinds):
        history.record(FaultApplied(at_ms, fault))
        history.record(FaultApplied(at_ms + 150, "heal " + fault))
    for index, name in enumerate(names):
        history.record(OwnershipChanged(4_000 + 300 * index, name, f"{name}-id", 2, "STABLE",
                                        frozenset(tps[index::members]), True))
    return history


def _drawn_texts(figure):
    """Every text the PNG shows: labels, titles, tick labels inside the view, legend entries."""
    texts = []
    for axes in figure.axes:
        texts += [t for t in axes.texts if t.get_visible()]
        texts += [axes.title, axes.xaxis.label, axes.yaxis.label]
        for axis, limits in ((axes.xaxis, axes.get_xlim()), (axes.yaxis, axes.get_ylim())):
            for location, tick in zip(axis.get_majorticklocs(), axis.get_major_ticks()):
                if min(limits) <= location <= max(limits) and tick.label1.get_visible():
                    texts.append(tick.label1)
        if axes.get_legend() is not None:
            texts += axes.get_legend().get_texts()
    return [t for t in texts if t.get_text().strip()]


def _intersect(a, b) -> bool:
    """Boxes that share an area (touching edges are fine)."""
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("history", [_crowded_history(), _history()], ids=["crowded", "hand-made"])
def test_no_label_of_the_png_overlaps_another_and_every_text_is_at_least_8_pt(history):
    figure = timeline_figure(history, 60_000, "seed 7, cooperative-sticky static")
    try:
        figure.canvas.draw()  # tick labels take their places at drawing time
        renderer = figure.canvas.get_renderer()
        texts = _drawn_texts(figure)
        faults = [t for t in texts if t.get_color() == "#c62828"]
        assert len(faults) == len([f for f in history.of(FaultApplied) if not f.fault.startswith("heal")])
        boxes = {id(t): t.get_window_extent(renderer) for t in texts}
        figure_box = figure.bbox
        clashes = [(a.get_text(), b.get_text()) for i, a in enumerate(texts) for b in texts[i + 1:]
                   if _intersect(boxes[id(a)], boxes[id(b)])]
        assert clashes == []
        for text in texts:
            box = boxes[id(text)]
            assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1, text.get_text()
            assert figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1, text.get_text()
            assert text.get_fontsize() >= 8, text.get_text()
    finally:
        pyplot().close(figure)
