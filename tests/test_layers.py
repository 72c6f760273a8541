"""Layers only point down (issue 25, point 2), checked by import-linter's contract in setup.cfg.

The contract names every layer top to bottom; these tests run ``lint-imports`` on the tree, show on a
copy with one upward import planted that the check can fail, and make sure every top-level module and
core base module has a place in the contract (a new one must be put in a layer, not slip past it).
"""
from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    # The module, not the console script: a non-activated environment has no lint-imports on PATH.
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([sys.executable, "-c", code, "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _layer_modules() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    layers = config["importlinter:contract:layers"]["layers"]
    return {name.strip() for line in layers.splitlines() for name in line.replace("|", ":").split(":")
            if name.strip()}


def test_every_import_points_down_a_layer():
    completed = _lint_imports(ROOT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 kept, 0 broken" in completed.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    for package in ("kgroup", "kgroup_spark"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "setup.cfg", tmp_path / "setup.cfg")
    with open(tmp_path / "kgroup" / "core" / "fsm.py", "a") as fsm:
        fsm.write("\n\ndef _upward():\n    import kgroup.server  # noqa: F401\n")
    completed = _lint_imports(tmp_path)
    assert completed.returncode != 0
    assert "kgroup.core.fsm -> kgroup.server" in completed.stdout


@pytest.mark.parametrize("folder,prefix", [("kgroup", "kgroup."), ("kgroup/core", "kgroup.core.")])
def test_every_module_has_a_layer(folder, prefix):
    placed = _layer_modules()
    # The package roots themselves only re-export; errors and values are the bottom layer.
    unplaced = []
    for entry in sorted((ROOT / folder).iterdir()):
        name = entry.stem if entry.suffix == ".py" else entry.name
        if name.startswith("__") or not (entry.suffix == ".py" or (entry / "__init__.py").exists()):
            continue
        if folder == "kgroup" and name == "core":
            continue  # its subpackages and base modules are placed one by one
        if prefix + name not in placed:
            unplaced.append(prefix + name)
    assert unplaced == []
