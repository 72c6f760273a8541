"""Timelines: a PNG and a self-contained HTML page, one row per partition."""
import pytest

from kgroup.cli import main
from kgroup.sim.timeline import write_timeline

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
    assert page.read_text().count('<tr class="partition">') == 3 and "timeline:" in capsys.readouterr().out
    assert main(["simulate", "--seed", "2", *quick, "--timeline", str(tmp_path / "x.txt")]) == 2
